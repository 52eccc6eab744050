"""``EspNNTester``: ExecuTorch's backend-test ``Tester`` for the ESP-NN delegate.

The stages are the ones a user of ``executorch_espnn.lower()`` goes through:

=========================  ==========================================================
stage                      what it does here
=========================  ==========================================================
Quantize                   ``executorch_espnn.quantize`` with ``EspNNQuantizer``,
                           calibrated on the test's example inputs (as ExecuTorch's
                           own quantized flows calibrate)
Export                     ``torch.export`` of the converted model (non-strict, as
                           ``lower()`` does); its output is the fake-quantized
                           reference the suite compares against
ToEdgeTransformAndLower    ``EspNNPartitioner``; the partitioner's per-operator
                           decisions (delegated, or CPU with a reason) are recorded
ToExecutorch, Serialize    ExecuTorch's stages; ``Serialize`` runs the ``.pte``
                           through ``executorch_espnn.host.run`` (the Python runtime
                           with our delegate library loaded, CPU parts on
                           ExecuTorch's portable and quantized kernels)
=========================  ==========================================================

``run_method_and_compare_outputs`` replaces the suite's fixed float tolerance with the
criterion in ``executorch_espnn.testing.compare`` (<= 1 LSB of the output quantization,
exact top-1 where meaningful) and records the verdict in ``tester.record``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from executorch.backends.test.harness import Tester
from executorch.backends.test.harness.error_statistics import ErrorStatistics
from executorch.backends.test.harness.stages import (
    Export,
    Quantize,
    Serialize,
    StageType,
    ToEdgeTransformAndLower,
)
from executorch.exir import EdgeCompileConfig, to_edge_transform_and_lower
from torch.export import ExportedProgram
from torch.fx import Node
from torch.utils._pytree import tree_flatten

from ..cia_ops_cache import cached_cia_ops
from ..decisions import OpDecision
from ..graph.names import node_op
from .compare import OutputCheck, OutputQuant, check_outputs

DEFAULT_TARGET = "esp32s3"

_DEQUANTIZE_PER_TENSOR = {
    "quantized_decomposed.dequantize_per_tensor.default",
    "quantized_decomposed.dequantize_per_tensor.tensor",
}
_QUANTIZE_PER_TENSOR = {
    "quantized_decomposed.quantize_per_tensor.default",
    "quantized_decomposed.quantize_per_tensor.tensor",
}
_SOFTMAX = {"aten.softmax.int", "aten._softmax.default"}


@dataclass
class SubtestRecord:
    """What happened to one model of a test (one ``lower_and_run_model`` call)."""

    target: str
    decisions: list[OpDecision] = field(default_factory=list)
    checks: list[OutputCheck] = field(default_factory=list)
    compared: bool = False
    # CPU operators of the program that no kernel library in this process implements
    missing_kernels: list[str] = field(default_factory=list)

    @property
    def delegated_ops(self) -> list[str]:
        return [d.op for d in self.decisions if d.delegated]

    @property
    def cpu_ops(self) -> list[OpDecision]:
        """Operators other than quantize/dequantize left on the CPU (each with its reason)."""
        return [d for d in self.decisions if not d.delegated and not _is_qdq_name(d.op)]

    @property
    def cpu_qdq(self) -> list[OpDecision]:
        return [d for d in self.decisions if not d.delegated and _is_qdq_name(d.op)]

    @property
    def matched(self) -> bool:
        return self.compared and all(c.ok for c in self.checks)

    @property
    def delegation(self) -> str:
        """"delegated" (no operator left on the CPU), "partial" or "fallback" (none delegated)."""
        if not self.delegated_ops:
            return "fallback"
        return "partial" if self.cpu_ops else "delegated"


def _is_qdq_name(op: str) -> bool:
    return op.startswith("quantized_decomposed.")


def output_quantization(program: ExportedProgram) -> list[OutputQuant]:
    """For each output of the fake-quantized ``program``: the dequantize that produces it."""
    depth: dict[Node, int] = {}
    for n in program.graph.nodes:  # topological order
        here = max((depth[a] for a in n.all_input_nodes), default=0)
        depth[n] = here + (1 if n.op == "call_function" and node_op(n) in _QUANTIZE_PER_TENSOR else 0)
    out_node = program.graph.output_node()
    outs = out_node.args[0]
    flat = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    quants: list[OutputQuant] = []
    for o in flat:
        if not (isinstance(o, Node) and o.op == "call_function" and node_op(o) in _DEQUANTIZE_PER_TENSOR):
            quants.append(OutputQuant(None, None))
            continue
        scale: Any = _constant(program, o.args[1])
        zp: Any = _constant(program, o.args[2])
        softmax_dim: int | None = None
        q = o.args[0]
        if isinstance(q, Node) and node_op(q) in _QUANTIZE_PER_TENSOR:
            src = q.args[0]
            if isinstance(src, Node) and node_op(src) in _SOFTMAX:
                softmax_dim = int(src.args[1])  # type: ignore[arg-type]
        quants.append(OutputQuant(float(scale), int(zp), softmax_dim, depth[o]))
    return quants


def _constant(program: ExportedProgram, node: object) -> object:
    if not isinstance(node, Node):
        return node
    sig = program.graph_signature
    name = sig.inputs_to_buffers.get(node.name) or sig.inputs_to_lifted_tensor_constants.get(node.name)
    if name is None:
        raise ValueError(f"output quantization parameter {node.name} is not a constant")
    table = program.state_dict if name in program.state_dict else program.constants
    return table[name].item()


class EspNNQuantize(Quantize):  # type: ignore[misc]  # executorch is untyped
    """``executorch_espnn.quantize`` (EspNNQuantizer), calibrated on the example inputs."""

    def __init__(self, calibration_samples: Sequence[tuple[Any, ...]] | None = None) -> None:
        from ..quantizer import EspNNQuantizer

        super().__init__(quantizer=EspNNQuantizer(), calibration_samples=calibration_samples)

    def run(self, artifact: torch.nn.Module, inputs: tuple[Any, ...] | None) -> None:
        from ..quantizer import quantize

        assert inputs is not None
        samples = self.calibration_samples if self.calibration_samples is not None else [tuple(inputs)]
        result = quantize(artifact, tuple(inputs), calibration=list(samples), quantizer=self.quantizer)
        self.converted_graph = result.graph_module


class EspNNExport(Export):  # type: ignore[misc]
    """``torch.export`` as ``executorch_espnn.lower()`` does it (non-strict)."""

    @cached_cia_ops()
    def run(self, artifact: torch.nn.Module, inputs: tuple[Any, ...]) -> None:
        self.exported_program = torch.export.export(
            artifact, tuple(inputs), dynamic_shapes=self.dynamic_shapes
        )


class EspNNToEdgeTransformAndLower(ToEdgeTransformAndLower):  # type: ignore[misc]
    """``to_edge_transform_and_lower`` with a fresh ``EspNNPartitioner``, whose decisions
    are kept in ``self.decisions``."""

    def __init__(self, target: str = DEFAULT_TARGET, **options: Any) -> None:
        # the suite's default edge config (IR validity unchecked), as every flow uses: a
        # non-core ATen operator then reaches the runner's "unsupported portable op" skip
        # instead of failing the verifier
        super().__init__(partitioners=[], edge_compile_config=EdgeCompileConfig(_check_ir_validity=False))
        self.target = target
        self.options = options
        self.decisions: list[OpDecision] = []

    @cached_cia_ops()  # to_edge decomposes more than once: one CIA-op walk (cia_ops_cache)
    def run(self, artifact: ExportedProgram, inputs: object = None, generate_etrecord: bool = False) -> None:
        from ..backend import EspNNDelegateBackend  # noqa: F401  (registers the backend by class name)
        from ..partitioner import EspNNPartitioner

        partitioner = EspNNPartitioner(target=self.target, **self.options)
        self.partitioners = [partitioner]
        self.edge_dialect_program = to_edge_transform_and_lower(
            artifact,
            compile_config=self.edge_compile_conf,
            partitioner=[partitioner],
            generate_etrecord=generate_etrecord,
        )
        self.decisions = list(partitioner.decisions)
        # quantize/dequantize left on the CPU need their out variants for to_executorch
        import executorch.kernels.quantized  # noqa: F401


def missing_cpu_kernels(pte: bytes) -> list[str]:
    """The program's CPU operators that no kernel registered in this process implements
    (ExecuTorch's portable and quantized kernels; the suite's own list of such operators,
    ``UNSUPPORTED_PORTABLE_OPS``, is incomplete)."""
    from executorch.extension.pybindings.portable_lib import _get_operator_names

    from ..pte import read_program

    registered = set(_get_operator_names())
    used = {k.op for k in read_program(pte).kernel_calls}
    return sorted(used - registered)


class EspNNSerialize(Serialize):  # type: ignore[misc]
    """ExecuTorch's Serialize stage; runs the program with ``executorch_espnn.host.run``."""

    def run_artifact(self, inputs: Any) -> list[torch.Tensor]:
        from .. import host

        flat, _ = tree_flatten(inputs)
        return [torch.from_numpy(o) for o in host.run(bytes(self.buffer), flat)]


def stage_classes(target: str = DEFAULT_TARGET) -> dict[StageType, Callable[..., Any]]:
    def lower_stage(*args: Any, **kwargs: Any) -> EspNNToEdgeTransformAndLower:
        return EspNNToEdgeTransformAndLower(target, *args, **kwargs)

    return dict(Tester.default_stage_classes()) | {
        StageType.QUANTIZE: EspNNQuantize,
        StageType.EXPORT: EspNNExport,
        StageType.TO_EDGE_TRANSFORM_AND_LOWER: lower_stage,
        StageType.SERIALIZE: EspNNSerialize,
    }


class EspNNTester(Tester):  # type: ignore[misc]
    """A ``Tester`` for ``EspNNDelegateBackend``; ``record`` holds the partitioner's
    decisions and the output verdicts once the test ran."""

    __test__ = False

    def __init__(
        self,
        module: torch.nn.Module,
        example_inputs: tuple[torch.Tensor, ...],
        dynamic_shapes: tuple[Any, ...] | None = None,
        target: str = DEFAULT_TARGET,
    ) -> None:
        super().__init__(module, example_inputs, stage_classes(target), dynamic_shapes=dynamic_shapes)
        self.record = SubtestRecord(target)

    def to_edge_transform_and_lower(
        self, to_edge_and_transform_stage: ToEdgeTransformAndLower | None = None,
        generate_etrecord: bool = False,
    ) -> EspNNTester:
        super().to_edge_transform_and_lower(to_edge_and_transform_stage, generate_etrecord)
        stage = self.stages[StageType.TO_EDGE_TRANSFORM_AND_LOWER]
        if isinstance(stage, EspNNToEdgeTransformAndLower):
            self.record.decisions = stage.decisions
        return self

    def run_method_and_compare_outputs(
        self,
        stage: StageType | None = None,
        inputs: tuple[torch.Tensor, ...] | None = None,
        num_runs: int = 1,
        atol: float = 1e-03,  # the suite's float tolerances are replaced by compare.py's
        rtol: float = 1e-03,
        qtol: int = 0,
        statistics_callback: Callable[[ErrorStatistics], None] | None = None,
        artifact_dir: str | None = None,
        artifact_name: str | None = None,
    ) -> EspNNTester:
        reference_program = self.stages[StageType.EXPORT].artifact
        quants = output_quantization(reference_program)
        stage = stage or self.cur
        if stage == StageType.SERIALIZE:
            missing = missing_cpu_kernels(bytes(self.stages[stage].artifact))
            self.record.missing_kernels = missing
            if missing:
                import pytest

                # the suite's own rule (runner.py skips programs whose CPU part uses an
                # operator the portable kernels lack), with the real kernel registry
                pytest.skip(
                    f"the CPU part of the program uses {missing}, which ExecuTorch's portable "
                    "kernels do not implement (the partitioner left them on the CPU: "
                    + "; ".join(f"{d.op}: {d.reason}" for d in self.record.cpu_ops)[:300] + ")"
                )
        runs = 1 if inputs is not None else num_runs
        checks: list[OutputCheck] = []
        for _ in range(runs):
            run_inputs = inputs if inputs else next(self.generate_random_inputs())
            reference = reference_program.module()(*run_inputs)
            ref_flat, _ = tree_flatten(reference)
            actual = self.stages[stage].run_artifact(run_inputs)
            act_flat, _ = tree_flatten(actual)
            if statistics_callback is not None:
                for a, r in zip(act_flat, ref_flat, strict=False):
                    if isinstance(a, torch.Tensor) and isinstance(r, torch.Tensor) and a.shape == r.shape:
                        statistics_callback(ErrorStatistics.from_tensors(a, r))
            checks = check_outputs(act_flat, ref_flat, quants)
            self.record.checks = checks
            self.record.compared = True
            bad = [c.problem for c in checks if not c.ok]
            if bad:
                raise AssertionError("; ".join(bad))
        return self

