"""``F.scaled_dot_product_attention`` -> ``softmax(q @ k^T * scale [+ mask]) @ v``.

torch.export keeps SDPA as one operator, which the quantizer cannot quantize, and ``to_edge``
later decomposes it into ``mul -> expand -> bmm -> softmax`` plus a masking chain
(``eq(-inf) -> logical_not -> any -> logical_not -> where(full_like(0), softmax)``, which
zeroes rows whose scores are all ``-inf``).  Decomposed here, before annotation, into the
operators the delegate runs (activation x activation ``matmul``, a scalar ``mul``,
``softmax``), every intermediate is quantized.  The masking chain does not appear: it only
matters for scores of ``-inf``, which an int8 tensor never holds.

Rewritten: no mask or an additive float mask, no dropout (eval), ``is_causal=False``, an
optional ``scale``, and ``enable_gqa`` only when the head counts agree.  A boolean mask or
``is_causal`` (scores set to ``-inf``, which int8 cannot represent) stays SDPA: to_edge's
decomposition of it stays on the CPU, the partitioner naming its masking operators;
``sdpa_refusal`` says why it was not rewritten (and what to pass instead).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch.fx import GraphModule, Node

from .nodes import call, shape, tensor_meta

aten = torch.ops.aten
SDPA = aten.scaled_dot_product_attention.default


def _arg(node: Node, i: int, name: str, default: object) -> object:
    if len(node.args) > i:
        return node.args[i]
    return node.kwargs.get(name, default)


def sdpa_refusal(node: Node) -> str | None:
    """Why an SDPA call is not decomposed (None: it is)."""
    q, k, v = node.args[:3]
    mask = _arg(node, 3, "attn_mask", None)
    if float(_arg(node, 4, "dropout_p", 0.0) or 0.0) != 0.0:  # type: ignore[arg-type]
        return "scaled_dot_product_attention with dropout"
    if _arg(node, 5, "is_causal", False):
        return ("scaled_dot_product_attention with is_causal=True: the causal mask sets scores to -inf, "
                "which an int8 tensor cannot hold; add a float mask of large negative values instead")
    if isinstance(mask, Node):
        val = tensor_meta(mask)
        if val is None or not val.dtype.is_floating_point:
            return ("scaled_dot_product_attention with a boolean mask: masked scores become -inf, which an "
                    "int8 tensor cannot hold; pass an additive float mask instead")
    elif mask is not None:
        return "scaled_dot_product_attention with a mask that is not a tensor"
    shapes = [shape(t) if isinstance(t, Node) else None for t in (q, k, v)]
    if any(s is None or len(s) < 2 for s in shapes):
        return "scaled_dot_product_attention without static shapes"
    sq, sk, sv = shapes
    assert sq is not None and sk is not None and sv is not None
    if sq[:-2] != sk[:-2] or sk[:-2] != sv[:-2]:
        return "scaled_dot_product_attention whose query, key and value have different batch or head counts"
    return None


def rewrite_sdpa(gm: GraphModule, quantized: Callable[[Node], bool]) -> bool:
    changed = False
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target is not SDPA or not quantized(node):
            continue
        if sdpa_refusal(node) is not None:
            continue
        q, k, v = node.args[:3]
        mask = _arg(node, 3, "attn_mask", None)
        assert isinstance(q, Node)
        qs = shape(q)
        assert qs is not None
        scale = node.kwargs.get("scale")
        scale = 1.0 / math.sqrt(qs[-1]) if scale is None else float(scale)
        kt = call(gm, aten.transpose.int, (k, -2, -1), like=node)
        scores = call(gm, aten.matmul.default, (q, kt), like=node)
        scores = call(gm, aten.mul.Tensor, (scores, scale), like=node)
        if isinstance(mask, Node):
            scores = call(gm, aten.add.Tensor, (scores, mask), like=node)
        probs = call(gm, aten.softmax.int, (scores, -1), like=node)
        out = call(gm, aten.matmul.default, (probs, v), like=node)
        node.replace_all_uses_with(out)
        gm.graph.erase_node(node)
        changed = True
    return changed
