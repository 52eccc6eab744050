"""Eval-mode batch norms that no convolution absorbs: folded into the linear they feed, or
turned into a depthwise 1x1 convolution.

PT2E folds a batch norm that *follows* a convolution (``prepare_pt2e``), nothing else.  A
``BatchNorm1d`` in front of a ``Linear`` (EfficientViT-M's ``BNLinear`` classifier) is
``y = W (a * x + c) + b`` with ``a = gamma / sqrt(var + eps)``, ``c = beta - mean * a``: the
linear with weight ``W * a`` (column-wise) and bias ``W @ c + b``, exactly what the
architecture's own ``fuse()`` does.  Any other eval batch norm is a per-channel ``a * x + c``,
i.e. a depthwise convolution with a 1x1 kernel: its weights are quantized per channel (each
channel's single weight exactly at +-127 of its scale) and ``c`` is its bias, one op on the
device with the accuracy of a convolution.  ``[N, C]`` inputs are viewed as ``[N, C, 1, 1]``.
Training-mode batch norms (QAT) are left to PT2E.
"""

from __future__ import annotations

import operator
from collections.abc import Callable

import torch
from torch.fx import GraphModule, Node

from .nodes import attr_value, call, constant, shape

aten = torch.ops.aten


def _params(gm: GraphModule, node: Node) -> tuple[Node, torch.Tensor, torch.Tensor] | None:
    """(input, a, c) of an eval batch norm ``a * x + c`` over dim 1, or None."""
    t = node.target
    if t is aten.batch_norm.default:
        x, w, b, mean, var = node.args[:5]
        training = node.args[5] if len(node.args) > 5 else node.kwargs.get("training", False)
        eps = node.args[7] if len(node.args) > 7 else node.kwargs.get("eps", 1e-5)
        if training:
            return None
    elif t is aten._native_batch_norm_legit_no_training.default:
        x, w, b, mean, var = node.args[:5]
        eps = node.args[6] if len(node.args) > 6 else node.kwargs.get("eps", 1e-5)
    else:
        return None
    rm, rv = attr_value(gm, mean), attr_value(gm, var)
    if not isinstance(x, Node) or rm is None or rv is None:
        return None
    wv = attr_value(gm, w) if w is not None else None
    bv = attr_value(gm, b) if b is not None else None
    if (w is not None and wv is None) or (b is not None and bv is None):
        return None
    with torch.no_grad():
        inv = torch.rsqrt(rv.double() + float(eps))  # type: ignore[arg-type]
        a = inv * (wv.double() if wv is not None else 1.0)
        c = (bv.double() if bv is not None else 0.0) - rm.double() * a
    return x, a, c


def _result(node: Node) -> Node | None:
    """The node holding the normalized tensor (the batch norm, or getitem 0 of the tuple one)."""
    if node.target is aten.batch_norm.default:
        return node
    items = [u for u in node.users if u.target is operator.getitem]
    if len(items) != len(node.users) or any(u.args[1] != 0 for u in items if u.users) or len(items) != 1:
        return None
    return items[0]


def _fold_into_linear(gm: GraphModule, out: Node, x: Node, a: torch.Tensor, c: torch.Tensor) -> bool:
    if len(out.users) != 1:
        return False
    (lin,) = out.users
    if lin.target is not aten.linear.default or lin.args[0] is not out:
        return False
    xs = shape(x)
    if xs is None or len(xs) != 2:  # BatchNorm1d over the features of [N, C]
        return False
    w = attr_value(gm, lin.args[1])
    bias_node = lin.args[2] if len(lin.args) > 2 else lin.kwargs.get("bias")
    bl = attr_value(gm, bias_node) if bias_node is not None else None
    if w is None or w.dim() != 2 or w.shape[1] != a.numel() or (bias_node is not None and bl is None):
        return False
    with torch.no_grad():
        w2 = (w.double() * a[None, :]).to(w.dtype)
        b2 = (w.double() @ c + (bl.double() if bl is not None else 0.0)).to(w.dtype)
    wn = constant(gm, "_espnn_bn_linear_weight", w2, like=lin)
    bn = constant(gm, "_espnn_bn_linear_bias", b2, like=lin)
    new = call(gm, aten.linear.default, (x, wn, bn), like=lin)
    lin.replace_all_uses_with(new)
    gm.graph.erase_node(lin)
    return True


def _as_depthwise(gm: GraphModule, out: Node, x: Node, a: torch.Tensor, c: torch.Tensor) -> bool:
    xs = shape(x)
    if xs is None or len(xs) not in (2, 3, 4) or xs[1] != a.numel():
        return False
    ch = a.numel()
    val = out.meta.get("val")
    dtype = val.dtype if isinstance(val, torch.Tensor) else torch.float32
    k = (1,) * (1 if len(xs) == 3 else 2)
    wn = constant(gm, "_espnn_bn_weight", a.reshape(ch, 1, *k).to(dtype), like=out)
    bn = constant(gm, "_espnn_bn_bias", c.to(dtype), like=out)
    src = x if len(xs) != 2 else call(gm, aten.view.default, (x, [xs[0], ch, 1, 1]), like=out)
    conv = aten.conv1d.default if len(xs) == 3 else aten.conv2d.default
    y = call(gm, conv, (src, wn, bn, [1] * len(k), [0] * len(k), [1] * len(k), ch), like=out)
    if len(xs) == 2:
        y = call(gm, aten.view.default, (y, list(xs)), like=out)
    out.replace_all_uses_with(y)
    return True


def rewrite_batch_norm(gm: GraphModule, quantized: Callable[[Node], bool]) -> bool:
    changed = False
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or not quantized(node):
            continue
        found = _params(gm, node)
        if found is None:
            continue
        out = _result(node)
        if out is None:
            continue
        x, a, c = found
        if not (_fold_into_linear(gm, out, x, a, c) or _as_depthwise(gm, out, x, a, c)):
            continue
        if out is not node and not out.users:
            gm.graph.erase_node(out)
        if not node.users:
            gm.graph.erase_node(node)
        changed = True
    return changed
