"""Ops whose output reuses the input's quantization (no requantisation on ESP-NN):
pooling, spatial mean, padding, data movement, eval-mode dropout, nearest and bilinear upsampling,
cat, stack, and the pieces of split/chunk."""

from __future__ import annotations

import operator

from torch._ops import OpOverload
from torch.fx import Node
from torchao.quantization.pt2e.quantizer import QuantizationSpecBase, SharedQuantizationSpec

from ..config import EspNNQuantizationConfig
from ..context import AnnotationContext, annotate, is_annotated, is_float_tensor
from .patterns import arg, aten

_SINGLE_INPUT: frozenset[OpOverload] = frozenset({
    # pooling (max: values are a subset; avg: a convex combination stays in range)
    aten.max_pool2d.default,
    aten.avg_pool2d.default,
    aten.max_pool1d.default,
    aten.avg_pool1d.default,
    aten.adaptive_avg_pool2d.default,
    # padding
    aten.pad.default,
    aten.constant_pad_nd.default,
    # shape / data movement
    aten.view.default,
    aten.reshape.default,
    aten._unsafe_view.default,
    aten.flatten.using_ints,
    aten.unflatten.int,
    aten.squeeze.default,
    aten.squeeze.dim,
    aten.squeeze.dims,
    aten.unsqueeze.default,
    aten.permute.default,
    aten.transpose.int,
    aten.t.default,
    aten.slice.Tensor,
    aten.select.int,
    aten.narrow.default,
    aten.clone.default,
    aten.contiguous.default,
    # identity in eval mode (the in-place variants vanish in to_edge, leaving a dequantize
    # read by a quantize: sharing the input's qparams makes that pair free, not a requantisation)
    aten.dropout.default,
    aten.dropout_.default,
    aten.feature_dropout.default,
    aten.feature_dropout_.default,
    aten.alpha_dropout.default,
    aten.alpha_dropout_.default,
    aten.feature_alpha_dropout.default,
    aten.feature_alpha_dropout_.default,
    # broadcast copies values
    aten.expand.default,
    # nearest upsampling copies values; bilinear's are convex combinations of the input's
    aten.upsample_nearest2d.vec,
    aten.upsample_nearest2d.default,
    aten.upsample_bilinear2d.vec,
    aten.upsample_bilinear2d.default,
})


def _share_input(node: Node, x: Node, cfg: EspNNQuantizationConfig, ctx: AnnotationContext) -> None:
    annotate(node, {x: ctx.act_input(x, cfg)}, SharedQuantizationSpec((x, node)))


class SharedInputAnnotator:
    targets: frozenset[OpOverload] = _SINGLE_INPUT

    def annotate(self, node: Node, cfg: EspNNQuantizationConfig, ctx: AnnotationContext) -> None:
        x = node.args[0]
        if isinstance(x, Node):
            _share_input(node, x, cfg, ctx)


def _is_spatial_mean(node: Node) -> bool:
    if node.target != aten.mean.dim:
        return False
    x = node.args[0]
    val = x.meta.get("val") if isinstance(x, Node) else None
    dims = arg(node, 1, "dim")
    if val is None or dims is None or not hasattr(val, "dim"):
        return False
    rank = int(val.dim())
    dim_list = [dims] if isinstance(dims, int) else list(dims)
    return rank == 4 and sorted(d % rank for d in dim_list) == [2, 3]


class MeanAnnotator:
    """mean over H,W of an NCHW tensor is a global average pool: shares the input's
    quantization.  Other reductions get their own output observer (the result range
    can be much narrower than the input's)."""

    targets: frozenset[OpOverload] = frozenset({aten.mean.dim, aten.mean.default})

    def annotate(self, node: Node, cfg: EspNNQuantizationConfig, ctx: AnnotationContext) -> None:
        x = node.args[0]
        if not isinstance(x, Node):
            return
        if _is_spatial_mean(node):
            _share_input(node, x, cfg, ctx)
        else:
            annotate(node, {x: ctx.act_input(x, cfg)}, cfg.activation)


class CatAnnotator:
    """All inputs and the output of cat (and stack) share one set of qparams (a pure copy on device)."""

    targets: frozenset[OpOverload] = frozenset({aten.cat.default, aten.concat.default, aten.stack.default})

    def annotate(self, node: Node, cfg: EspNNQuantizationConfig, ctx: AnnotationContext) -> None:
        tensors = node.args[0]
        if not isinstance(tensors, (list, tuple)):
            return
        inputs = [t for t in tensors if isinstance(t, Node)]
        if not inputs:
            return
        first = inputs[0]
        shared = SharedQuantizationSpec((first, node))
        specs: dict[Node, QuantizationSpecBase | None] = {first: ctx.act_input(first, cfg)}
        for t in inputs[1:]:
            specs.setdefault(t, shared)
        annotate(node, specs, shared)


class SplitAnnotator:
    """split / split_with_sizes / chunk: every piece is a copy of part of the
    input, so each piece (the ``getitem`` reading one element of the result list) shares
    the input's quantization.  The split node itself returns a list and gets no output
    spec; its used pieces carry it.  Unused pieces are left alone (no observer, no
    quantize node to feed nothing)."""

    targets: frozenset[OpOverload] = frozenset({
        aten.split.Tensor,
        aten.split_with_sizes.default,
        aten.chunk.default,
    })

    def annotate(self, node: Node, cfg: EspNNQuantizationConfig, ctx: AnnotationContext) -> None:
        x = node.args[0]
        if not isinstance(x, Node) or not is_float_tensor(x):
            return
        annotate(node, {x: ctx.act_input(x, cfg)})
        shared = SharedQuantizationSpec((x, node))
        for piece in node.users:
            if piece.op != "call_function" or piece.target is not operator.getitem or not piece.users:
                continue
            if ctx.config(piece) is None or is_annotated(piece):
                continue
            annotate(piece, {}, shared)
