"""Physical dimension orders of a tensor (``Perm``: physical dim i holds logical dim
``perm[i]``) and the index arithmetic between them: NHWC, inverses, which orders share bytes,
and the order of a unit-dim view that keeps its source's bytes in place."""

from __future__ import annotations

from collections.abc import Sequence

Perm = tuple[int, ...]


def identity(rank: int) -> Perm:
    return tuple(range(rank))


def nhwc(rank: int) -> Perm:
    """Channels-last for 4-D tensors; the logical order otherwise."""
    return (0, 2, 3, 1) if rank == 4 else identity(rank)


def inverse(perm: Perm) -> Perm:
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return tuple(inv)


def physical(shape: Sequence[int], perm: Perm) -> tuple[int, ...]:
    return tuple(shape[p] for p in perm)


def same_bytes(shape: Sequence[int], a: Perm, b: Perm) -> bool:
    """Whether two dimension orders lay the tensor out identically (unit dims aside)."""
    return [p for p in a if shape[p] != 1] == [p for p in b if shape[p] != 1]


def unit_dim_view(src: Sequence[int], dst: Sequence[int]) -> bool:
    """Whether ``dst`` only adds or drops unit dims of ``src`` (same bytes in any order)."""
    return [d for d in src if d != 1] == [d for d in dst if d != 1]


def view_perm(src: Sequence[int], perm: Perm, dst: Sequence[int]) -> Perm:
    """The order of the unit-dim view ``dst`` of a ``src`` tensor laid out in ``perm`` that
    keeps its bytes where they are (``dst`` unit dims go where they least disturb the order)."""
    moved = dict(zip([i for i, d in enumerate(src) if d != 1], [i for i, d in enumerate(dst) if d != 1],
                     strict=True))
    order = [moved[p] for p in perm if p in moved]
    for u in (i for i, d in enumerate(dst) if d == 1):
        at = next((k for k, p in enumerate(order) if p > u), len(order))
        order.insert(at, u)
    return tuple(order)


def perm_words(perm: Sequence[int]) -> dict[str, int]:
    p = list(perm) + list(range(len(perm), 4))
    return {f"perm{i}": p[i] for i in range(4)}


def _view_groups(src: Sequence[int], dst: Sequence[int]) -> list[tuple[list[int], list[int]]] | None:
    """The non-unit dims of ``src`` and ``dst`` in runs of equal size (a view splits or merges
    within a run), as (src dims, dst dims) index lists; None when the sizes differ."""
    s = [i for i, d in enumerate(src) if d != 1]
    t = [i for i, d in enumerate(dst) if d != 1]
    groups: list[tuple[list[int], list[int]]] = []
    i = j = 0
    while i < len(s) or j < len(t):
        gs, gt = [], []
        ps = pt = 1
        while True:
            if ps <= pt and i < len(s):
                gs.append(s[i])
                ps *= src[s[i]]
                i += 1
            elif j < len(t):
                gt.append(t[j])
                pt *= dst[t[j]]
                j += 1
            else:
                return None
            if ps == pt:
                break
        groups.append((gs, gt))
    return groups


def reshape_layout(src: Sequence[int], perm: Perm, dst: Sequence[int]) -> Perm | None:
    """The order in which a view ``dst`` of a ``src`` tensor laid out in ``perm`` has the
    same bytes, or None when the view needs another layout.  A view splits or merges runs of
    dims; it keeps the bytes when each run's dims are adjacent and in order in ``perm``."""
    groups = _view_groups(src, dst)
    if groups is None:
        return None
    owner = {d: g for g, (gs, _) in enumerate(groups) for d in gs}
    order = [p for p in perm if src[p] != 1]
    out: list[int] = []
    k = 0
    while k < len(order):
        gs, gt = groups[owner[order[k]]]
        if order[k:k + len(gs)] != gs:
            return None
        out.extend(gt)
        k += len(gs)
    for u in (i for i, d in enumerate(dst) if d == 1):
        at = next((n for n, p in enumerate(out) if p > u), len(out))
        out.insert(at, u)
    return tuple(out)


def reshape_ready(src: Sequence[int], perm: Perm, dst: Sequence[int]) -> Perm:
    """The layout nearest ``perm`` (each run of dims a view merges gathered, in order, where
    its first dim is) in which the view ``dst`` of ``src`` keeps the bytes."""
    groups = _view_groups(src, dst)
    if groups is None:
        raise ValueError(f"cannot view {tuple(src)} as {tuple(dst)}")
    owner = {d: g for g, (gs, _) in enumerate(groups) for d in gs}
    out: list[int] = []
    done: set[int] = set()
    for p in perm:
        if src[p] == 1:
            out.append(p)
        elif owner[p] not in done:
            done.add(owner[p])
            out.extend(groups[owner[p]][0])
    return tuple(out)
