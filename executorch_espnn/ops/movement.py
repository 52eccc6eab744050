"""Data movement: reshape-like views, permute, slice/select, split, cat, stack, constant pad, nearest upsampling,
expand (a broadcast copy).

None of these change values, so when the quantizer gave the output other
quantization parameters than the input, a requantising LUT follows (exactly the
program's dequantize → quantize).  Layouts are tracked, not forced: a permute is
free (it relabels the bytes), and a reshape keeps the bytes of any layout in which the
dims it merges are adjacent and in order (a flatten of [N, C, 1, 1], a split of NHWC
channels); only a reshape that mixes dims the layout separates moves bytes (a TRANSPOSE
into the nearest layout that suits it).
"""

from __future__ import annotations

import numpy as np
import torch
from torch.fx import Node

from ..graph.constants import GraphContext
from ..graph.names import QUANTIZE, node_arg, node_op, static_shape
from ..graph.qdq import QParams, qdq_params
from ..layout import Perm, identity, inverse, nhwc, reshape_layout, reshape_ready, same_bytes
from ..payload import DType, Opcode
from ..payload.format import MAX_OP_INPUTS
from ..payload_builder import PayloadBuilder, Value
from ..unsupported import Unsupported
from .activation import aten_overload
from .base import OpLowering, Unit, register
from .common import emit_moved, normalize_dim, requant_table


@register
class Reshape(OpLowering):
    targets = (
        "aten.view_copy.default",
        "aten.view.default",
        "aten._unsafe_view.default",
        "aten.reshape.default",
        "aten.flatten.using_ints",
        "aten.squeeze_copy.dims",
        "aten.squeeze_copy.dim",
        "aten.squeeze_copy.default",
        "aten.unsqueeze_copy.default",
        "aten.squeeze.dims",
        "aten.squeeze.dim",
        "aten.unsqueeze.default",
        "aten.clone.default",
        "aten.alias_copy.default",
        "dim_order_ops._clone_dim_order.default",
        "aten.dropout.default",
        "aten.feature_dropout.default",
    )

    def lower(self, unit: Unit, b: PayloadBuilder) -> None:
        node = unit.anchor
        name = node_op(node)
        if name == "aten.clone.default":
            fmt = node.kwargs.get("memory_format")
            if fmt not in (None, torch.contiguous_format, torch.preserve_format):
                raise Unsupported(f"clone to {fmt}")
        if name == "dim_order_ops._clone_dim_order.default":
            order = node.kwargs.get("dim_order")
            x_rank = len(static_shape(unit.inputs[0]))
            if order is not None and (not isinstance(order, (list, tuple)) or list(order) != list(range(x_rank))):
                raise Unsupported(f"clone to dim order {order}")
        if name in ("aten.dropout.default", "aten.feature_dropout.default") and node_arg(node, 2, "train"):
            raise Unsupported("dropout in training mode")
        x = b.operand(unit.inputs[0])
        assert x.qp is not None
        out_shape = static_shape(unit.output)
        if int(np.prod(out_shape, dtype=np.int64)) != int(np.prod(x.shape, dtype=np.int64)):
            raise Unsupported(f"{name} changes the element count")
        qout = qdq_params(unit.output)
        if out_shape == x.shape and qout == x.qp:
            # clone, dropout in eval mode, a view to its own shape: the input's bytes in
            # whatever layout it has, no op at all (not a TRANSPOSE to the logical order, a
            # copy and a TRANSPOSE back)
            perm = b.any_layout(x, nhwc(x.rank))
            b.alias(unit.output, perm, b.realize(x, perm))
            return
        # a view keeps the bytes of a layout whose merged dims are adjacent and in order (a
        # conv's NHWC result viewed as [N, g, C/g, H*W] is [N, H*W, g, C/g]); otherwise a
        # TRANSPOSE makes one: the nearest such layout when the result then is NHWC (what
        # convolutions read, ShuffleNet's shuffle back to [N, C, H, W]), else the logical
        # order (what fully connected layers, layer norm and matmul read)
        have = b.layouts(x)
        perm, out_perm = identity(x.rank), identity(len(out_shape))
        for p in have:
            q = reshape_layout(x.shape, p, out_shape)
            if q is not None:
                perm, out_perm = p, q
                break
        else:
            if have:
                near = reshape_ready(x.shape, have[0], out_shape)
                q = reshape_layout(x.shape, near, out_shape)
                if q is not None and len(out_shape) == 4 and same_bytes(out_shape, q, nhwc(4)):
                    perm, out_perm = near, q
        src = b.realize(x, perm)
        _, out = b.define(unit.output, out_perm)
        if qout == x.qp:
            b.emit(Opcode.RESHAPE, [src], out)
        else:
            b.emit(Opcode.LUT, [src, b.constant(requant_table(x.qp, qout))], out)


@register
class Requantize(OpLowering):
    """A dequantize read directly by a quantize: what is left of an operator that vanished
    in ``to_edge`` (eval-mode ``dropout_``, an identity ``alias``) or a requantisation
    between two observers.  Without this unit the pair belongs to no operator, so the
    partitioner would end a partition at the dequantize and start the next at the
    quantize: a float round trip on the CPU between two delegates."""

    targets = (QUANTIZE,)
    requantizes = True

    def activation_args(self, node: Node, ctx: GraphContext) -> list[Node]:
        dq = node.args[0]
        assert isinstance(dq, Node)
        return [dq]

    def lower(self, unit: Unit, b: PayloadBuilder) -> None:
        x = b.operand(unit.inputs[0])
        assert x.qp is not None
        qout = qdq_params(unit.output)
        perm = b.any_layout(x, nhwc(x.rank))
        x_t = b.realize(x, perm)
        if qout == x.qp:
            b.alias(unit.output, perm, x_t)  # the same int8 codes: no op at all
            return
        _, out = b.define(unit.output, perm)
        b.emit(Opcode.LUT, [x_t, b.constant(requant_table(x.qp, qout))], out)


@register
class Permute(OpLowering):
    targets = ("aten.permute_copy.default", "aten.permute.default")

    def lower(self, unit: Unit, b: PayloadBuilder) -> None:
        x = b.operand(unit.inputs[0])
        assert x.qp is not None
        dims = [normalize_dim(d, x.rank) for d in node_arg(unit.anchor, 1, "dims")]
        if sorted(dims) != list(range(x.rank)):
            raise Unsupported(f"{dims} is not a permutation")
        if static_shape(unit.output) != tuple(x.shape[d] for d in dims):
            raise Unsupported("unexpected output shape")
        qout = qdq_params(unit.output)
        xq = x.qp
        if not b.layouts(x):
            # the input is still to be made (a program input, a boundary quantize): the output
            # is made when its first reader asks for an order, by making the input in the
            # composed order.  A program's NHWC input permuted to NCHW for a convolution
            # (``lower(..., input_layout="nhwc")``) is then read as it is: the permute and the
            # convolution's NHWC order cancel, no TRANSPOSE
            def make(out_perm: Perm) -> int:
                x_t = b.realize(x, tuple(dims[p] for p in out_perm))
                if qout == xq:
                    return x_t
                out = b.arena(static_shape(unit.output), DType.INT8, qout, out_perm)
                b.emit(Opcode.LUT, [x_t, b.constant(requant_table(xq, qout))], out)
                return out

            b.define_lazy(unit.output, make)
            return
        perm = b.any_layout(x, nhwc(x.rank))
        x_t = b.realize(x, perm)
        inv = inverse(tuple(dims))
        out_perm = tuple(inv[p] for p in perm)
        if qout == x.qp:
            b.alias(unit.output, out_perm, x_t)  # same bytes, other labels: no op at all
        else:
            _, out = b.define(unit.output, out_perm)
            b.emit(Opcode.LUT, [x_t, b.constant(requant_table(x.qp, qout))], out)


def _slice_words(starts: list[int], steps: list[int]) -> dict[str, int]:
    s = starts + [0] * (4 - len(starts))
    t = steps + [1] * (4 - len(steps))
    return {**{f"start{i}": s[i] for i in range(4)}, **{f"step{i}": t[i] for i in range(4)}}


@register
class Slice(OpLowering):
    targets = ("aten.slice_copy.Tensor", "aten.slice.Tensor", "aten.select_copy.int", "aten.select.int",
               "aten.narrow_copy.default", "aten.narrow.default")

    def lower(self, unit: Unit, b: PayloadBuilder) -> None:
        node = unit.anchor
        name = node_op(node)
        x = b.operand(unit.inputs[0])
        assert x.qp is not None
        if x.rank == 0:
            raise Unsupported("slice of a scalar")
        dim = normalize_dim(node_arg(node, 1, "dim", 0), x.rank)
        size = x.shape[dim]
        if name.startswith("aten.select"):
            idx = int(node_arg(node, 2, "index"))
            idx = idx + size if idx < 0 else idx
            start, step, count = idx, 1, 1
        elif name.startswith("aten.narrow"):
            start = int(node_arg(node, 2, "start"))
            start = start + size if start < 0 else start
            step, count = 1, int(node_arg(node, 3, "length"))
        else:
            start_a = node_arg(node, 2, "start", None)
            end_a = node_arg(node, 3, "end", None)
            step = int(node_arg(node, 4, "step", 1))
            if step < 1:
                raise Unsupported(f"slice step {step}")
            start, end, _ = slice(start_a, end_a, step).indices(size)
            count = max(0, (end - start + step - 1) // step)
        if count < 1 or not 0 <= start < size or start + (count - 1) * step > size - 1:
            raise Unsupported(f"empty or out-of-range slice of dim {dim}")
        kept = tuple(count if i == dim else d for i, d in enumerate(x.shape))
        out_shape = static_shape(unit.output)
        perm = b.any_layout(x, nhwc(x.rank))
        x_t = b.realize(x, perm)
        words = _slice_words(
            [start if perm[i] == dim else 0 for i in range(x.rank)],
            [step if perm[i] == dim else 1 for i in range(x.rank)],
        )
        if out_shape == kept:
            emit_moved(b, unit, x.qp, perm, lambda out: b.emit(Opcode.SLICE, [x_t], out, words))
            return
        # select: slice, then drop the dim (a reshape, free when planned in place)
        if out_shape != tuple(d for i, d in enumerate(x.shape) if i != dim):
            raise Unsupported(f"unexpected output shape {out_shape}")
        tmp = b.arena(kept, DType.INT8, x.qp, perm)
        b.emit(Opcode.SLICE, [x_t], tmp, words)
        src = b.contiguous(b.wrap(tmp, kept, x.qp, perm))
        emit_moved(b, unit, x.qp, identity(len(out_shape)), lambda out: b.emit(Opcode.RESHAPE, [src], out))


@register
class Split(OpLowering):
    """split / split_with_sizes / chunk: one SLICE per used piece, all reading the input in
    the same layout.  The piece sizes come from the exported result shapes, which is what
    every variant (a size, a list of sizes, a number of chunks) agrees on."""

    targets = ("aten.split_with_sizes_copy.default", "aten.split_copy.Tensor",
               "aten.split_with_sizes.default", "aten.split.Tensor")
    returns_pieces = True

    def lower(self, unit: Unit, b: PayloadBuilder) -> None:
        node = unit.anchor
        x = b.operand(unit.inputs[0])
        assert x.qp is not None
        if x.rank == 0:
            raise Unsupported("split of a scalar")
        dim = normalize_dim(node_arg(node, 2, "dim", 0), x.rank)
        vals = node.meta.get("val")
        if not isinstance(vals, (list, tuple)) or not all(isinstance(v, torch.Tensor) for v in vals):
            raise Unsupported(f"{node.name} has no metadata for its pieces")
        sizes = [int(v.shape[dim]) for v in vals]
        if sum(sizes) != x.shape[dim]:
            raise Unsupported(f"pieces of sizes {sizes} do not add up to the {x.shape[dim]} of dim {dim}")
        starts = [sum(sizes[:i]) for i in range(len(sizes))]
        perm = b.any_layout(x, nhwc(x.rank))
        x_t = b.realize(x, perm)
        for q in unit.outputs:
            getitem = q.args[0]
            idx = getitem.args[1] if isinstance(getitem, Node) else None
            if not isinstance(idx, int) or not 0 <= idx < len(sizes):
                raise Unsupported(f"{q.name} does not quantize one piece of {node.name}")
            kept = tuple(sizes[idx] if i == dim else d for i, d in enumerate(x.shape))
            if sizes[idx] < 1 or static_shape(q) != kept:
                raise Unsupported(f"unexpected shape {static_shape(q)} of piece {idx}")
            words = _slice_words([starts[idx] if perm[i] == dim else 0 for i in range(x.rank)], [1] * x.rank)

            def slice_into(out: int, w: dict[str, int] = words) -> None:
                b.emit(Opcode.SLICE, [x_t], out, w)

            emit_moved(b, unit, x.qp, perm, slice_into, output=q)


def _tensor_list(node: Node, what: str) -> list[Node]:
    """The tensors of cat/stack: a list of 1 .. MAX_OP_INPUTS graph nodes (CONCAT's limit)."""
    tensors = node.args[0]
    if not isinstance(tensors, (list, tuple)) or not all(isinstance(t, Node) for t in tensors):
        raise Unsupported(f"{what} of something other than a list of tensors")
    if not 1 <= len(tensors) <= MAX_OP_INPUTS:
        raise Unsupported(f"{what} of {len(tensors)} tensors; the engine concatenates at most {MAX_OP_INPUTS}")
    return list(tensors)


def _concat(unit: Unit, b: PayloadBuilder, vals: list[Value], dim: int) -> None:
    """CONCAT of ``vals`` along logical ``dim`` into the unit's output, each input first
    requantised by a LUT when its quantization is not the output's."""
    qout = qdq_params(unit.output)
    perm = b.any_layout(vals[0], nhwc(vals[0].rank))
    srcs = []
    for v in vals:
        assert v.qp is not None
        t = b.realize(v, perm)
        if v.qp != qout:
            moved = b.arena(v.shape, DType.INT8, qout, perm)
            b.emit(Opcode.LUT, [t, b.constant(requant_table(v.qp, qout))], moved)
            t = moved
        srcs.append(t)
    _, out = b.define(unit.output, perm)
    b.emit(Opcode.CONCAT, srcs, out, {"axis": inverse(perm)[dim]})


@register
class Cat(OpLowering):
    targets = ("aten.cat.default", "aten.concat.default")

    def activation_args(self, node: Node, ctx: GraphContext) -> list[Node]:
        return _tensor_list(node, "cat")

    def lower(self, unit: Unit, b: PayloadBuilder) -> None:
        vals = [b.operand(dq) for dq in unit.inputs]
        rank = len(static_shape(unit.output))
        if any(v.rank != rank for v in vals):
            raise Unsupported("cat of tensors of different ranks (empty tensors?)")
        _concat(unit, b, vals, normalize_dim(node_arg(unit.anchor, 1, "dim", 0), rank))


@register
class Stack(OpLowering):
    """stack = CONCAT of the inputs' views with a unit dim inserted at ``dim`` (each view
    keeps its input's bytes, so it is a RESHAPE planned in place, or nothing)."""

    targets = ("aten.stack.default",)
    preserve = ("aten.stack.default",)

    def activation_args(self, node: Node, ctx: GraphContext) -> list[Node]:
        return _tensor_list(node, "stack")

    def lower(self, unit: Unit, b: PayloadBuilder) -> None:
        vals = [b.operand(dq) for dq in unit.inputs]
        out_shape = static_shape(unit.output)
        rank = len(out_shape)
        if any(v.rank != rank - 1 or v.shape != vals[0].shape for v in vals):
            raise Unsupported("stack of tensors of different shapes")
        dim = normalize_dim(node_arg(unit.anchor, 1, "dim", 0), rank)
        piece = (*out_shape[:dim], 1, *out_shape[dim + 1:])
        if out_shape[dim] != len(vals) or tuple(d for i, d in enumerate(piece) if i != dim) != vals[0].shape:
            raise Unsupported(f"unexpected output shape {out_shape}")
        _concat(unit, b, [b.reshaped(v, piece) for v in vals], dim)


@register
class ConstantPad(OpLowering):
    targets = ("aten.constant_pad_nd.default",)

    def lower(self, unit: Unit, b: PayloadBuilder) -> None:
        x = b.operand(unit.inputs[0])
        assert x.qp is not None
        pads = [int(p) for p in node_arg(unit.anchor, 1, "pad")]
        value = float(node_arg(unit.anchor, 2, "value", 0.0))
        if len(pads) % 2 or len(pads) // 2 > x.rank:
            raise Unsupported(f"pad list {pads}")
        if any(p < 0 for p in pads):
            raise Unsupported("negative padding (cropping)")
        before = [0] * x.rank
        after = [0] * x.rank
        for i in range(len(pads) // 2):
            d = x.rank - 1 - i
            before[d], after[d] = pads[2 * i], pads[2 * i + 1]
        qout = qdq_params(unit.output)
        out_shape = static_shape(unit.output)
        perm = b.any_layout(x, nhwc(x.rank))
        x_t = b.realize(x, perm)
        if x.qp != qout:  # requantise first, so the pad value is quantized once, with the output's parameters
            moved = b.arena(x.shape, DType.INT8, qout, perm)
            b.emit(Opcode.LUT, [x_t, b.constant(requant_table(x.qp, qout))], moved)
            x_t = moved
        words = {}
        for i in range(4):
            words[f"before{i}"] = before[perm[i]] if i < x.rank else 0
            words[f"after{i}"] = after[perm[i]] if i < x.rank else 0
        words["value"] = qout.quantize_scalar(value)
        _, out = b.define(unit.output, perm, out_shape)
        b.emit(Opcode.PAD, [x_t], out, words)


@register
class UpsampleNearest(OpLowering):
    targets = ("aten.upsample_nearest2d.vec", "aten.upsample_nearest2d.default")

    def lower(self, unit: Unit, b: PayloadBuilder) -> None:
        node = unit.anchor
        x = b.operand(unit.inputs[0])
        assert x.qp is not None
        if x.rank != 4:
            raise Unsupported(f"nearest upsampling of a rank-{x.rank} tensor")
        n, c, h, w = x.shape
        out_shape = static_shape(unit.output)
        if len(out_shape) != 4 or out_shape[:2] != (n, c):
            raise Unsupported(f"unexpected output shape {out_shape}")
        oh, ow = out_shape[2], out_shape[3]
        if h * w >= 1 << 24:
            raise Unsupported("input too large to derive the index maps exactly")
        # run PyTorch's own nearest rule on a tensor of flat indices
        idx = torch.arange(h * w, dtype=torch.float32).reshape(1, 1, h, w)
        res = aten_overload(node_op(node))(idx, *node.args[1:], **node.kwargs)
        if tuple(res.shape) != (1, 1, oh, ow):
            raise Unsupported("the index maps do not match the output shape")
        flat = res[0, 0].to(torch.int64).numpy()
        y_map = flat[:, 0] // w
        x_map = flat[0, :] % w
        if not (flat == y_map[:, None] * w + x_map[None, :]).all():
            raise Unsupported("the upsampling is not separable into row and column maps")
        x_t = b.realize(x, nhwc(4))
        ym, xm = b.int32s(y_map), b.int32s(x_map)
        emit_moved(b, unit, x.qp, nhwc(4), lambda out: b.emit(Opcode.UPSAMPLE_NEAREST, [x_t, ym, xm], out))


def _tile(b: PayloadBuilder, src: int, shape: tuple[int, ...], qp: QParams, perm: Perm, dim: int,
          times: int) -> int:
    """``src`` (a ``shape`` tensor in ``perm``) repeated ``times`` along logical ``dim``: CONCATs
    of copies (up to MAX_OP_INPUTS per op, copies of a copy beyond that)."""
    axis = inverse(perm)[dim]
    pieces = [(src, 1)] * times
    cache: dict[tuple[int, ...], tuple[int, int]] = {}
    while len(pieces) > 1:
        grouped = []
        for i in range(0, len(pieces), MAX_OP_INPUTS):
            group = pieces[i:i + MAX_OP_INPUTS]
            key = tuple(t for t, _ in group)
            if len(group) == 1:
                grouped.append(group[0])
                continue
            if key not in cache:
                reps = sum(n for _, n in group)
                out = b.arena(tuple(d * reps if j == dim else d for j, d in enumerate(shape)), DType.INT8, qp, perm)
                b.emit(Opcode.CONCAT, list(key), out, {"axis": axis})
                cache[key] = (out, reps)
            grouped.append(cache[key])
        pieces = grouped
    return pieces[0][0]


@register
class Expand(OpLowering):
    """expand / expand_copy of an activation: a broadcast copy, as CONCATs of the input along
    each dim it expands (nothing at all when no dim expands)."""

    targets = ("aten.expand_copy.default", "aten.expand.default")

    def lower(self, unit: Unit, b: PayloadBuilder) -> None:
        x = b.operand(unit.inputs[0])
        qin = x.qp
        assert qin is not None
        out_shape = static_shape(unit.output)
        if len(out_shape) < x.rank:
            raise Unsupported(f"expand of {x.shape} to the lower rank {out_shape}")
        if len(out_shape) > x.rank:
            x = b.reshaped(x, (1,) * (len(out_shape) - x.rank) + x.shape)
        for d, o in zip(x.shape, out_shape, strict=True):
            if d not in (1, o):
                raise Unsupported(f"expand of {x.shape} to {out_shape}")
        perm = b.any_layout(x, nhwc(x.rank))
        cur = b.realize(x, perm)
        shape = x.shape
        for dim, times in enumerate(out_shape):
            if shape[dim] == times:
                continue
            cur = _tile(b, cur, shape, qin, perm, dim, times)
            shape = tuple(times if j == dim else s for j, s in enumerate(shape))
        qout = qdq_params(unit.output)
        if qout == qin:
            b.alias(unit.output, perm, cur)  # the tiled (or, expanding nothing, the input's) bytes
            return
        _, out = b.define(unit.output, perm)
        b.emit(Opcode.LUT, [cur, b.constant(requant_table(qin, qout))], out)
