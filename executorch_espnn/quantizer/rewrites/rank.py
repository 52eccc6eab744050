"""Rank-5/6 data movement rewritten as rank <= 4 movement, before annotation.

The payload format stores at most 4 dims per tensor.  Models move data through higher ranks
all the time: ShuffleNet's channel shuffle (``view [N, g, C/g, H, W] -> transpose(1, 2) ->
view [N, C, H, W]``), attention's head split (``reshape [B, N, 3, H, D] -> permute(2, 0, 3,
1, 4) -> unbind``), window partitions (``view [B, nH, w, nW, w, C] -> transpose(2, 3) ->
reshape``), ``nn.MultiheadAttention``'s ``unflatten -> unsqueeze -> transpose -> squeeze``.
Such a chain only relabels and selects elements of a tensor of rank <= 4, and can be
written with rank <= 4 steps.

How: a chain of movement operators from a rank <= 4 *source* through rank > 4 tensors to a
rank <= 4 *exit* is replayed on *atoms*: the source's dims, split where a reshape splits
them, each with the range of its indices the chain keeps (select, slice).  An atom that
travels with its source neighbour through the whole chain (adjacent and in order both in
the source and in the exit) is merged with it.  The exit is then rebuilt from the source as

    reshape (to the coarse groups a slice needs)  ->  slice per sliced group  ->
    reshape (to the merged atoms)  ->  permute  ->  reshape (to the exit's shape)

skipping the steps that do nothing.  When a step would still need more than 4 dims (a
genuinely rank-5 permutation) the chain is left alone and the partitioner reports the rank.
The rewritten ops are exact data movement (the quantizer gives them the source's
quantization), so the quantized model computes the same values.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import torch
from torch.fx import GraphModule, Node

from .nodes import call, shape

aten = torch.ops.aten
MAX_RANK = 4

RESHAPES = frozenset({
    aten.view.default, aten.reshape.default, aten._unsafe_view.default, aten.unsqueeze.default,
    aten.squeeze.dim, aten.squeeze.dims, aten.squeeze.default, aten.unflatten.int,
    aten.flatten.using_ints,
})
IDENTITIES = frozenset({aten.contiguous.default, aten.clone.default, aten.alias.default})
PERMUTES = frozenset({aten.permute.default, aten.transpose.int})
MOVEMENT = RESHAPES | IDENTITIES | PERMUTES | frozenset({aten.select.int, aten.slice.Tensor})


class NotRewritable(Exception):
    pass


@dataclass(frozen=True)
class Atom:
    """A run of source indices the chain keeps: ``start + k * step`` for k < count, out of
    ``size`` consecutive (row-major) positions of the source."""

    size: int
    start: int = 0
    count: int = 0  # 0: all of size
    step: int = 1

    @property
    def n(self) -> int:
        return self.count or self.size

    @property
    def full(self) -> bool:
        return self.start == 0 and self.n == self.size and self.step == 1


class Track:
    """The chain replayed on atoms.  ``atoms`` in source order; ``dims`` the current logical
    dims, each a list of atom ids (row-major within the dim, atoms of one element left out)."""

    def __init__(self, source: tuple[int, ...]) -> None:
        self.atoms: list[Atom] = []
        self.dims: list[list[int]] = []
        for d in source:
            if d > 1:
                self.atoms.append(Atom(d))
                self.dims.append([len(self.atoms) - 1])
            else:
                self.dims.append([])
        self.order: list[int] = list(range(len(self.atoms)))  # source order of atom ids

    def size(self, d: int) -> int:
        return math.prod(self.atoms[a].n for a in self.dims[d])

    def shape(self) -> tuple[int, ...]:
        return tuple(self.size(d) for d in range(len(self.dims)))

    # ------------------------------------------------------------------ ops
    def _split(self, a: int, outer: int) -> tuple[int, int]:
        at = self.atoms[a]
        if not at.full:
            raise NotRewritable("a reshape splits a sliced dim")
        self.atoms[a] = Atom(outer)
        self.atoms.append(Atom(at.size // outer))
        b = len(self.atoms) - 1
        i = self.order.index(a)
        self.order.insert(i + 1, b)
        for dim in self.dims:
            if a in dim:
                dim.insert(dim.index(a) + 1, b)
        return a, b

    def _merge_runs(self, flat: list[int]) -> list[int]:
        """Merge neighbours of ``flat`` that are also source neighbours and whole."""
        out: list[int] = []
        for a in flat:
            if out:
                p = out[-1]
                pi = self.order.index(p)
                if (pi + 1 < len(self.order) and self.order[pi + 1] == a
                        and self.atoms[p].full and self.atoms[a].full):
                    self.atoms[p] = Atom(self.atoms[p].size * self.atoms[a].size)
                    self.order.remove(a)
                    continue
            out.append(a)
        return out

    def reshape(self, new: tuple[int, ...]) -> None:
        flat = self._merge_runs([a for d in self.dims for a in d])
        dims: list[list[int]] = []
        i = 0
        for n in new:
            cur: list[int] = []
            need = n
            while need > 1:
                if i >= len(flat):
                    raise NotRewritable("reshape sizes do not match")
                a = flat[i]
                c = self.atoms[a].n
                if need % c == 0:
                    cur.append(a)
                    need //= c
                    i += 1
                elif c % need == 0:
                    outer, inner = self._split(a, need)
                    cur.append(outer)
                    flat[i] = inner
                    need = 1
                else:
                    raise NotRewritable(f"a reshape to {new} cuts across dims")
            dims.append(cur)
        if i != len(flat):
            raise NotRewritable("reshape sizes do not match")
        self.dims = dims

    def permute(self, perm: list[int]) -> None:
        self.dims = [self.dims[p] for p in perm]

    def select(self, d: int, index: int) -> None:
        idx = index
        for a in reversed(self.dims[d]):
            at = self.atoms[a]
            k = idx % at.n
            idx //= at.n
            self.atoms[a] = replace(at, start=at.start + k * at.step, count=1, step=1)
        del self.dims[d]

    def slice(self, d: int, start: int, end: int, step: int) -> None:
        atoms = self.dims[d]
        count = len(range(start, end, step))
        if count < 1:
            raise NotRewritable("empty slice")
        if count == self.size(d):
            return
        if len(atoms) == 1:
            at = self.atoms[atoms[0]]
            self.atoms[atoms[0]] = replace(at, start=at.start + start * at.step, count=count, step=at.step * step)
        else:
            inner = math.prod(self.atoms[a].n for a in atoms[1:])
            if step != 1 or start % inner or count % inner:
                raise NotRewritable("a slice across several merged dims")
            at = self.atoms[atoms[0]]
            self.atoms[atoms[0]] = replace(at, start=at.start + (start // inner) * at.step,
                                           count=count // inner, step=at.step)
        self.dims[d] = [a for a in atoms if self.atoms[a].n > 1]


def _norm(d: int, rank: int) -> int:
    return d + rank if d < 0 else d


def _replay(track: Track, node: Node) -> None:
    out = shape(node)
    if out is None:
        raise NotRewritable("no static shape")
    t = node.target
    rank = len(track.dims)
    if t in RESHAPES:
        track.reshape(out)
    elif t in IDENTITIES:
        if t is aten.clone.default and node.kwargs.get("memory_format") not in (
                None, torch.contiguous_format, torch.preserve_format):
            raise NotRewritable("clone to another memory format")
    elif t is aten.permute.default:
        track.permute([_norm(int(d), rank) for d in node.args[1]])  # type: ignore[union-attr, arg-type]
    elif t is aten.transpose.int:
        a, b = _norm(int(node.args[1]), rank), _norm(int(node.args[2]), rank)  # type: ignore[arg-type]
        perm = list(range(rank))
        perm[a], perm[b] = perm[b], perm[a]
        track.permute(perm)
    elif t is aten.select.int:
        d = _norm(int(node.args[1]), rank)  # type: ignore[arg-type]
        idx = int(node.args[2])  # type: ignore[arg-type]
        track.select(d, idx + track.size(d) if idx < 0 else idx)
    elif t is aten.slice.Tensor:
        args = list(node.args) + [None] * (5 - len(node.args))
        d = _norm(int(args[1] if args[1] is not None else 0), rank)  # type: ignore[arg-type]
        step = int(args[4] if args[4] is not None else 1)  # type: ignore[arg-type]
        if step < 1:
            raise NotRewritable("slice step")
        start, end, _ = slice(args[2], args[3], step).indices(track.size(d))
        track.slice(d, start, end, step)
    else:  # pragma: no cover - _chain only collects MOVEMENT targets
        raise NotRewritable(str(t))
    if track.shape() != out:
        raise NotRewritable(f"replaying {t} gave {track.shape()}, the graph says {out}")


def _groups(track: Track) -> tuple[list[list[int]], list[list[int]]]:
    """(coarse groups for the slices, fine groups) over the source-ordered atoms."""
    coarse: list[list[int]] = []
    for a in track.order:
        at = track.atoms[a]
        if coarse and at.full and track.atoms[coarse[-1][0]].step == 1:
            coarse[-1].append(a)
        else:
            coarse.append([a])
    live = [a for a in track.order if track.atoms[a].n > 1]
    out_flat = [a for d in track.dims for a in d]
    pos = {a: i for i, a in enumerate(out_flat)}
    fine: list[list[int]] = []
    for a in live:
        if fine and pos[fine[-1][-1]] + 1 == pos[a]:
            fine[-1].append(a)
        else:
            fine.append([a])
    return coarse, fine


def _rebuild(gm: GraphModule, source: Node, track: Track, exit_: Node) -> Node:
    src_shape = shape(source)
    out_shape = shape(exit_)
    assert src_shape is not None and out_shape is not None
    coarse, fine = _groups(track)
    if len(fine) > MAX_RANK:
        raise NotRewritable(f"the movement needs {len(fine)} dims")
    cur = source
    cur_shape = src_shape

    def reshape(to: tuple[int, ...]) -> None:
        nonlocal cur, cur_shape
        if to != cur_shape:
            cur = call(gm, aten.reshape.default, (cur, list(to)), like=exit_)
            cur_shape = to

    sliced = [g for g in coarse if not track.atoms[g[0]].full]
    if sliced:
        if len(coarse) > MAX_RANK:
            raise NotRewritable(f"the slices need {len(coarse)} dims")
        reshape(tuple(math.prod(track.atoms[a].size for a in g) for g in coarse))
        for i, g in enumerate(coarse):
            first = track.atoms[g[0]]
            if first.full:
                continue
            inner = math.prod(track.atoms[a].size for a in g[1:])
            start = first.start * inner
            stop = (first.start + (first.n - 1) * first.step + 1) * inner
            cur = call(gm, aten.slice.Tensor, (cur, i, start, stop, first.step), like=exit_)
        cur_shape = shape(cur)  # type: ignore[assignment]
    reshape(tuple(math.prod(track.atoms[a].n for a in g) for g in fine))
    out_flat = [a for d in track.dims for a in d]
    order = sorted(range(len(fine)), key=lambda i: out_flat.index(fine[i][0]))
    if order != list(range(len(fine))):
        cur = call(gm, aten.permute.default, (cur, order), like=exit_)
        cur_shape = shape(cur)  # type: ignore[assignment]
    reshape(out_shape)
    if cur is source:  # the chain does nothing: keep a node for the exit's users to read
        cur = call(gm, aten.reshape.default, (source, list(out_shape)), like=exit_)
    return cur


def _rank(node: object) -> int:
    s = shape(node) if isinstance(node, Node) else None
    return -1 if s is None else len(s)


def _chain(exit_: Node) -> tuple[Node, list[Node]] | None:
    """(source, chain from the source to the exit) when ``exit_`` leaves a high-rank chain."""
    chain = [exit_]
    cur = exit_.args[0] if exit_.args else None
    while isinstance(cur, Node) and cur.op == "call_function" and cur.target in MOVEMENT and _rank(cur) > MAX_RANK:
        chain.append(cur)
        cur = cur.args[0]
    if len(chain) < 2 or not isinstance(cur, Node) or not 0 <= _rank(cur) <= MAX_RANK:
        return None
    return cur, chain[::-1]


def rewrite_rank(gm: GraphModule, quantized: Callable[[Node], bool]) -> bool:
    changed = False
    for node in list(gm.graph.nodes):
        if (node.op != "call_function" or node.target not in MOVEMENT or not quantized(node)
                or not 0 <= _rank(node) <= MAX_RANK):
            continue
        found = _chain(node)
        if found is None:
            continue
        source, chain = found
        src_shape = shape(source)
        assert src_shape is not None
        track = Track(src_shape)
        try:
            for n in chain:
                _replay(track, n)
            new = _rebuild(gm, source, track, node)
        except NotRewritable:
            continue
        node.replace_all_uses_with(new)
        for n in reversed(chain):
            if not n.users:
                gm.graph.erase_node(n)
        changed = True
    return changed
