"""Channels-last program input (``lower(..., input_layout="nhwc")``, ``--input-layout nhwc``,
``custom_executorch_input_layout = nhwc``).

ESP-NN computes in NHWC; a PyTorch image model takes NCHW.  With the default ``nchw`` a camera's
H,W,C bytes must be transposed by the caller, and the payload transposes them back for the first
convolution.  With ``nhwc`` the program itself takes every 4-D input as [N, H, W, C]: the
lowering wraps the model as ``model(x.permute(0, 3, 1, 2).contiguous())`` before export (the
``contiguous`` keeps every stride after it what the unwrapped model had), and the payload
builder composes that permute with the order its first reader asks for (ops/movement.py,
``Permute``): a convolution's NHWC order is the input's own, so the delegate reads the program's
bytes as they are (int8 I/O: in place, no copy; float I/O: one QUANTIZE with no transpose).

The caller's data stays in the model's own NCHW terms: example inputs, calibration and
validation samples are transposed here, so the same ``model.py`` lowers either way.  What the
program takes (and the self-test stores) is NHWC; the report and model_pte.h say so
(``layout`` "NHWC").  A 4-D input whose first delegated reader is not a convolution (a flatten
then a linear layer) keeps the permute as one TRANSPOSE inside the payload (access "transposed
copy", with a report warning); an input of another rank is left as it is; C == 1 changes no
byte (only the shape reads [N, H, W, 1]).
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from .errors import LoweringError, check_choice
from .firmware.options import INPUT_LAYOUT_CHOICES

if TYPE_CHECKING:
    import torch
    from torch.export import ExportedProgram

TO_NHWC = (0, 2, 3, 1)  # NCHW sample -> the program's NHWC input
TO_NCHW = (0, 3, 1, 2)  # what the wrapper does back, inside the program


def check_input_layout(value: object) -> str:
    """``value`` as one of INPUT_LAYOUT_CHOICES, or OptionValueError naming the choices."""
    return check_choice(
        "input_layout", value, INPUT_LAYOUT_CHOICES, "unknown input layout",
        'use "nchw" (the default: 4-D inputs as the model takes them, [N, C, H, W]) or "nhwc" '
        "(4-D inputs channels-last, [N, H, W, C], e.g. camera RGB bytes, read with no transposing copy)",
    )


def image_inputs(example_inputs: Sequence[Any]) -> list[int]:
    """The indices of the 4-D floating-point inputs, the ones ``nhwc`` permutes; LoweringError
    when there is none."""
    import torch

    found = [i for i, x in enumerate(example_inputs)
             if isinstance(x, torch.Tensor) and x.dim() == 4 and x.is_floating_point()]
    if not found:
        shapes = ", ".join(str(tuple(x.shape)) if isinstance(x, torch.Tensor) else type(x).__name__
                           for x in example_inputs)
        raise LoweringError(
            f'input_layout="nhwc" needs a 4-D float image input [N, C, H, W]; this model\'s inputs are '
            f'{shapes or "none"}: lower it with input_layout="nchw" (the default)'
        )
    return found


def input_names(model: torch.nn.Module | ExportedProgram, count: int) -> list[str] | None:
    """The model's own input names (the wrapper's would read ``xs_0``, ``xs_1``, ...), or None
    when its signature does not give ``count`` positional names."""
    import torch

    if isinstance(model, torch.export.ExportedProgram):
        names = list(model.graph_signature.user_inputs)
    else:
        try:
            params = inspect.signature(model.forward).parameters.values()
        except (TypeError, ValueError):
            return None
        names = [p.name for p in params
                 if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    return [str(n) for n in names[:count]] if len(names) >= count else None


def to_nhwc(sample: Any, indices: Sequence[int]) -> Any:
    """One sample (a tuple, a list or a bare tensor, as calibration data comes) with the inputs
    at ``indices`` transposed NCHW -> NHWC; anything else is handed on untouched for the usual
    checks to name."""
    import torch

    batch = (sample,) if isinstance(sample, torch.Tensor) else sample
    if not isinstance(batch, (tuple, list)):
        return sample
    out = list(batch)
    for i in indices:
        if i < len(out) and isinstance(out[i], torch.Tensor) and out[i].dim() == 4:
            out[i] = out[i].permute(*TO_NHWC).contiguous()
    return tuple(out)


def samples_to_nhwc(samples: Iterable[Any], indices: Sequence[int]) -> Iterator[Any]:
    """``to_nhwc`` over calibration or validation samples, lazily (read once, like the data)."""
    for s in samples:
        yield to_nhwc(s, indices)


def wrap(model: torch.nn.Module | ExportedProgram, indices: Sequence[int]) -> torch.nn.Module:
    """``model`` taking the inputs at ``indices`` as NHWC; refused for a program that is already
    quantized (its first quantize reads the NCHW input: a permute before it would stay a float
    copy on the CPU)."""
    import torch

    if isinstance(model, torch.export.ExportedProgram):
        if any(n.op == "call_function" and "quantized_decomposed" in str(n.target) for n in model.graph.nodes):
            raise LoweringError(
                'input_layout="nhwc" takes a float model: this program is already quantized, so the '
                "input permute would run before its first quantize, in float on the CPU. Pass the float "
                'model (lower() quantizes it), or lower with input_layout="nchw"'
            )
        from torchao.quantization.pt2e import move_exported_model_to_eval

        inner: torch.nn.Module = model.module()
        move_exported_model_to_eval(inner)  # (its train() refuses: dropout, batch norm in eval form)
    else:
        inner = model
    perms = tuple(indices)

    class NhwcInputs(torch.nn.Module):
        """``inner`` with the inputs at ``perms`` taken channels-last (module docstring)."""

        def __init__(self) -> None:
            super().__init__()
            self.inner = inner

        def train(self, mode: bool = True) -> NhwcInputs:
            self.training = mode
            with contextlib.suppress(NotImplementedError):  # an exported program's module
                self.inner.train(mode)
            return self

        def forward(self, *xs: torch.Tensor) -> Any:
            ys = tuple(x.permute(*TO_NCHW).contiguous() if i in perms else x for i, x in enumerate(xs))
            return self.inner(*ys)

    return NhwcInputs()
