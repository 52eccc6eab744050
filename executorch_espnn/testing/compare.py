"""The pass criterion of the backend-suite flow: what "the delegate matches" means.

ExecuTorch's suite compares a lowered program with the fake-quantized program it came from
using one fixed float tolerance (atol 0.1, rtol 0.04) for every test.  That is both too loose
(a whole wrong quantization step of a small-scale tensor passes) and unrelated to what the
integer arithmetic can promise.  This flow uses the tolerance the arithmetic justifies:

* **Quantized outputs** (the program's output is ``dequantize_per_tensor(q, s, zp)``): both
  sides are ``(q - zp) * s`` for integers ``q``, so the difference is recovered as a whole
  number of steps.  Every element must be within **1 LSB**.  Why 1 and not 0: the reference
  computes in float32 and rounds once, at the output quantize; the delegate computes in
  integers and rescales with ESP-NN/TFLite fixed-point arithmetic (a 31-bit multiplier, a
  rounding right shift; inputs of add pre-shifted by 2^20; pooling divides with rounding;
  lookup tables were rounded once each).  Those rescales differ from the exact real rescale
  by less than one unit of the *pre-rounding* value, so the final rounding can only land on
  the neighbouring integer when the exact value sits within that error of a half-way point:
  one step at most.  Two steps or more need an error of a whole output step, which only a
  bug produces (a wrong multiplier, zero point, padding, layout or batch stride).
* **Chains of quantized operators** (more than one requantization between an input and the
  output, e.g. an LSTM cell): each requantization may land one step off, and a later operator
  with a gain above 1 carries that step forward, so one step per element is not a bound the
  arithmetic gives.  Those outputs use the whole-model criterion of the runtime's model tests:
  at least **99% of elements within 1 LSB** and exact top-1; the worst difference is reported.
* **Top-1** on classifier-shaped outputs (rank 2, ``[batch, classes]``, and softmax
  outputs along their axis): the index of the largest value must equal the reference's in
  every row where the reference's margin between its two largest values exceeds 2 LSB (with
  a smaller margin a legitimate 1 LSB move on each side may tie or swap them).
* **Float outputs** (an operator the quantizer left float, so the whole path runs on
  ExecuTorch's portable kernels): float32 kernels against PyTorch's, ``|a - r| <= 1e-5 +
  1e-5 |r|`` (a few float32 ulps of accumulated rounding, not a quantization tolerance).
* **Integer and bool outputs** are compared exactly.

Every mismatch message names the output, the worst element and how many elements are off.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

MAX_LSB = 1
CHAIN_WITHIN_LSB_FRACTION = 0.99
TOP1_MARGIN_LSB = 2
FLOAT_ATOL = 1e-5
FLOAT_RTOL = 1e-5
# (a - r) / s of two float32 values on the same int8 grid is an integer up to float32
# rounding of each side: |q| <= 255 steps, so the residual is ~255 * 2^-24, far below this
GRID_RESIDUAL = 1e-3


@dataclass(frozen=True)
class OutputQuant:
    """How the program's output ``index`` is produced: the scale and zero point of the
    dequantize that makes it (None for an output that is not dequantized int8), and
    whether it is a softmax result (whose axis is then a class axis).  ``requantizations``
    is the largest number of quantize nodes on a path from an input to this output: 2 for a
    single operator (its input's and its output's), more for a chain."""

    scale: float | None
    zero_point: int | None
    softmax_dim: int | None = None
    requantizations: int = 2

    @property
    def chained(self) -> bool:
        return self.requantizations > 2


@dataclass(frozen=True)
class OutputCheck:
    """The verdict on one output."""

    index: int
    kind: str  # "int8" (dequantized), "int8-chain" (several requantizations), "float", "exact"
    numel: int
    max_lsb: int | None  # the largest difference in quantization steps (int8 outputs)
    beyond: int  # elements outside the tolerance
    max_abs: float  # the largest absolute difference
    top1_rows: int  # rows whose top-1 was checked
    top1_mismatches: int
    problem: str  # "" when the output matches

    @property
    def ok(self) -> bool:
        return not self.problem


def _to_tensor(x: object) -> torch.Tensor:
    if isinstance(x, torch.Tensor):
        return x.detach()
    return torch.as_tensor(x)


def _top1(
    actual_steps: torch.Tensor, ref_steps: torch.Tensor, dim: int
) -> tuple[int, int]:
    """(rows checked, rows whose argmax differs) over ``dim``, checking only rows where the
    reference's top-1 leads the runner-up by more than TOP1_MARGIN_LSB steps."""
    if ref_steps.dim() == 0 or ref_steps.shape[dim] < 2:
        return 0, 0
    a = actual_steps.movedim(dim, -1).reshape(-1, ref_steps.shape[dim])
    r = ref_steps.movedim(dim, -1).reshape(-1, ref_steps.shape[dim])
    top2 = torch.topk(r, 2, dim=-1).values
    margin = top2[:, 0] - top2[:, 1]
    rows = margin > TOP1_MARGIN_LSB
    checked = int(rows.sum())
    if checked == 0:
        return 0, 0
    differs = a[rows].argmax(dim=-1) != r[rows].argmax(dim=-1)
    return checked, int(differs.sum())


def check_output(index: int, actual: object, reference: object, quant: OutputQuant) -> OutputCheck:
    a = _to_tensor(actual)
    r = _to_tensor(reference)
    if tuple(a.shape) != tuple(r.shape):
        return OutputCheck(index, "shape", r.numel(), None, r.numel(), float("inf"), 0, 0,
                           f"output {index} has shape {tuple(a.shape)}, the reference {tuple(r.shape)}")
    if not (a.dtype.is_floating_point and r.dtype.is_floating_point):
        if a.dtype != r.dtype:
            return OutputCheck(index, "exact", r.numel(), None, r.numel(), float("inf"), 0, 0,
                               f"output {index} is {a.dtype}, the reference {r.dtype}")
        off = int((a != r).sum())
        worst = float((a.to(torch.float64) - r.to(torch.float64)).abs().max()) if r.numel() else 0.0
        problem = f"output {index} ({a.dtype}): {off} of {r.numel()} elements differ" if off else ""
        return OutputCheck(index, "exact", r.numel(), None, off, worst, 0, 0, problem)

    a64 = a.to(torch.float64)
    r64 = r.to(torch.float64)
    diff = a64 - r64
    max_abs = float(diff.abs().max()) if r.numel() else 0.0
    nan_mismatch = int((a64.isnan() != r64.isnan()).sum())
    if quant.scale is None:
        finite = ~(a64.isnan() & r64.isnan())
        tol = FLOAT_ATOL + FLOAT_RTOL * r64.abs()
        beyond = int(((diff.abs() > tol) & finite).sum()) + nan_mismatch
        problem = ""
        if beyond:
            problem = (f"float output {index}: {beyond} of {r.numel()} elements beyond "
                       f"{FLOAT_ATOL:g} + {FLOAT_RTOL:g}*|ref| (max |diff| {max_abs:.3g})")
        return OutputCheck(index, "float", r.numel(), None, beyond, max_abs, 0, 0, problem)

    s = float(quant.scale)
    steps = diff / s
    lsb = torch.round(steps)
    residual = float((steps - lsb).abs().max()) if r.numel() else 0.0
    if nan_mismatch or residual > GRID_RESIDUAL:
        return OutputCheck(index, "int8", r.numel(), None, r.numel(), max_abs, 0, 0,
                           f"output {index} is not on the int8 grid of scale {s:g} "
                           f"(residual {residual:.3g} steps, {nan_mismatch} NaN mismatches)")
    abs_lsb = lsb.abs()
    max_lsb = int(abs_lsb.max()) if r.numel() else 0
    beyond = int((abs_lsb > MAX_LSB).sum())
    kind = "int8-chain" if quant.chained else "int8"
    allowed = int((1.0 - CHAIN_WITHIN_LSB_FRACTION) * r.numel()) if quant.chained else 0
    problems: list[str] = []
    if beyond > allowed:
        where = int(abs_lsb.flatten().argmax())
        rule = (f"more than {100 * (1 - CHAIN_WITHIN_LSB_FRACTION):g}% of the elements of a chain of "
                f"{quant.requantizations} requantizations" if quant.chained else "any element")
        problems.append(
            f"output {index}: {beyond} of {r.numel()} elements differ by more than {MAX_LSB} LSB "
            f"(scale {s:g}; allowed: not {rule}); worst {max_lsb} LSB at flat index {where} "
            f"(delegate {float(a64.flatten()[where]):.6g}, reference {float(r64.flatten()[where]):.6g})"
        )
    zp = float(quant.zero_point or 0)
    a_steps = torch.round(a64 / s) + zp
    r_steps = torch.round(r64 / s) + zp
    rows = mism = 0
    dim: int | None = None
    if quant.softmax_dim is not None:
        dim = quant.softmax_dim % max(r.dim(), 1)
    elif r.dim() == 2:
        dim = 1
    if dim is not None:
        rows, mism = _top1(a_steps, r_steps, dim)
        if mism:
            problems.append(f"output {index}: top-1 differs in {mism} of {rows} rows with a clear winner")
    return OutputCheck(index, kind, r.numel(), max_lsb, beyond, max_abs, rows, mism, "; ".join(problems))


def check_outputs(
    actual: Sequence[object], reference: Sequence[object], quants: Sequence[OutputQuant]
) -> list[OutputCheck]:
    if len(actual) != len(reference):
        raise AssertionError(f"the program returned {len(actual)} outputs, the reference {len(reference)}")
    if len(quants) != len(reference):
        raise ValueError(f"{len(quants)} output descriptions for {len(reference)} outputs")
    return [check_output(i, a, r, q) for i, (a, r, q) in enumerate(zip(actual, reference, quants, strict=True))]
