"""quantize(): export → prepare → calibrate → convert, with the errors a user can act on;
prepare_qat()/convert_qat(): the quantization-aware-training pair around the user's training loop."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.fx import GraphModule
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e, prepare_qat_pt2e

from ..cia_ops_cache import cached_cia_ops
from ..errors import CalibrationError, ExportError, QuantizerConfigError
from .espnn_quantizer import EspNNQuantizer

#: Random calibration: the example inputs plus this many random batches drawn like them.
RANDOM_CALIBRATION_BATCHES = 8
RANDOM_CALIBRATION_SEED = 0

EXPORT_DOCS = "https://pytorch.org/docs/stable/export.html"


@dataclass
class QuantizeResult:
    graph_module: GraphModule  # the converted (q/dq) model, ready for torch.export + lowering
    calibrated: bool  # False: calibrated on random data, accuracy is not representative
    calibration_batches: int
    exported: torch.export.ExportedProgram  # the float model as exported


def _export_hint(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    if any(k in text for k in ("data-dependent", "DataDependent", "GuardOnDataDependent",
                               "control flow", "ConstraintViolation")):
        return ("the model branches on tensor values (data-dependent control flow); make the "
                "branch static (decide it from shapes or constructor arguments) or use torch.cond")
    if "Unsupported" in text or "not supported" in text:
        return "rewrite the unsupported construct in plain tensor operations"
    return "make forward() traceable by torch.export"


_USER_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)\n[ \t]+(\S[^\n]*)')


def _user_location(exc: BaseException) -> str:
    """Where in the user's code torch.export failed, when its message says so."""
    frames = _USER_FRAME.findall(str(exc))
    if not frames:
        return ""
    path, line, func, code = frames[-1]
    return f"\nat {Path(path).name}:{line} in {func}: {code.strip()}"


def _export(model: nn.Module, example_inputs: tuple[Any, ...]) -> torch.export.ExportedProgram:
    try:
        return torch.export.export(model, tuple(example_inputs))
    except Exception as exc:
        lines = str(exc).strip().splitlines()
        first = lines[0] if lines else type(exc).__name__
        raise ExportError(
            f"torch.export failed for {type(model).__name__}: {type(exc).__name__}: {first}"
            f"{_user_location(exc)}\nhint: {_export_hint(exc)}; see {EXPORT_DOCS}"
        ) from exc


def export_model(model: nn.Module, example_inputs: tuple[Any, ...]) -> torch.export.ExportedProgram:
    """torch.export in eval mode, mapping any failure to ExportError (the model's train/eval
    mode is restored afterwards).

    A module torch.export or PT2E made (``ExportedProgram.module()``, ``prepare_*_pt2e``,
    ``convert_pt2e``: e.g. a model quantized by the user or after QAT) refuses ``.eval()``;
    it is moved to eval mode with torchao's ``move_exported_model_to_eval`` instead (dropout
    and batch norm switch to their eval forms, in place)."""
    was_training = model.training
    try:
        model.eval()
    except NotImplementedError:
        from torchao.quantization.pt2e import move_exported_model_to_eval

        move_exported_model_to_eval(model)
        return _export(model, example_inputs)
    try:
        return _export(model, example_inputs)
    finally:
        model.train(was_training)


def _describe(x: object) -> str:
    if isinstance(x, torch.Tensor):
        return f"tensor of shape {tuple(x.shape)} and dtype {x.dtype}"
    return f"{type(x).__name__} {x!r}"[:80]


def check_batch(index: int, batch: object, example_inputs: Sequence[Any]) -> tuple[Any, ...]:
    """A calibration batch as a tuple, or CalibrationError saying what does not match."""
    if isinstance(batch, torch.Tensor):
        batch = (batch,)
    if not isinstance(batch, (tuple, list)):
        raise CalibrationError(
            f"calibration batch {index}: expected a tuple of {len(example_inputs)} input(s) "
            f"like example_inputs, got {_describe(batch)}"
        )
    if len(batch) != len(example_inputs):
        raise CalibrationError(
            f"calibration batch {index}: expected {len(example_inputs)} input(s) like "
            f"example_inputs, got {len(batch)}"
        )
    for i, (got, want) in enumerate(zip(batch, example_inputs, strict=True)):
        if isinstance(want, torch.Tensor):
            if not isinstance(got, torch.Tensor) or got.shape != want.shape or got.dtype != want.dtype:
                raise CalibrationError(
                    f"calibration batch {index}, input {i}: expected {_describe(want)}, "
                    f"got {_describe(got)}; calibration data must have exactly the example "
                    "inputs' shapes and dtypes (the model is exported with static shapes)"
                )
        elif type(got) is not type(want):
            raise CalibrationError(
                f"calibration batch {index}, input {i}: expected {_describe(want)}, got {_describe(got)}"
            )
    return tuple(batch)


def _random_like(x: Any, gen: torch.Generator) -> Any:
    """A random tensor with the shape and dtype of ``x`` and roughly its value distribution:
    floats are normal with the example's mean and std, kept inside the example's [min, max]
    (so images stay in [0, 1] and non-negative features stay non-negative); integers are
    uniform over the example's range.  Non-tensors are passed through unchanged."""
    if not isinstance(x, torch.Tensor):
        return x
    if x.numel() == 0:
        return x.clone()
    if x.dtype == torch.bool:
        return torch.randint(0, 2, x.shape, generator=gen).to(torch.bool)
    if x.dtype.is_floating_point:
        xf = x.detach().to(torch.float64)
        if not bool(torch.isfinite(xf).all()):
            return torch.randn(x.shape, generator=gen, dtype=torch.float64).to(x.dtype)
        lo, hi = float(xf.min()), float(xf.max())
        std = float(xf.std()) if xf.numel() > 1 else 0.0
        if not std > 0.0:
            return x.detach().clone()  # a constant example: nothing to vary
        r = torch.randn(x.shape, generator=gen, dtype=torch.float64) * std + float(xf.mean())
        return r.clamp(lo, hi).to(x.dtype)
    lo_i, hi_i = int(x.min()), int(x.max())
    return torch.randint(lo_i, hi_i + 1, x.shape, generator=gen, dtype=torch.int64).to(x.dtype)


def random_calibration(
    example_inputs: Sequence[Any], batches: int = RANDOM_CALIBRATION_BATCHES,
    seed: int = RANDOM_CALIBRATION_SEED,
) -> list[tuple[Any, ...]]:
    """The example inputs, then ``batches - 1`` seeded random batches drawn like them."""
    gen = torch.Generator().manual_seed(seed)
    out = [tuple(example_inputs)]
    for _ in range(batches - 1):
        out.append(tuple(_random_like(x, gen) for x in example_inputs))
    return out


def _eval_graph(ep: torch.export.ExportedProgram) -> GraphModule:
    """``ep.module()`` in eval mode: a program exported in training mode gets the eval forms
    of dropout and batch norm, as exporting its module in eval mode would give."""
    from torchao.quantization.pt2e import allow_exported_model_train_eval

    gm = ep.module()
    allow_exported_model_train_eval(gm)
    gm.eval()
    return gm


@cached_cia_ops()  # export + convert decompose several times: one CIA-op walk for all
def quantize(
    model: nn.Module | torch.export.ExportedProgram,
    example_inputs: tuple[Any, ...],
    calibration: Iterable[Any] | None = None,
    quantizer: EspNNQuantizer | None = None,
    *,
    exported_in_eval_mode: bool = False,
) -> QuantizeResult:
    """Export ``model`` (in eval mode), quantize it for ESP-NN and return the converted graph.

    ``model`` may also be the ``ExportedProgram`` of a float model: it is quantized without
    a second ``torch.export``, after its dropout and batch norms are put in eval mode, a
    graph rewrite that ``exported_in_eval_mode=True`` skips (``lower()`` passes it for the
    program its export stage made with ``export_model``, which exports in eval mode).

    ``calibration`` yields input tuples shaped like ``example_inputs``; without it the
    model is calibrated on seeded random data drawn like the example inputs and the
    result says ``calibrated=False``.
    """
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    elif isinstance(example_inputs, list):
        example_inputs = tuple(example_inputs)
    if not isinstance(example_inputs, tuple):
        raise ExportError(
            f"example_inputs must be a tuple of model inputs, got {type(example_inputs).__name__}; "
            "wrap a single tensor as (x,)"
        )
    if isinstance(calibration, torch.Tensor):
        raise CalibrationError(
            "calibration must be an iterable of input tuples (one per batch), got a single "
            f"tensor of shape {tuple(calibration.shape)}; pass e.g. [(x,) for x in batches]"
        )
    if isinstance(model, torch.export.ExportedProgram):
        exported = model
        graph = exported.module() if exported_in_eval_mode else _eval_graph(exported)
    else:
        exported = export_model(model, example_inputs)
        graph = exported.module()
    prepared = prepare_pt2e(graph, quantizer or EspNNQuantizer())

    calibrated = calibration is not None
    batches: Iterable[Any] = calibration if calibration is not None else random_calibration(example_inputs)
    count = 0
    with torch.no_grad():
        for index, raw in enumerate(batches):
            batch = check_batch(index, raw, example_inputs)
            try:
                prepared(*batch)
            except Exception as exc:
                raise CalibrationError(
                    f"calibration batch {index}: the model failed on it: {type(exc).__name__}: "
                    f"{str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
                ) from exc
            count += 1
    if count == 0:
        raise CalibrationError(
            "calibration data is empty; pass at least one batch, or calibration=None to "
            "calibrate on random data (accuracy then is not representative)"
        )
    converted = convert_pt2e(prepared)
    drop_unused_attributes(converted)
    return QuantizeResult(converted, calibrated, count, exported)


def drop_unused_attributes(gm: GraphModule) -> None:
    """Delete the float parameters/buffers convert_pt2e replaced by folded int constants.

    convert_pt2e leaves them attached to the module although no node reads them any more;
    a later torch.export would lift them as unused inputs and carry the float weights along.
    """
    used = {str(n.target) for n in gm.graph.nodes if n.op == "get_attr"}
    names = [name for name, _ in gm.named_parameters()] + [name for name, _ in gm.named_buffers()]
    for name in names:
        if name in used:
            continue
        owner_path, _, attr = name.rpartition(".")
        owner = gm.get_submodule(owner_path) if owner_path else gm
        delattr(owner, attr)
    gm.delete_all_unused_submodules()
    gm.recompile()


def prepare_qat(
    model: nn.Module,
    example_inputs: tuple[Any, ...],
    quantizer: EspNNQuantizer | None = None,
) -> GraphModule:
    """Export ``model`` in training mode and insert ESP-NN's fake quantizes
    (torchao's ``prepare_qat_pt2e`` with ``EspNNQuantizer(is_qat=True)``).

    Train the returned module with your own loop (it computes in float with int8 rounding
    simulated, gradients pass straight through), then ``convert_qat()`` it and give the
    result to ``lower()``.  Batch norms after convs train as usual and are folded at the end.
    """
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    if quantizer is None:
        quantizer = EspNNQuantizer(is_qat=True)
    elif not quantizer.is_qat:
        raise QuantizerConfigError(
            "prepare_qat() needs a QAT quantizer: pass EspNNQuantizer(is_qat=True) (or none); "
            "EspNNQuantizer() is for calibration with lower()/quantize()"
        )
    was_training = model.training
    model.train()
    try:
        exported = _export(model, tuple(example_inputs))
    finally:
        model.train(was_training)
    prepared: GraphModule = prepare_qat_pt2e(exported.module(), quantizer)
    return prepared


def convert_qat(prepared: GraphModule) -> GraphModule:
    """The trained QAT module as a quantized (q/dq) model for ``lower()``: moved to eval
    mode, fake quantizes replaced by quantize/dequantize with the learnt ranges, batch norms
    folded into their convs."""
    from torchao.quantization.pt2e import move_exported_model_to_eval

    move_exported_model_to_eval(prepared)
    converted: GraphModule = convert_pt2e(prepared)
    drop_unused_attributes(converted)
    return converted
