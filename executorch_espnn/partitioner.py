"""``EspNNPartitioner``: which parts of an int8 edge program run on ESP-NN.

1. Before decomposition (``transform_for_pre_decomposition``) every dequantize node gets
   its own copy per reader, per tensor and per channel, so each quantized operator owns
   the q/dq nodes around it.  (ExecuTorch's ``DuplicateDequantNodePass`` does the same on
   edge graphs, but ``partition`` itself must not change the graph: ExecuTorch checks it.)
2. Each operator is grouped with its dequantize inputs, constant weights, fused
   clamp and output quantize into a unit (``units.match_unit``) and *lowered
   on its own*; the ops it produces go through the payload validator.  Anything that
   refuses — a float operator, an unknown one, a value the engine cannot represent —
   stays on the CPU with the reason.
3. The accepted units are merged into convex partitions by ExecuTorch's
   ``GroupBasedPartitioner`` (a merge that would create a cycle is never made).
4. Quantize nodes reading float tensors from outside, and dequantize nodes whose
   readers stay on the CPU (or are graph outputs), join the partition next to them,
   so a fully supported model has float inputs and outputs and no CPU operators.  With
   ``int8_io=True`` (``lower(..., io="int8")``) the program's own boundary quantize/dequantize
   nodes stay outside, for ExecuTorch's QuantizeInputs/QuantizeOutputs to remove
   (``program_io``).
5. Each partition is lowered once more as a whole; one that exceeds the engine's
   limits is split into consecutive (hence convex) pieces that fit.
6. Nodes are tagged, constants follow their users (``tag_constant_data``), and one
   ``OpDecision`` per operator is recorded in ``partitioner.decisions``; per partition,
   ``partitioner.partition_starts`` says why it starts where it does (the limit that split
   it off, or the CPU operators between it and an earlier partition).

A dequantize read directly by a quantize (left by an operator that vanished in ``to_edge``,
such as eval-mode ``dropout_``) is a unit too (``units.is_requantize``), so it never ends a
partition.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from executorch.exir.backend.canonical_partitioners.group_partitioner import GroupBasedPartitioner
from executorch.exir.backend.partitioner import DelegationSpec, Partitioner, PartitionResult
from executorch.exir.backend.utils import tag_constant_data
from torch._subclasses.fake_tensor import FakeTensor
from torch.export import ExportedProgram
from torch.fx import GraphModule, Node
from torch.fx.passes.operator_support import OperatorSupportBase

from .backend import EspNNDelegateBackend, LoweringOptions, compile_specs, parse_target
from .decisions import OpDecision
from .errors import StrictModeError
from .graph.constants import GraphContext
from .graph.names import GETITEM, is_dequantize, is_qdq, is_quantize, node_op
from .graph.qdq import duplicate_dequantize
from .graph.source import source_location
from .ops import Registry, Unit, build_registry
from .ops.activation import aten_overload
from .payload import PayloadError
from .payload_builder import LimitExceeded, PayloadBuilder
from .program_io import io_boundary
from .units import build_payload, is_anchor, match_unit
from .unsupported import Unsupported


class _InSet(OperatorSupportBase):
    def __init__(self, nodes: set[Node]) -> None:
        self.nodes = nodes

    def is_node_supported(self, submodules: Any, node: Node) -> bool:
        return node in self.nodes


@dataclass
class _Piece:
    """A partition under construction: its units plus absorbed boundary nodes."""

    units: list[Unit]
    boundary: list[Node]
    # why the partition starts where it does, when a limit split it off the previous piece
    starts: str = ""

    def nodes(self) -> set[Node]:
        out: set[Node] = set(self.boundary)
        for u in self.units:
            out.update(u.nodes)
        return out


def _closure(start: set[Node], step: Callable[[Node], Sequence[Node]]) -> set[Node]:
    """Every node reachable from ``start`` by ``step`` (inputs or users), ``start`` excluded."""
    seen: set[Node] = set()
    stack = [m for n in start for m in step(n) if m not in start]
    while stack:
        n = stack.pop()
        if n in seen or n in start:
            continue
        seen.add(n)
        stack.extend(step(n))
    return seen


def _name_cpu(nodes: Sequence[Node], reason: Callable[[Node], str]) -> str:
    """'CPU operator aten.exp.default (aten_exp_default: no ESP-NN lowering)' for the first
    three of ``nodes`` (graph order): the operators, or the quantize/dequantize nodes when
    only those are on the CPU."""
    ops = [n for n in nodes if not is_qdq(n)] or list(nodes)
    named = [f"{node_op(n)} ({n.name}: {reason(n)})" for n in ops[:3]]
    more = f" and {len(ops) - 3} more" if len(ops) > 3 else ""
    return f"CPU operator{'s' if len(ops) > 1 else ''} " + "; ".join(named) + more


def _limit_reason(err: Exception, unit: Unit) -> str:
    """Why a partition starts at ``unit``: what the previous one would exceed with it."""
    what = err.reason if isinstance(err, Unsupported) else str(err)
    anchor = unit.anchor
    with_it = f"here: with {node_op(anchor)} ({anchor.name}) the previous partition"
    if not isinstance(err, LimitExceeded):
        return f"{with_it} could not be lowered as one payload: {what}"
    tail = f" (limit {err.limit})" if err.limit else ""
    return f"{with_it} would exceed an engine limit: {what}{tail}"


class EspNNPartitioner(Partitioner):  # type: ignore[misc]  # executorch is untyped
    """Partition an int8 (PT2E) edge program for ``EspNNDelegateBackend``.

    ``target`` selects the chip whose ESP-NN scratch sizes the payload carries
    ("esp32s3", "esp32", …, or "generic"/"host").  With ``allow_cpu_fallback=False``
    any operator left on the CPU raises ``StrictModeError`` naming each one and why.
    ``options`` (see ``backend.LoweringOptions``) are passed to preprocess as a compile spec.
    """

    def __init__(self, target: str = "esp32s3", allow_cpu_fallback: bool = True, *, int8_io: bool = False,
                 **options: Any) -> None:
        super().__init__()
        self.target = parse_target(target)
        self.allow_cpu_fallback = bool(allow_cpu_fallback)
        # int8 program I/O (program_io): the program's boundary quantize/dequantize nodes stay
        # outside every delegate, for ExecuTorch's QuantizeInputs/QuantizeOutputs to remove
        self.int8_io = bool(int8_io)
        self._io_boundary: set[Node] = set()
        self.options = LoweringOptions.from_dict(options)
        self.delegation_spec = DelegationSpec(
            EspNNDelegateBackend.__name__, compile_specs(self.target, self.options)
        )
        self.decisions: list[OpDecision] = []
        # per partition (graph order): where and why it starts, completing "partition i
        # starts ...": at the model's inputs, after the CPU operators between it and an
        # earlier partition, or here: an engine limit (the report prints it)
        self.partition_starts: list[str] = []
        self._registry: Registry = build_registry()
        # ATen nodes ops_to_not_decompose let decompose, by name, with the reason
        self._decomposed: dict[str, str] = {}
        # nodes a partition-level check (limits) left on the CPU although they lower on their own
        self._left_out: set[str] = set()
        # real constants seen in the ATen program, by state-dict key (the partitioner
        # itself only gets FakeTensors)
        self._known: dict[str, torch.Tensor] = {}

    def _remember_constants(self, ep: ExportedProgram) -> None:
        for table in (ep.state_dict, ep.constants):
            for key, t in table.items():
                if isinstance(t, torch.Tensor) and not isinstance(t, FakeTensor):
                    self._known[str(key)] = t

    def transform_for_pre_decomposition(self, exported_program: ExportedProgram) -> ExportedProgram:
        self._remember_constants(exported_program)
        duplicate_dequantize(exported_program.graph_module)
        return exported_program

    # ------------------------------------------------------------------ helpers
    def _unit_for(self, node: Node, ctx: GraphContext) -> Unit:
        """Match and trial-lower the unit anchored at ``node`` (raises Unsupported)."""
        low = self._registry.get(node_op(node))
        if low is None:
            raise Unsupported(f"{node_op(node)} has no ESP-NN lowering")
        unit = match_unit(node, low, ctx)
        self._trial(unit, ctx)
        return unit

    def _trial(self, unit: Unit, ctx: GraphContext) -> None:
        b = PayloadBuilder(ctx, self.target, self.options.limits)
        seen: set[Node] = set()
        for dq in unit.inputs:
            src = dq.args[0]
            if not isinstance(src, Node):
                raise Unsupported(f"{dq.name} does not read a tensor")
            if src not in seen:
                seen.add(src)
                b.add_input(src)
        try:
            unit.lowering.lower(unit, b)
            b.finish(unit.outputs)
        except Unsupported:
            raise
        except PayloadError as e:
            raise Unsupported(f"the payload validator refuses it: {e}") from None
        except Exception as e:  # a lowering bug must not take the whole export down
            raise Unsupported(
                f"internal error while lowering ({type(e).__name__}: {e}); please report it"
            ) from None

    # ------------------------------------------------------- ops_to_not_decompose
    def ops_to_not_decompose(
        self, ep: ExportedProgram
    ) -> tuple[list[torch._ops.OpOverload], Callable[[Node], bool] | None]:
        self._remember_constants(ep)
        names = self._registry.preserved()
        ops = [aten_overload(n) for n in names]
        wanted = set(names)
        ctx = GraphContext(ep, self._known)

        def keep(node: Node) -> bool:
            if node.op != "call_function" or node_op(node) not in wanted:
                return False
            if node.name in self._left_out:
                return False
            try:
                self._unit_for(node, ctx)
            except Unsupported as e:
                self._decomposed[node.name] = f"{node_op(node)} ({node.name}): {e.reason}"
                return False
            return True

        return ops, keep

    # ---------------------------------------------------------------- partition
    def partition(self, exported_program: ExportedProgram) -> PartitionResult:
        ep = exported_program
        gm = ep.graph_module
        ctx = GraphContext(ep, self._known)
        nodes = list(gm.graph.nodes)
        order = {n: i for i, n in enumerate(nodes)}
        self._io_boundary = io_boundary(ep) if self.int8_io else set()

        units: list[Unit] = []
        reasons: dict[Node, str] = {}
        claimed: set[Node] = set()
        for n in nodes:
            if n in claimed or not is_anchor(n):
                continue
            try:
                unit = self._unit_for(n, ctx)
            except Unsupported as e:
                if not is_qdq(n):  # a quantize that cannot requantize keeps its boundary reason
                    reasons[n] = e.reason
                continue
            if any(m in claimed for m in unit.nodes):
                reasons[n] = "shares quantize/dequantize nodes with another delegated operator"
                continue
            units.append(unit)
            claimed.update(unit.nodes)

        pieces = self._group(gm, units)
        pieces = self._absorb_boundaries(nodes, pieces)
        final: list[_Piece] = []
        for piece in pieces:
            final.extend(self._fit(piece, ctx, order, reasons))
        final.sort(key=lambda p: min(order[n] for n in p.nodes()))

        tags: dict[str, DelegationSpec] = {}
        where: dict[Node, int] = {}
        for i, piece in enumerate(final):
            tag = f"tag{i}"
            tags[tag] = self.delegation_spec
            for n in piece.nodes():
                n.meta["delegation_tag"] = tag
                where[n] = i
        tag_constant_data(ep)
        self.decisions = self._decide(nodes, where, reasons, final, set(ep.graph_signature.user_inputs))
        self.partition_starts = self._start_reasons(final, where, reasons, order)
        self._check_strict()
        return PartitionResult(tagged_exported_program=ep, partition_tags=tags)

    def _group(self, gm: GraphModule, units: list[Unit]) -> list[_Piece]:
        if not units:
            return []
        support = _InSet({n for u in units for n in u.nodes})
        proposed = GroupBasedPartitioner(
            gm, support, allows_single_node_partition=True, node_groups=[u.nodes for u in units]
        ).propose_partitions()
        owner = {n: u for u in units for n in u.nodes}
        pieces: list[_Piece] = []
        for part in proposed:
            members: dict[int, Unit] = {}
            for n in part.nodes:
                u = owner[n]
                members.setdefault(id(u), u)
            pieces.append(_Piece(list(members.values()), []))
        return pieces

    def _absorb_boundaries(self, nodes: Sequence[Node], pieces: list[_Piece]) -> list[_Piece]:
        where: dict[Node, int] = {}
        for i, p in enumerate(pieces):
            for n in p.nodes():
                where[n] = i
        for n in nodes:  # quantize nodes reading a float tensor from outside
            if not is_quantize(n) or n in where or n in self._io_boundary:
                continue
            users = list(n.users)
            homes = {where.get(u) for u in users}
            if users and all(is_dequantize(u) for u in users) and len(homes) == 1 and None not in homes:
                (home,) = homes
                assert home is not None
                pieces[home].boundary.append(n)
                where[n] = home
        for n in nodes:  # dequantize nodes whose readers stay outside
            if not is_dequantize(n) or n in where or n in self._io_boundary:
                continue
            src = n.args[0]
            if isinstance(src, Node) and src in where:
                i = where[src]
                pieces[i].boundary.append(n)
                where[n] = i
        return pieces

    def _fit(self, piece: _Piece, ctx: GraphContext, order: dict[Node, int], reasons: dict[Node, str]) -> list[_Piece]:
        """Lower the piece as a whole; split it into consecutive pieces if it does not fit."""
        # a topological order of the units (a unit's first quantize precedes every reader
        # of any of its results), so consecutive chunks stay convex
        units = sorted(piece.units, key=lambda u: min(order[q] for q in u.outputs))
        absorbed_q = [n for n in piece.boundary if is_quantize(n)]
        absorbed_dq = [n for n in piece.boundary if is_dequantize(n)]
        taken: set[Node] = set()

        def make(chunk: list[Unit]) -> _Piece:
            inside: set[Node] = {n for u in chunk for n in u.nodes}
            extra: list[Node] = []
            for q in absorbed_q:
                if q not in taken and any(u in inside for u in q.users):
                    extra.append(q)
            inside.update(extra)
            for dq in absorbed_dq:
                if dq.args[0] in inside:
                    extra.append(dq)
            return _Piece(chunk, extra)

        def fits(candidate: _Piece) -> Exception | None:
            try:
                self._dry_run(candidate, ctx, order)
            except (Unsupported, PayloadError) as e:
                return e
            return None

        out: list[_Piece] = []
        # why the next chunk cannot join the last one: (the error, the unit that broke it)
        split: tuple[Exception, Unit] | None = None

        def add(chunk: _Piece) -> None:
            nonlocal split
            if out and split is not None:
                chunk.starts = _limit_reason(split[0], split[1])
            split = None
            out.append(chunk)

        s = 0
        while s < len(units):
            whole = make(units[s:])
            whole_err = fits(whole)
            if whole_err is None:
                add(whole)
                break
            single = make(units[s:s + 1])
            err = fits(single)
            if err is not None:
                # without the absorbed quantize/dequantize (int8 in and out) it may still fit
                bare = _Piece(units[s:s + 1], [])
                if fits(bare) is None:
                    add(bare)
                    split = (err, units[s])
                    s += 1
                    continue
                u = units[s]
                why = err.reason if isinstance(err, Unsupported) else str(err)
                if not isinstance(err, LimitExceeded):
                    why = f"cannot be lowered within its partition: {why}"
                for n in u.compute:
                    reasons[n] = why
                    self._left_out.add(n.name)
                s += 1
                continue
            lo, hi = s + 1, len(units)  # units[s:lo] fits, units[s:hi] does not
            hi_err = whole_err
            while hi - lo > 1:
                mid = (lo + hi) // 2
                mid_err = fits(make(units[s:mid]))
                if mid_err is None:
                    lo = mid
                else:
                    hi, hi_err = mid, mid_err
            chunk = make(units[s:lo])
            taken.update(n for n in chunk.boundary if is_quantize(n))
            add(chunk)
            split = (hi_err, units[lo])
            s = lo
        return out

    def _dry_run(self, piece: _Piece, ctx: GraphContext, order: dict[Node, int]) -> None:
        inside = piece.nodes()
        ordered = sorted(inside, key=lambda n: order[n])
        inputs: dict[Node, None] = {}
        outputs: dict[Node, None] = {}
        for n in ordered:
            for a in n.all_input_nodes:
                if a not in inside and not ctx.is_constant(a):
                    inputs.setdefault(a, None)
            if any(u not in inside for u in n.users):
                outputs.setdefault(n, None)
        build_payload(
            ordered, sorted(inputs, key=lambda n: order[n]), list(outputs), ctx, self._registry, self.target,
            self.options.limits,
        )

    # ------------------------------------------------------- partition boundaries
    def _start_reasons(
        self, pieces: Sequence[_Piece], where: dict[Node, int], reasons: dict[Node, str], order: dict[Node, int]
    ) -> list[str]:
        """Per partition: why it is not part of an earlier one.  The limit that split it off,
        or the CPU operators on a path between an earlier partition and this one (either
        way round: merging the two would make the partition depend on itself)."""
        members = [p.nodes() for p in pieces]
        up = [_closure(m, lambda n: n.all_input_nodes) for m in members]
        down = [_closure(m, lambda n: list(n.users)) for m in members]

        def on_cpu(nodes: set[Node]) -> list[Node]:
            cpu = [n for n in nodes if n not in where and n.op == "call_function" and node_op(n) != GETITEM
                   and n not in self._io_boundary]
            return sorted(cpu, key=lambda n: order[n])

        def named(nodes: list[Node]) -> str:
            return _name_cpu(nodes, lambda n: self._cpu_reason(n, reasons, where))

        out: list[str] = []
        for i, piece in enumerate(pieces):
            if piece.starts:
                out.append(piece.starts)
                continue
            why = ""
            for j in range(i - 1, -1, -1):
                between = on_cpu((up[i] & down[j]) | (down[i] & up[j]))
                if between:
                    why = f"after {named(between)} (between partition {j} and this one)"
                    break
            if not why and i == 0:
                feeding = on_cpu(up[0])
                why = f"after {named(feeding)}" if feeding else "at the model's inputs"
            if not why:
                why = ("apart from the earlier partitions although no CPU operator or engine limit "
                       "separates them (the grouping left it apart; please report it)")
            out.append(why)
        return out

    # ---------------------------------------------------------------- decisions
    def _decide(
        self, nodes: Sequence[Node], where: dict[Node, int], reasons: dict[Node, str], pieces: Sequence[_Piece],
        user_inputs: set[str],
    ) -> list[OpDecision]:
        decided: list[OpDecision] = []
        for n in nodes:
            if n.op != "call_function" or node_op(n) == GETITEM or n in self._io_boundary:
                continue  # (int8 I/O removes the boundary quantize/dequantize nodes)
            part = where.get(n)
            if part is not None:
                if not is_qdq(n):
                    decided.append(OpDecision(n.name, node_op(n), True, "", source_location(n), part,
                                              _graph_inputs(n, user_inputs)))
                continue
            decided.append(OpDecision(n.name, node_op(n), False, self._cpu_reason(n, reasons, where),
                                      source_location(n), None, _graph_inputs(n, user_inputs)))
        return decided

    def _cpu_reason(self, n: Node, reasons: dict[Node, str], where: dict[Node, int]) -> str:
        origin = self._origin(n)
        if origin:  # decomposed from an operator refused whole: that refusal is the reason
            return f"part of {origin}"
        if n in reasons:
            return reasons[n]
        name = node_op(n)
        if is_qdq(n):
            users = [u for u in n.users if u.op == "call_function"]
            src = n.args[0]
            cpu_users = [u for u in users if u not in where]
            if name.startswith("quantized_decomposed.dequantize"):
                if cpu_users:
                    u = cpu_users[0]
                    return f"dequantizes an operand of {u.name} ({node_op(u)}), which stays on the CPU"
                if isinstance(src, Node) and src not in where:
                    return "dequantizes a tensor produced on the CPU"
                return "dequantize that no partition can absorb"
            if isinstance(src, Node) and src.op == "call_function" and src not in where:
                return f"quantizes the result of {src.name} ({node_op(src)}), which stays on the CPU"
            if cpu_users:
                u = cpu_users[0]
                return f"quantizes for {u.name} ({node_op(u)}), which stays on the CPU"
            return "quantize read by several partitions, which no single partition can absorb"
        return "not part of any delegated group"

    def _origin(self, n: Node) -> str | None:
        """The reason recorded when an operator this node was decomposed from was refused."""
        if not self._decomposed:
            return None
        stack: list[Any] = list(n.meta.get("from_node") or [])
        while stack:
            src = stack.pop()
            name = getattr(src, "name", None)
            if isinstance(name, str) and name in self._decomposed:
                return self._decomposed[name]
            stack.extend(getattr(src, "from_node", None) or [])
        return None

    def _check_strict(self) -> None:
        if self.allow_cpu_fallback:
            return
        cpu = [d for d in self.decisions if not d.delegated]
        if not cpu:
            return
        lines = [
            f"  - {d.op} ({d.node}{', ' + d.location if d.location else ''}): {d.reason}" for d in cpu
        ]
        raise StrictModeError(
            f"allow_cpu_fallback=False but {len(cpu)} operator(s) would run on the CPU:\n"
            + "\n".join(lines)
            + "\nChange the model or quantizer config so these are supported, or allow CPU fallback."
        )


def _graph_inputs(n: Node, user_inputs: set[str]) -> tuple[str, ...]:
    """The operators and program inputs (``input:<name>``) whose values ``n`` reads, looking
    through quantize/dequantize and getitem (which the decisions leave out); weights and other
    constants are not edges."""
    out: dict[str, None] = {}
    stack = list(n.all_input_nodes)
    seen: set[Node] = set()
    while stack:
        a = stack.pop(0)
        if a in seen:
            continue
        seen.add(a)
        if a.op == "placeholder":
            if a.name in user_inputs:
                out.setdefault(f"input:{a.name}", None)
        elif a.op == "call_function" and (is_qdq(a) or node_op(a) == GETITEM):
            stack.extend(a.all_input_nodes)
        elif a.op == "call_function":
            out.setdefault(a.name, None)
    return tuple(out)
