"""max/avg pool 2d and 1d, global average pooling (adaptive avg pool to 1x1, mean over H, W), the
mean over any dims of a rank <= 4 tensor and adaptive average pooling to sizes that divide the input.

Averages with equal input and output quantization run on ESP-NN's integer average pool where
its rounding cannot differ from PyTorch's, else on AVG_POOL2D_FLOAT (``_emit_average``): ESP-NN
rounds a window sum that ties (sum/count exactly halfway between two codes) away from zero,
PyTorch's quantized reference computes the average in float32 and rounds half to even after
the float rounding of every step; on real data a quarter of the 2x2 windows tie.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from torch.fx import Node

from ..graph.names import node_arg, node_op, static_shape
from ..graph.qdq import QParams, qdq_params
from ..layout import identity, nhwc, view_perm
from ..payload import DType, Opcode
from ..payload.format import (
    AVG_DIVISOR_INCLUDE_PAD,
    AVG_DIVISOR_VALID,
    AVG_TORCH_ADAPTIVE,
    AVG_TORCH_MEAN,
    AVG_TORCH_POOL,
    MAX_MEAN_COUNT,
    MAX_POOL_WINDOW,
)
from ..payload_builder import PayloadBuilder, Value
from ..unsupported import Unsupported
from .base import OpLowering, Unit, register
from .common import INT8_CODES, emit_moved, normalize_dim, pair, requant, requant_table, single

GETITEM = "getitem"


def _window_params(
    x_shape: tuple[int, ...], out_shape: tuple[int, ...], k: tuple[int, int], s: tuple[int, int],
    p: tuple[int, int],
) -> dict[str, int]:
    n, c, h, w = x_shape
    if len(out_shape) != 4 or out_shape[:2] != (n, c):
        raise Unsupported(f"unexpected output shape {out_shape}")
    oh, ow = out_shape[2], out_shape[3]
    for what, size, kk, ss, pp, o in (("height", h, k[0], s[0], p[0], oh), ("width", w, k[1], s[1], p[1], ow)):
        if kk < 1 or ss < 1 or pp < 0:
            raise Unsupported(f"kernel/stride/padding ({kk}, {ss}, {pp}) along {what}")
        if 2 * pp > kk:
            raise Unsupported(f"padding {pp} is more than half the kernel {kk} along {what}")
        if (o - 1) * ss - pp > size - 1:
            raise Unsupported(f"the last window along {what} starts in the padding")
    if k[0] * k[1] > MAX_POOL_WINDOW:
        raise Unsupported(f"a {k[0]}x{k[1]} window exceeds the engine's {MAX_POOL_WINDOW} taps")
    return {
        "kernel_h": k[0], "kernel_w": k[1], "stride_h": s[0], "stride_w": s[1],
        "pad_top": p[0], "pad_left": p[1], "pad_bottom": p[0], "pad_right": p[1],
        "act_min": -128, "act_max": 127,
    }


def divisors(x_hw: Sequence[int], out_hw: Sequence[int], params: dict[str, int]) -> set[int]:
    """The divisor of every window of an average pool (``params`` as AVG_POOL2D's): the taps
    inside the input, or with ``divisor_mode`` 1 the window clipped to the padded input."""
    h, w = x_hw
    oh, ow = out_hw
    y0 = np.arange(oh) * params["stride_h"] - params["pad_top"]
    x0 = np.arange(ow) * params["stride_w"] - params["pad_left"]
    kh, kw = params["kernel_h"], params["kernel_w"]
    if params["divisor_mode"] == AVG_DIVISOR_INCLUDE_PAD:
        cy = np.minimum(y0 + kh, h + params["pad_bottom"]) - y0
        cx = np.minimum(x0 + kw, w + params["pad_right"]) - x0
    else:
        cy = np.minimum(y0 + kh, h) - np.maximum(y0, 0)
        cx = np.minimum(x0 + kw, w) - np.maximum(x0, 0)
    return {int(v) for v in np.unique(cy[:, None] * cx[None, :])}


def tie_free(counts: set[int]) -> bool:
    """Whether ESP-NN's integer average equals PyTorch's float32 one for every int8 input.

    The integer average is the exact sum/count rounded (ties away from zero); PyTorch's is
    that value after float32 roundings, then rounded half to even.  With an odd count no sum
    ties, and the exact value is at least 1/(2n) LSB from a rounding boundary, while the
    float32 result is within (n + 4) * 255 * 2^-24 LSB of it (n - 1 additions of values up to
    255 LSB, the dequantize, at most two divisions, the reciprocal and the final multiply):
    both round alike when 2n(n + 4) * 255 < 2^24, with a margin: n(n + 8) * 510 < 2^24
    (n <= 177)."""
    return all(n % 2 == 1 and n * (n + 8) * 510 < 1 << 24 for n in counts)


def _emit_average(
    b: PayloadBuilder, x_t: int, out: int, qin: QParams, params: dict[str, int], torch_op: int,
    counts: set[int],
) -> None:
    """An average over windows (``params`` as AVG_POOL2D's, equal quantization in and out):
    ESP-NN's AVG_POOL2D where no window can tie, else AVG_POOL2D_FLOAT, the float32
    arithmetic of PyTorch's kernel ``torch_op`` on the dequantized values of the codes."""
    if tie_free(counts):
        b.emit(Opcode.AVG_POOL2D, [x_t], out, params)
        return
    table = qin.dequantize(INT8_CODES).numpy().astype(np.float32)
    b.emit(Opcode.AVG_POOL2D_FLOAT, [x_t, b.constant(table)], out, {**params, "torch_op": torch_op})


@register
class MaxPool2d(OpLowering):
    targets = ("aten.max_pool2d_with_indices.default", "aten.max_pool2d.default")

    def result_node(self, node: Node) -> Node:
        if node_op(node) == "aten.max_pool2d.default":
            return node
        users = list(node.users)
        values = [u for u in users if node_op(u) == GETITEM and u.args[1] == 0]
        if len(values) != 1 or len(users) != 1:
            raise Unsupported("max_pool2d's indices are used; only the pooled values can be delegated")
        return values[0]

    def lower(self, unit: Unit, b: PayloadBuilder) -> None:
        node = unit.anchor
        x = b.operand(unit.inputs[0])
        assert x.qp is not None
        if x.rank != 4:
            raise Unsupported(f"max_pool2d on a rank-{x.rank} tensor")
        k = pair(node_arg(node, 1, "kernel_size"), "kernel_size")
        stride = node_arg(node, 2, "stride", [])
        s = k if not stride else pair(stride, "stride")
        p = pair(node_arg(node, 3, "padding", 0), "padding")
        d = pair(node_arg(node, 4, "dilation", 1), "dilation")
        if d != (1, 1):
            raise Unsupported(f"dilation {d}: ESP-NN pooling has no dilation")
        params = _window_params(x.shape, static_shape(unit.output), k, s, p)
        x_t = b.realize(x, nhwc(4))
        # max commutes with the (monotone) requantisation, so pooling first is exact
        emit_moved(b, unit, x.qp, nhwc(4), lambda out: b.emit(Opcode.MAX_POOL2D, [x_t], out, params))


@register
class AvgPool2d(OpLowering):
    targets = ("aten.avg_pool2d.default",)

    def lower(self, unit: Unit, b: PayloadBuilder) -> None:
        node = unit.anchor
        x = b.operand(unit.inputs[0])
        if x.rank != 4:
            raise Unsupported(f"avg_pool2d on a rank-{x.rank} tensor")
        k = pair(node_arg(node, 1, "kernel_size"), "kernel_size")
        stride = node_arg(node, 2, "stride", [])
        s = k if not stride else pair(stride, "stride")
        p = pair(node_arg(node, 3, "padding", 0), "padding")
        include_pad = bool(node_arg(node, 5, "count_include_pad", True))
        if node_arg(node, 6, "divisor_override", None) is not None:
            raise Unsupported("divisor_override is not supported (the engine divides by the window size)")
        if qdq_params(unit.output) != x.qp:
            raise Unsupported("input and output quantization differ; ESP-NN average pooling keeps them equal")
        out_shape = static_shape(unit.output)
        params = _window_params(x.shape, out_shape, k, s, p)
        params["divisor_mode"] = AVG_DIVISOR_INCLUDE_PAD if include_pad else AVG_DIVISOR_VALID
        x_t = b.realize(x, nhwc(4))
        _, out = b.define(unit.output, nhwc(4))
        assert x.qp is not None
        counts = divisors(x.shape[2:4], out_shape[2:4], params)
        _emit_average(b, x_t, out, x.qp, params, AVG_TORCH_POOL, counts)


@register
class Pool1d(OpLowering):
    """max/avg pool 1d on [N, C, L]: the 2-D pooling of the [N, C, 1, L] view (kernel (1, k),
    stride (1, s), padding (0, p)).  NHWC [N, 1, L, C] has the bytes of [N, L, C], so the
    views are RESHAPEs planned in place (or nothing, next to a conv1d).  Kept whole through
    to_edge, which would split it into unsqueeze, 2-D pooling and squeeze."""

    targets = ("aten.avg_pool1d.default", "aten.max_pool1d.default")
    preserve = targets

    def lower(self, unit: Unit, b: PayloadBuilder) -> None:
        node = unit.anchor
        is_max = node_op(node) == "aten.max_pool1d.default"
        x = b.operand(unit.inputs[0])
        assert x.qp is not None
        if x.rank != 3:
            raise Unsupported(f"1-D pooling of a rank-{x.rank} tensor; only [N, C, L] is delegated")
        k = single(node_arg(node, 1, "kernel_size"), "kernel_size", "1-D pooling")
        s = single(node_arg(node, 2, "stride", []), "stride", "1-D pooling", default=k)
        p = single(node_arg(node, 3, "padding", 0), "padding", "1-D pooling")
        qout = qdq_params(unit.output)
        if is_max:
            if single(node_arg(node, 4, "dilation", 1), "dilation", "1-D pooling") != 1:
                raise Unsupported("dilation: ESP-NN pooling has no dilation")
        else:
            if qout != x.qp:
                raise Unsupported("input and output quantization differ; ESP-NN average pooling keeps them equal")
        out_shape = static_shape(unit.output)
        if len(out_shape) != 3:
            raise Unsupported(f"unexpected output shape {out_shape}")
        n, c, length = x.shape
        out4 = (out_shape[0], out_shape[1], 1, out_shape[2])
        params = _window_params((n, c, 1, length), out4, (1, k), (1, s), (0, p))
        if not is_max:
            include_pad = bool(node_arg(node, 5, "count_include_pad", True))
            params["divisor_mode"] = AVG_DIVISOR_INCLUDE_PAD if include_pad else AVG_DIVISOR_VALID
        x_t = b.realize(b.reshaped(x, (n, c, 1, length)), nhwc(4))
        if not is_max:  # equal quantization (checked above): PyTorch's avg_pool1d is avg_pool2d's
            _, out = b.define_view(unit.output, out4, nhwc(4))
            counts = divisors((1, length), (1, out_shape[2]), params)
            _emit_average(b, x_t, out, x.qp, params, AVG_TORCH_POOL, counts)
            return
        if qout == x.qp:
            _, out = b.define_view(unit.output, out4, nhwc(4))
            b.emit(Opcode.MAX_POOL2D, [x_t], out, params)
            return
        # max commutes with the (monotone) requantisation, so pooling first is exact
        tmp = b.arena(out4, DType.INT8, x.qp, nhwc(4))
        b.emit(Opcode.MAX_POOL2D, [x_t], tmp, params)
        _, out = b.define_view(unit.output, out4, nhwc(4))
        b.emit(Opcode.LUT, [tmp, b.constant(requant_table(x.qp, qout))], out)


def _global_pool(unit: Unit, b: PayloadBuilder) -> None:
    """Average over H and W of an NCHW tensor, into [N, C, 1, 1] (or [N, C])."""
    x = b.operand(unit.inputs[0])
    n, c = x.shape[0], x.shape[1]
    out_shape = static_shape(unit.output)
    if out_shape not in ((n, c, 1, 1), (n, c)):
        raise Unsupported(f"unexpected output shape {out_shape}")
    _average_hw(unit, b, x, (n, c, 1, 1))


def _average_hw(unit: Unit, b: PayloadBuilder, x: Value, keep: tuple[int, int, int, int]) -> None:
    """Average the 4-D value ``x`` (NCHW logical, read in NHWC) over H and W into ``keep`` =
    [N, C, 1, 1], then view that as the unit's output (a RESHAPE, in place)."""
    assert x.qp is not None
    _, _, h, w = x.shape
    qout = qdq_params(unit.output)
    out_shape = static_shape(unit.output)
    if h * w > MAX_MEAN_COUNT:
        raise Unsupported(f"averaging {h * w} values exceeds the engine's {MAX_MEAN_COUNT}")
    mean_hw: dict[str, int] | None = None
    if qout != x.qp:  # check the multiplier before anything is emitted
        mult, shift = requant(x.qp.scale32 * qout.inv_scale32 / (h * w), "mean")
        mean_hw = {"in_offset": -x.qp.zero_point, "out_offset": qout.zero_point, "mult": mult, "shift": shift}
    x_t = b.realize(x, nhwc(4))
    if out_shape == keep:
        _, out = b.define(unit.output, nhwc(4))
    else:
        out = b.arena(keep, DType.INT8, qout, nhwc(4))
    if mean_hw is None:
        if h > 65535 or w > 65535:  # pragma: no cover - dims are checked when tensors are made
            raise Unsupported("window too large")
        # PyTorch's mean (and adaptive_avg_pool2d to 1x1) sums the H*W values in ATen's order
        _emit_average(b, x_t, out, x.qp, {
            "kernel_h": h, "kernel_w": w, "stride_h": 1, "stride_w": 1,
            "pad_top": 0, "pad_left": 0, "pad_bottom": 0, "pad_right": 0,
            "act_min": -128, "act_max": 127, "divisor_mode": AVG_DIVISOR_VALID,
        }, AVG_TORCH_MEAN, {h * w})
    else:
        b.emit(Opcode.MEAN_HW, [x_t], out, mean_hw)
    if out_shape != keep:
        _, flat = b.define(unit.output, identity(len(out_shape)))
        b.emit(Opcode.RESHAPE, [out], flat)


def _mean_layout(b: PayloadBuilder, x: Value, dims: list[int]) -> tuple[tuple[int, ...], tuple[int, int, int]]:
    """A physical order of ``x`` in which the averaged dims are one contiguous block and the kept
    dims keep their logical order (so the result's bytes are row-major), and the sizes
    (A, R, C) before, in and after that block.  A layout ``x`` already has is taken when one
    fits (a conv1d's [N, L, C] bytes of [N, C, L] averaged over L; NHWC averaged over C);
    otherwise kept dims first and averaged dims last (one TRANSPOSE)."""
    kept = [d for d in range(x.rank) if d not in dims]
    for perm in (*b.layouts(x), identity(x.rank)):
        where = [i for i, d in enumerate(perm) if d in dims]
        if where != list(range(where[0], where[0] + len(where))):
            continue
        if [d for d in perm if d not in dims] != kept:
            continue
        phys = [x.shape[d] for d in perm]
        a, e = where[0], where[-1] + 1
        return tuple(perm), (int(np.prod(phys[:a], dtype=np.int64)), int(np.prod(phys[a:e], dtype=np.int64)),
                             int(np.prod(phys[e:], dtype=np.int64)))
    perm = (*kept, *dims)
    return perm, (int(np.prod([x.shape[d] for d in kept], dtype=np.int64)),
                  int(np.prod([x.shape[d] for d in dims], dtype=np.int64)), 1)


def _bytes_in(b: PayloadBuilder, x: Value, perm: tuple[int, ...]) -> int:
    """A tensor with ``x``'s bytes in order ``perm``: the tensor of the value ``x`` is a unit-dim
    view of, when it has them (a conv1d's result), else ``x`` realized in ``perm``."""
    base = x.view_of
    if base is not None and not x.real:
        for p in b.layouts(base):
            if view_perm(base.shape, p, x.shape) == perm:
                return b.realize(base, p)
    return b.realize(x, perm)


def _mean_dims(unit: Unit, b: PayloadBuilder, x: Value, dims: list[int]) -> None:
    """Mean over any dims of a rank <= 4 tensor: in a physical order where they form one block
    of R values between A (before) and C (after) values (``_mean_layout``), the bytes are the
    NHWC [A, R, 1, C] of the NCHW value [A, C, R, 1], and the mean is its H, W average into
    [A, C, 1, 1], whose bytes are the result's row-major bytes: the token mean of [N, T, C]
    over T, a channel mean, the last dims, every dim."""
    out_shape = static_shape(unit.output)
    kept = tuple(x.shape[d] for d in range(x.rank) if d not in dims)
    keepdim = tuple(1 if d in dims else x.shape[d] for d in range(x.rank))
    if out_shape not in (kept, keepdim):
        raise Unsupported(f"unexpected output shape {out_shape}")
    perm, (a, r, c) = _mean_layout(b, x, dims)
    if r > MAX_MEAN_COUNT:
        raise Unsupported(f"averaging {r} values exceeds the engine's {MAX_MEAN_COUNT}")
    src = _bytes_in(b, x, perm)
    view_t = b.arena((a, c, r, 1), DType.INT8, x.qp, nhwc(4))
    b.emit(Opcode.RESHAPE, [src], view_t)  # the same bytes: planned in place
    _average_hw(unit, b, b.wrap(view_t, (a, c, r, 1), x.qp, nhwc(4)), (a, c, 1, 1))


@register
class MeanHW(OpLowering):
    targets = ("aten.mean.dim", "aten.mean.default")

    def lower(self, unit: Unit, b: PayloadBuilder) -> None:
        node = unit.anchor
        x = b.operand(unit.inputs[0])
        if node_op(node) == "aten.mean.default":  # x.mean(): every dim, (self, dtype) signature
            dims: list[int] = []
            dtype = node_arg(node, 1, "dtype", None)
        else:
            d = node_arg(node, 1, "dim")
            dims = [d] if isinstance(d, int) else list(d or [])
            dtype = node_arg(node, 3, "dtype", None)
        if dtype is not None:
            raise Unsupported("mean with a dtype argument")
        if not 2 <= x.rank <= 4:
            raise Unsupported(f"mean over a rank-{x.rank} tensor; only ranks 2 to 4 are delegated")
        # an empty (or absent) dim list means every dim, as in PyTorch
        norm = sorted({normalize_dim(d, x.rank) for d in dims}) if dims else list(range(x.rank))
        if x.rank == 4 and norm == [2, 3]:
            _global_pool(unit, b)
            return
        _mean_dims(unit, b, x, norm)


@register
class AdaptiveAvgPool2d(OpLowering):
    targets = ("aten._adaptive_avg_pool2d.default", "aten.adaptive_avg_pool2d.default")

    def lower(self, unit: Unit, b: PayloadBuilder) -> None:
        size = pair(node_arg(unit.anchor, 1, "output_size"), "output_size")
        x = b.operand(unit.inputs[0])
        if x.rank != 4:
            raise Unsupported("adaptive average pooling of a non-4-D tensor")
        if size == (1, 1):
            _global_pool(unit, b)
            return
        _uniform_adaptive_pool(unit, b, size)


def _uniform_adaptive_pool(unit: Unit, b: PayloadBuilder, size: tuple[int, int]) -> None:
    """Adaptive pooling whose output size divides the input's is an average pool with
    uniform windows (kernel = stride = input / output, no padding)."""
    x = b.operand(unit.inputs[0])
    h, w = x.shape[2], x.shape[3]
    if size[0] < 1 or size[1] < 1 or h % size[0] or w % size[1]:
        raise Unsupported(
            f"adaptive average pooling of {h}x{w} to {size}: only 1x1 and output sizes that divide "
            "the input (uniform windows) are delegated"
        )
    if qdq_params(unit.output) != x.qp:
        raise Unsupported("input and output quantization differ; ESP-NN average pooling keeps them equal")
    k = (h // size[0], w // size[1])
    params = _window_params(x.shape, static_shape(unit.output), k, k, (0, 0))
    params["divisor_mode"] = AVG_DIVISOR_VALID
    x_t = b.realize(x, nhwc(4))
    _, out = b.define(unit.output, nhwc(4))
    assert x.qp is not None
    _emit_average(b, x_t, out, x.qp, params, AVG_TORCH_ADAPTIVE, {k[0] * k[1]})
