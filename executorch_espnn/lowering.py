"""``lower()``: a PyTorch model to an ExecuTorch program with ESP-NN delegates, in one call.

    torch.export  ->  quantize (EspNNQuantizer, calibration)  ->
    to_edge_transform_and_lower(partitioner=[EspNNPartitioner])  ->  to_executorch()

The result carries the ``.pte`` bytes, the report derived from them, and the time spent in
each stage.
"""

from __future__ import annotations

import contextlib
import io
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .cia_ops_cache import cached_cia_ops
from .errors import EspNNError, ExportError, LoweringError, UnsupportedTargetError
from .payload.format import Target
from .report import LoweringReport, TensorSpec, build_report

if TYPE_CHECKING:
    import torch
    from executorch.exir import EdgeProgramManager
    from torch.export import ExportedProgram

    from .accuracy import AccuracyReport
    from .modelfile import ValidationData
    from .partitioner import EspNNPartitioner
    from .profile_table import ProfileTable
    from .quantizer import EspNNQuantizer
    from .selftest import SelfTest

TARGETS: tuple[str, ...] = tuple(t.name.lower() for t in Target)
STAGES = ("export", "quantize", "partition", "to_executorch")
_STAGE_TITLES = {
    "export": "export",
    "quantize": "quantize + calibrate",
    "partition": "partition + preprocess",
    "to_executorch": "to_executorch",
}

Progress = Callable[[str], None]


def check_target(target: str) -> str:
    """The canonical target name, or UnsupportedTargetError listing the valid ones."""
    try:
        return Target.parse(target).name.lower()
    except (ValueError, AttributeError):
        raise UnsupportedTargetError(
            f"unknown target {target!r}; choose one of: {', '.join(TARGETS)}"
        ) from None


@dataclass(frozen=True)
class StageTimings:
    """Seconds spent in each lowering stage (0.0 for a stage that was skipped)."""

    export: float = 0.0
    quantize: float = 0.0  # prepare + calibrate + convert (+ the quantized program's export)
    partition: float = 0.0  # to_edge_transform_and_lower: partitioning and preprocess
    to_executorch: float = 0.0

    @property
    def total(self) -> float:
        return self.export + self.quantize + self.partition + self.to_executorch

    def as_dict(self) -> dict[str, float]:
        return {s: getattr(self, s) for s in STAGES}


@dataclass
class LoweredModel:
    pte: bytes
    report: LoweringReport
    timings: StageTimings
    # the quantized program that was lowered (q/dq ops, float I/O): what the delegate's
    # arithmetic is compared against; None when not kept
    quantized_program: ExportedProgram | None = None
    # lower(..., selftest=N): N inputs and the outputs the firmware must produce for them
    selftest: SelfTest | None = None
    # lower(..., validation=...): float vs PT2E vs the delegate on the validation data (also
    # report.accuracy)
    accuracy: AccuracyReport | None = None
    # lower(..., profile=True): the layer table EspnnModel::profile() prints against (also
    # report.profile)
    profile: ProfileTable | None = None

    @property
    def inputs(self) -> list[TensorSpec]:
        """Program inputs: names, shapes, dtypes and, when the delegate or a CPU kernel
        quantizes them, the int8 side's scale and zero point."""
        return self.report.inputs

    @property
    def outputs(self) -> list[TensorSpec]:
        return self.report.outputs

    def save(self, path: str | Path) -> Path:
        """Write the .pte (creating parent directories); returns the path."""
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(self.pte)
        return p


def write_selected_operators(pte: bytes, path: str | Path) -> Path:
    """Write ``selected_operators.yaml`` for ExecuTorch's selective build: the CPU operators
    the program calls (delegated work needs none), with their dtype-specialised kernel keys.
    Produced by ExecuTorch's own ``gen_oplist`` from the program bytes."""
    from executorch.codegen.tools.gen_oplist import gen_oplist

    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as d:
        pte_path = Path(d) / "model.pte"
        pte_path.write_bytes(pte)
        try:
            with contextlib.redirect_stdout(io.StringIO()):  # gen_oplist narrates on stdout
                gen_oplist(output_path=str(out), model_file_path=str(pte_path))
        except Exception as exc:
            raise LoweringError(f"writing {out} failed: {type(exc).__name__}: {exc}") from exc
        # gen_oplist records the model's path as debug info: keep the file independent of
        # the temporary directory so that the same program gives the same bytes
        text = out.read_text(encoding="utf-8")
        out.write_text(text.replace(str(pte_path), pte_path.name), encoding="utf-8")
    return out


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__


def _is_quantized(ep: ExportedProgram) -> bool:
    return any(
        n.op == "call_function" and "quantized_decomposed" in str(n.target) for n in ep.graph.nodes
    )


@cached_cia_ops()  # torch's CIA-op walk once per lowering, not once per decomposition
def lower(
    model: torch.nn.Module | ExportedProgram,
    example_inputs: tuple[Any, ...] | None = None,
    calibration: Iterable[Any] | None = None,
    target: str = "esp32s3",
    strict: bool = False,
    *,
    quantizer: EspNNQuantizer | None = None,
    progress: Progress | None = None,
    selftest: int = 0,
    validation: Iterable[Any] | ValidationData | None = None,
    io: str = "float",
    optimize: str = "speed",
    profile: bool = False,
    io_arena: bool = True,
    input_layout: str = "nchw",
) -> LoweredModel:
    """Lower ``model`` for ``target`` and return the program, its report and stage timings.

    ``model`` is an ``nn.Module`` or an ``ExportedProgram`` (e.g. ``torch.export.load`` of a
    .pt2, whose example inputs are used when ``example_inputs`` is None).  A model that is
    already quantized (``convert_qat()`` after quantization-aware training, or the user's own
    ``prepare_pt2e``/``convert_pt2e``) skips quantization; a scheme ESP-NN cannot execute
    (dynamic, not int8, weights below 8 bits) raises ``QuantizerConfigError``.  ``calibration`` yields input tuples shaped like
    ``example_inputs``; without it the model is calibrated on random data and the report
    warns.  ``strict=True`` raises ``StrictModeError`` naming every operator that would stay
    on the CPU.  ``progress`` receives one line as each stage starts and ends.

    ``selftest=N`` (0 to 64) keeps N inputs with the outputs the firmware must produce for
    them in ``LoweredModel.selftest`` (the build embeds them for ``EspnnModel::self_test()``):
    the first N samples of ``validation`` (held-out input tuples, or a ``ValidationData``),
    else of ``calibration``, else seeded random inputs; the expected outputs come from the
    Python reference of the delegate and PyTorch for CPU operators, never from the C engine.

    ``validation`` (held-out input tuples, or a ``ValidationData`` with optional labels) also
    measures accuracy: per output, the float model vs the PT2E quantized model vs the
    delegate's exact int8 result, and each delegated layer's error (``LoweredModel.accuracy``,
    the report's accuracy section; see executorch_espnn.accuracy).

    ``io="int8"`` makes the program take and return the int8 values of the delegate's quantized
    side (scale and zero point in ``LoweredModel.inputs``/``outputs``) instead of float32: the
    planned memory holds int8 I/O, and the delegate reads and writes it in place when its layout
    allows (see executorch_espnn.program_io).  An input or output with no int8 form raises
    ``LoweringError`` naming it.

    ``optimize="ram"`` picks, wherever an ESP32-S3/P4 convolution kernel's scratch sets a
    partition's arena peak, ESP-NN's ANSI kernel, which needs none (same int8 results, slower;
    the report's "RAM-first kernels" lists each op and the bytes saved); ``"speed"`` (the
    default) keeps the fastest kernels.  See executorch_espnn.kernel_choice.
    ``profile=True`` adds the layer table of a profiling build (``LoweredModel.profile``, the
    report's ``profile``): each delegated op with the report's layer name and source location,
    and the CPU operators between the delegates, for ``EspnnModel::profile()``.  The program's
    bytes are the same with and without it: profiling is the firmware's compile-time switch.

    ``io_arena=True`` (the default) places the program's inputs and outputs in the delegate
    arena when every input is read by the first delegate call only and every output comes from
    the last one: planned like activations, an input's bytes are reused once it is consumed, and
    ExecuTorch plans no memory for them (executorch_espnn.io_arena).  ``False`` keeps them in
    ExecuTorch's planned memory (what several models sharing one arena, and models loaded from
    a partition, need: their I/O must outlive the other models' runs).
    """
    from .input_layout import check_input_layout
    from .kernel_choice import check_optimize
    from .program_io import check_io
    from .selftest import check_count

    io_kind = check_io(io)
    optimize = check_optimize(optimize)
    layout = check_input_layout(input_layout)
    tgt = check_target(target)
    n_selftest = check_count(selftest)
    stages = _Stages(progress or (lambda _msg: None))
    nhwc_inputs: list[int] = []
    names: list[str] | None = None
    if layout == "nhwc":
        model, example_inputs, calibration, validation, nhwc_inputs, names = _channels_last(
            model, example_inputs, calibration, validation)

    ep, example_inputs = _export_stage(stages, model, example_inputs)
    input_names = names or list(ep.graph_signature.user_inputs)
    val = _validation_data(validation, example_inputs)  # checked before any lowering work
    samples: tuple[list[tuple[Any, ...]], str] | None = None
    if n_selftest:
        if calibration is not None and not isinstance(calibration, Sequence):
            calibration = list(calibration)  # read twice: calibration, then the self-test samples
        samples = _selftest_samples(n_selftest, example_inputs, val, calibration)

    already_quantized = _is_quantized(ep)
    qep, calibrated = _quantize_stage(stages, model, ep, example_inputs, calibration, quantizer,
                                      already_quantized)
    partitioner, edge = _partition_stage(stages, qep, tgt, strict, int8_io=io_kind == "int8",
                                         optimize=optimize, nhwc_inputs=nhwc_inputs)
    table = None
    if profile:  # (before to_executorch(), whose passes rewrite the graph in place)
        from .profile_table import build_table

        table = build_table(edge.exported_program(), partitioner.decisions)

    accuracy = None
    if val is not None:  # (on the float-I/O program: int8 I/O only drops the boundary q/dq)
        accuracy = _accuracy(stages, val, None if already_quantized else ep, qep, edge)
    if io_kind == "int8":
        from .program_io import quantize_io

        edge = quantize_io(edge)
        stages.say("int8 program I/O: the boundary quantize/dequantize removed (ExecuTorch's "
                   "QuantizeInputs/QuantizeOutputs)")
    selftest_io = None
    if samples is not None:
        # before to_executorch(): its passes rewrite the edge program's graph in place
        selftest_io = _selftest_reference(edge.exported_program(), qep, samples, input_names, stages.say,
                                          int8_inputs=io_kind == "int8")

    pte = _to_executorch_stage(stages, edge, io_arena)
    timings = StageTimings(**stages.times)
    report = build_report(
        pte,
        decisions=partitioner.decisions,
        partition_starts=partitioner.partition_starts,
        target=tgt,
        calibrated=calibrated,
        input_names=input_names,
        timings=timings.as_dict(),
        accuracy=accuracy,
        profile=None if table is None else table.to_dict(),
    )
    st = None
    if selftest_io is not None:
        from .selftest import build as build_selftest

        source, stored, outputs = selftest_io
        st = build_selftest(source, stored, outputs, report.outputs)
    return LoweredModel(pte, report, timings, qep, st, accuracy, table)


def _channels_last(
    model: torch.nn.Module | ExportedProgram,
    example_inputs: tuple[Any, ...] | None,
    calibration: Iterable[Any] | None,
    validation: Iterable[Any] | ValidationData | None,
) -> tuple[torch.nn.Module, tuple[Any, ...], Iterable[Any] | None, Iterable[Any] | ValidationData | None,
           list[int], list[str] | None]:
    """input_layout="nhwc": the model wrapped to take its 4-D inputs channels-last, and the
    caller's NCHW data transposed to match (executorch_espnn.input_layout)."""
    import torch

    from .input_layout import image_inputs, input_names, samples_to_nhwc, to_nhwc, wrap
    from .modelfile import ValidationData

    if example_inputs is None and isinstance(model, torch.export.ExportedProgram) \
            and model.example_inputs is not None:
        example_inputs = tuple(model.example_inputs[0])
    if not isinstance(example_inputs, tuple):
        raise LoweringError(
            'lower(..., input_layout="nhwc") needs example_inputs as a tuple of tensors in the model\'s '
            "own NCHW shapes, e.g. (torch.randn(1, 3, 96, 96),)"
        )
    indices = image_inputs(example_inputs)
    names = input_names(model, len(example_inputs))
    wrapped = wrap(model, indices)
    if calibration is not None:
        calibration = samples_to_nhwc(calibration, indices)
    if isinstance(validation, ValidationData):
        validation = ValidationData([to_nhwc(s, indices) for s in validation.samples], validation.labels,
                                    validation.source)
    elif validation is not None:
        validation = samples_to_nhwc(validation, indices)
    return wrapped, to_nhwc(example_inputs, indices), calibration, validation, indices, names


class _Stages:
    """The progress lines ("[i/4] stage ...", "[i/4] stage: 1.23 s") and each stage's seconds."""

    def __init__(self, say: Progress) -> None:
        self.say = say
        self.times: dict[str, float] = {}

    @contextlib.contextmanager
    def run(self, i: int, name: str, detail: str = "") -> Iterator[None]:
        self.say(f"[{i}/4] {_STAGE_TITLES[name]}{detail} ...")
        t0 = time.perf_counter()
        yield
        self.times[name] = time.perf_counter() - t0
        self.say(f"[{i}/4] {_STAGE_TITLES[name]}: {self.times[name]:.2f} s")


def _export_stage(
    stages: _Stages, model: torch.nn.Module | ExportedProgram, example_inputs: tuple[Any, ...] | None
) -> tuple[ExportedProgram, tuple[Any, ...]]:
    """1. The exported program and its example inputs (a program's own when none are given)."""
    import torch

    if isinstance(model, torch.export.ExportedProgram):
        if example_inputs is None:
            if model.example_inputs is None:
                raise LoweringError(
                    "the ExportedProgram carries no example inputs; pass example_inputs= to lower()"
                )
            example_inputs = tuple(model.example_inputs[0])
        with stages.run(1, "export", " (already exported)"):
            pass
        return model, example_inputs
    if not isinstance(model, torch.nn.Module):
        raise LoweringError(
            f"lower() takes a torch.nn.Module or a torch.export.ExportedProgram, got {type(model).__name__}"
        )
    if example_inputs is None:
        raise LoweringError(
            "lower() needs example_inputs for an nn.Module: a tuple of tensors, e.g. (torch.randn(1, 3, 96, 96),)"
        )
    if not isinstance(example_inputs, tuple):
        raise LoweringError(
            f"example_inputs must be a tuple of tensors, got {type(example_inputs).__name__}; "
            "wrap a single tensor as (x,)"
        )
    from .quantizer.workflow import export_model

    with stages.run(1, "export", f" {type(model).__name__}"):
        ep = export_model(model, example_inputs)
    return ep, example_inputs


def _quantize_stage(
    stages: _Stages,
    model: torch.nn.Module | ExportedProgram,
    ep: ExportedProgram,
    example_inputs: tuple[Any, ...],
    calibration: Iterable[Any] | None,
    quantizer: EspNNQuantizer | None,
    already_quantized: bool,
) -> tuple[ExportedProgram, bool | None]:
    """2. The quantized program, and whether it was calibrated on real data (None: the model
    came quantized)."""
    import torch

    if already_quantized:
        from .quantizer.scheme import check_quantized_scheme

        with stages.run(2, "quantize", " (already quantized: skipped)"):
            check_quantized_scheme(ep)  # one clear error for a scheme the delegate cannot run
        return ep, None
    from .quantizer import quantize

    detail = "" if calibration is not None else " (no calibration data: random inputs)"
    with stages.run(2, "quantize", detail):
        # the program of stage 1 goes in as it is: quantize() would otherwise export it again
        q = quantize(ep, example_inputs, calibration, quantizer,
                     exported_in_eval_mode=isinstance(model, torch.nn.Module))
        try:
            qep = torch.export.export(q.graph_module, example_inputs)
        except Exception as exc:
            raise ExportError(f"exporting the quantized model failed: {_first_line(exc)}") from exc
    return qep, q.calibrated


def _partition_stage(
    stages: _Stages, qep: ExportedProgram, target: str, strict: bool, *, int8_io: bool,
    optimize: str = "speed", nhwc_inputs: Sequence[int] = (),
) -> tuple[EspNNPartitioner, EdgeProgramManager]:
    """3. The edge program with the ESP-NN delegates, and the partitioner's decisions.
    ``nhwc_inputs`` rides in the delegates' compile spec: the .pte records its layout."""
    from executorch.exir import to_edge_transform_and_lower

    from .backend import EspNNDelegateBackend  # noqa: F401  (registers the backend by class name)
    from .partitioner import EspNNPartitioner

    partitioner = EspNNPartitioner(target=target, allow_cpu_fallback=not strict, int8_io=int8_io,
                                   optimize=optimize, nhwc_inputs=tuple(nhwc_inputs))
    with stages.run(3, "partition", f" for {target}"):
        try:
            edge = to_edge_transform_and_lower(qep, partitioner=[partitioner])
        except EspNNError:
            raise
        except Exception as exc:
            raise LoweringError(f"partitioning/preprocess failed: {_first_line(exc)}") from exc
    return partitioner, edge


def _accuracy(stages: _Stages, val: ValidationData, float_program: ExportedProgram | None,
              qep: ExportedProgram, edge: EdgeProgramManager) -> AccuracyReport:
    """Float vs PT2E vs ESP-NN's bit-exact result on the validation samples."""
    from .accuracy import evaluate

    stages.say(f"accuracy: {len(val)} sample(s) of the {val.source}: float, PT2E and ESP-NN "
               "(bit-exact reference) ...")
    accuracy = evaluate(float_program, qep, edge.exported_program(), val)
    stages.say(f"accuracy: {accuracy.seconds:.2f} s")
    return accuracy


def _to_executorch_stage(stages: _Stages, edge: EdgeProgramManager, io_arena: bool) -> bytes:
    """4. The .pte bytes."""
    # quantize/dequantize left on the CPU need their out variants registered (the AOT
    # library of ExecuTorch's quantized kernels)
    import executorch.kernels.quantized  # noqa: F401

    with stages.run(4, "to_executorch"):
        try:
            if not io_arena:
                return bytes(edge.to_executorch().buffer)
            from executorch.exir import ExecutorchBackendConfig

            from .io_arena import place

            placed = place(edge)
            config = ExecutorchBackendConfig(memory_planning_pass=placed.memory_planning())
            return bytes(edge.to_executorch(config).buffer)
        except Exception as exc:
            raise LoweringError(f"to_executorch failed: {_first_line(exc)}") from exc


def _validation_data(
    validation: Iterable[Any] | ValidationData | None, example_inputs: tuple[Any, ...]
) -> ValidationData | None:
    """``validation`` as ValidationData (read once: the self-test and the accuracy use it)."""
    from .modelfile import ValidationData, check_calibration

    if validation is None or isinstance(validation, ValidationData):
        return validation
    return ValidationData(check_calibration(validation, example_inputs, "validation"))


def _selftest_samples(
    n: int,
    example_inputs: tuple[Any, ...],
    validation: ValidationData | None,
    calibration: Iterable[Any] | None,
) -> tuple[list[tuple[Any, ...]], str]:
    """The self-test's samples and where they come from (checked before any lowering work)."""
    from .modelfile import check_calibration
    from .selftest import select_samples

    val = validation.samples if validation is not None else None
    cal = None if calibration is None else check_calibration(calibration, example_inputs, "calibration")
    return select_samples(n, example_inputs, val, cal)


def _selftest_reference(
    edge_program: ExportedProgram,
    quantized: ExportedProgram,
    samples: tuple[list[tuple[Any, ...]], str],
    input_names: list[str],
    say: Progress,
    int8_inputs: bool = False,
) -> tuple[str, Any, Any]:
    """The stored inputs and reference outputs of the self-test samples (see selftest.py).
    ``int8_inputs``: the program takes the quantized inputs themselves (io="int8")."""
    from .selftest import input_quantization, quantize_samples, reference_outputs

    batches, source = samples
    t0 = time.perf_counter()
    quant = input_quantization(quantized)
    if int8_inputs:
        batches, quant = quantize_samples(batches, quant), []
    stored, outputs = reference_outputs(edge_program, batches, quant, input_names)
    say(f"selftest: {len(batches)} sample(s) from the {source} data, expected outputs by the Python "
        f"reference: {time.perf_counter() - t0:.2f} s")
    return source, stored, outputs
