"""Tensor numbering that keeps the engine's decoded state small: constants last.

The engine keeps a full 20-byte tensor record (docs/engine.md, "State layout") for every tensor
up to the last one that is not a constant, and only a 4-byte offset for each constant after it:
eval needs a constant's address and nothing else.  The builder numbers tensors as it meets them,
so a convolution's weights sit between activations; renumbering them after the last activation
turns most records into offsets (DS-CNN: 32 of 45 tensors, 512 bytes of RAM).  Any order is a
valid payload; this is the order the lowering writes.
"""

from __future__ import annotations

from .format import Storage
from .model import Payload


def renumber(p: Payload, order: list[int]) -> dict[int, int]:
    """Renumber ``p``'s tensors in place so that new id k is old id ``order[k]`` (a permutation
    of every id); the ops and the io lists follow.  Returns old id -> new id."""
    if sorted(order) != list(range(len(p.tensors))):
        raise ValueError(f"not a permutation of the {len(p.tensors)} tensor ids: {order}")
    new_id = {old: new for new, old in enumerate(order)}
    p.tensors = [p.tensors[old] for old in order]
    for op in p.ops:
        op.inputs = tuple(None if i is None else new_id[i] for i in op.inputs)
        op.output = new_id[op.output]
    p.inputs = [new_id[i] for i in p.inputs]
    p.outputs = [new_id[i] for i in p.outputs]
    return new_id


def constants_last(p: Payload) -> dict[int, int]:
    """Renumber ``p``'s tensors in place: the non-constants first, then the constants, each
    group in its old order.  Returns old id -> new id."""
    order = [i for i, t in enumerate(p.tensors) if t.storage != Storage.CONST]
    order += [i for i, t in enumerate(p.tensors) if t.storage == Storage.CONST]
    return renumber(p, order)
