"""Graph rewrites before annotation (``EspNNQuantizer.transform_for_annotation``).

Each rewrite replaces a construct the delegate cannot take as it is by equivalent operators
it can (the ATen graph of ``torch.export``, before ``prepare_pt2e`` annotates it), so the
quantized model ``convert_pt2e`` produces computes exactly what the device computes:

* ``autocast``: a ``with torch.autocast(enabled=False)`` block (a ``wrap_with_autocast``
  higher-order operator) is inlined: its operators are quantized as any others;
* ``batch_norm``: an eval batch norm no convolution absorbs is folded into the linear it
  feeds, or becomes a depthwise 1x1 convolution;
* ``unbind``: each piece becomes a ``select``;
* ``recurrent``: GRU and LSTM layers and cells become their time steps (linear, add, mul,
  sigmoid, tanh, select, stack);
* ``attention``: ``scaled_dot_product_attention`` becomes ``softmax(q @ k^T * scale) @ v``;
* ``rank``: data movement through rank-5/6 tensors is rebuilt with rank <= 4 steps;
* ``reshape``: a reshape of a non-contiguous tensor becomes ``contiguous`` + ``view``;
* ``scalars``: a Python int operand of add/sub/mul/div becomes the float it is promoted to.

Only nodes whose region is quantized (its config is not ``None``) are rewritten, so a region
left in float keeps its operators as the user wrote them.
"""

from __future__ import annotations

from collections.abc import Callable

from torch.fx import GraphModule, Node

from .attention import rewrite_sdpa, sdpa_refusal
from .autocast import rewrite_autocast
from .batch_norm import rewrite_batch_norm
from .rank import rewrite_rank
from .recurrent import ROLE_META, recurrent_refusal, rewrite_recurrent
from .reshape import rewrite_reshape
from .scalars import rewrite_int_scalars
from .unbind import rewrite_unbind

REWRITES: tuple[Callable[[GraphModule, Callable[[Node], bool]], bool], ...] = (
    rewrite_autocast,  # first: the others then see the block's operators
    rewrite_batch_norm,
    rewrite_unbind,
    rewrite_recurrent,
    rewrite_sdpa,
    rewrite_rank,
    rewrite_reshape,
    rewrite_int_scalars,
)


def rewrite_for_annotation(gm: GraphModule, quantized: Callable[[Node], bool]) -> GraphModule:
    """Apply every rewrite, in order; returns ``gm`` (changed in place)."""
    changed = False
    for rewrite in REWRITES:
        changed = rewrite(gm, quantized) or changed
    if changed:
        for node in list(gm.graph.nodes):  # weights of the batch norms and linears replaced
            if node.op == "get_attr" and not node.users:
                gm.graph.erase_node(node)
        gm.graph.lint()
        gm.recompile()
    return gm


__all__ = ["REWRITES", "ROLE_META", "recurrent_refusal", "rewrite_for_annotation", "sdpa_refusal"]
