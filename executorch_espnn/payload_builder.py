"""Build one delegate payload from a set of graph nodes.

The builder owns the tensor table, the op list and the constants of one payload, and
tracks layouts: every logical tensor of the graph (a ``Value``) may be *realized* by
one or more payload tensors, each in a physical dimension order (``Perm``: physical
dim i holds logical dim ``perm[i]``).  Convolutions ask for NHWC, fully-connected
layers for the logical order, and so on; a realization that does not exist yet is
made on demand, for free when the bytes are already in the right order (a RESHAPE
the planner places in place), otherwise with a TRANSPOSE.  Boundary QUANTIZE and
DEQUANTIZE ops are emitted lazily in whatever order their first consumer wants, so a
model's float NCHW input is quantized straight into NHWC.

``finish`` turns delegate outputs into output tensors (retargeting the op that
produced them when possible), plans the arena with ``planner.plan_payload`` (``payload_buffers``:
lifetimes, per-op scratch, the in-place choice; ``plan_arena``: the offsets) and encodes
with the payload writer, which validates everything the device validates.  The layout
arithmetic is ``layout``'s; grouping nodes into units and driving the lowerings is
``units``'.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import torch
from torch.fx import Node

from .graph.constants import GraphContext
from .graph.names import meta_val, static_shape
from .graph.qdq import QParams, qdq_params
from .kernel_choice import choose_bands, choose_ram_first
from .layout import (
    Perm,
    identity,
    inverse,
    perm_words,
    physical,
    same_bytes,
    unit_dim_view,
    view_perm,
)
from .payload import (
    ConstantPool,
    DType,
    Opcode,
    OpRec,
    Payload,
    PayloadError,
    Storage,
    Target,
    TensorRec,
    encode,
)
from .payload.format import (
    MAX_DIM,
    MAX_IO,
    MAX_OPS,
    MAX_RANK,
    MAX_TENSORS,
    TENSOR_FLAG_NHWC,
)
from .payload.order import constants_last
from .planner import plan_payload
from .unsupported import Unsupported
from .version import version_tuple


@dataclass
class Value:
    """A logical tensor of the graph and its realizations in the payload."""

    name: str
    shape: tuple[int, ...]
    dtype: DType
    qp: QParams | None
    real: dict[Perm, int] = field(default_factory=dict)
    lazy: Callable[[Perm], int] | None = None
    # a unit-dim view of this value (``PayloadBuilder.reshaped``): its layouts are free here
    view_of: Value | None = None

    @property
    def rank(self) -> int:
        return len(self.shape)


@dataclass(frozen=True)
class Limits:
    """Engine limits a partition must respect (overridable for tests)."""

    max_tensors: int = MAX_TENSORS
    max_ops: int = MAX_OPS
    max_io: int = MAX_IO


class LimitExceeded(Unsupported):
    """The payload would exceed one of the engine's limits: split the partition.
    ``limit`` names it as a user sets it (``max_ops``, ``max_io``, ...), when there is an option."""

    def __init__(self, reason: str, limit: str | None = None) -> None:
        super().__init__(reason)
        self.limit = limit


@dataclass
class BuildResult:
    payload: Payload
    data: bytes
    # which graph value each tensor holds: tensor id -> (fx node name, physical order, logical shape)
    tensor_values: dict[int, tuple[str, Perm, tuple[int, ...]]] = field(default_factory=dict)


class PayloadBuilder:
    def __init__(self, ctx: GraphContext, target: Target = Target.GENERIC, limits: Limits | None = None,
                 *, ram_first: bool = False) -> None:
        self.ctx = ctx
        self.target = target
        self.ram_first = ram_first
        self.limits = limits or Limits()
        self.tensors: list[TensorRec] = []
        self.ops: list[OpRec] = []
        self.pool = ConstantPool()
        self.values: dict[Node, Value] = {}
        self.inputs: list[int] = []
        self.outputs: list[int] = []
        self._const_cache: dict[tuple[int, tuple[int, ...], bytes], int] = {}
        self._operand_cache: dict[tuple[int, QParams], Value] = {}
        # (id of a value, shape) -> (that value, its view): one view per shape, both ways
        self._views: dict[tuple[int, tuple[int, ...]], tuple[Value, Value]] = {}
        # int8 delegate inputs by io index, made on first use (``_int8_input``)
        self._pending_inputs: dict[int, Value] = {}

    # ----------------------------------------------------------------- tensors
    def _tensor(self, rec: TensorRec) -> int:
        if rec.rank > MAX_RANK:
            raise Unsupported(f"tensor of rank {rec.rank}; the engine handles rank <= {MAX_RANK}")
        for d in rec.dims:
            if not 1 <= d <= MAX_DIM:
                raise Unsupported(
                    f"tensor dimension {d} in {rec.dims} is outside 1..{MAX_DIM} (ESP-NN takes uint16 sizes)"
                )
        self.tensors.append(rec)
        return len(self.tensors) - 1

    def arena(self, shape: Sequence[int], dtype: DType, qp: QParams | None, perm: Perm | None = None) -> int:
        """A new arena tensor holding a ``shape`` (logical) tensor in physical order ``perm``."""
        perm = identity(len(shape)) if perm is None else perm
        flags = TENSOR_FLAG_NHWC if len(shape) == 4 and perm == (0, 2, 3, 1) else 0
        return self._tensor(TensorRec(
            dtype, physical(shape, perm), Storage.ARENA,
            scale=qp.scale if qp else 0.0, zero_point=qp.zero_point if qp else 0, flags=flags,
        ))

    def constant(self, array: npt.NDArray[np.generic]) -> int:
        """A constant tensor (int8/int32/float32), deduplicated by content."""
        arr = np.ascontiguousarray(array)
        if arr.dtype == np.int8:
            dt = DType.INT8
        elif arr.dtype == np.int32:
            dt = DType.INT32
        elif arr.dtype == np.float32:
            dt = DType.FLOAT32
        else:
            raise TypeError(f"constant of dtype {arr.dtype}")
        raw = arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes()
        dims = tuple(int(d) for d in arr.shape)
        key = (int(dt), dims, raw)
        cached = self._const_cache.get(key)
        if cached is not None:
            return cached
        off = self.pool.add(raw)
        tid = self._tensor(TensorRec(dt, dims, Storage.CONST, offset=off))
        self._const_cache[key] = tid
        return tid

    def int32s(self, values: Sequence[int] | npt.NDArray[np.integer]) -> int:
        return self.constant(np.asarray(values, dtype=np.int64).astype(np.int32))

    # ------------------------------------------------------------------ values
    def add_input(self, node: Node) -> Value:
        """Delegate input k (in call order): float32 or int8, logical dims."""
        val = meta_val(node)
        shape = static_shape(node)
        if val.dtype.is_floating_point:
            if str(val.dtype) != "torch.float32":
                raise Unsupported(f"delegate input {node.name} is {val.dtype}")
            dt = DType.FLOAT32
        elif str(val.dtype) == "torch.int8":
            dt = DType.INT8
        else:
            raise Unsupported(f"delegate input {node.name} is {val.dtype}, expected float32 or int8")
        k = len(self.inputs)
        if dt == DType.INT8:
            # made on first use, in the order its first reader wants when that order has the
            # program tensor's bytes (C == 1, H == W == 1, rank < 4): the engine then reads the
            # program's storage in place instead of copying it into the arena
            self.inputs.append(-1)
            v = Value(node.name, shape, dt, None)
            v.lazy = lambda perm: self._int8_input(v, k, perm)
            self._pending_inputs[k] = v
            self.values[node] = v
            return v
        tid = self._tensor(TensorRec(dt, shape, Storage.INPUT, offset=k))
        self.inputs.append(tid)
        v = Value(node.name, shape, dt, None, {identity(len(shape)): tid})
        self.values[node] = v
        return v

    def _int8_input(self, v: Value, k: int, perm: Perm) -> int:
        """Delegate input ``k`` in order ``perm`` when its bytes are the logical order's (the
        io tensor's dims are then a unit-dim permutation of the program tensor's sizes);
        otherwise the input in logical order and one TRANSPOSE into the arena."""
        ident = identity(v.rank)
        qp = v.qp
        own = perm if same_bytes(v.shape, ident, perm) else ident
        flags = TENSOR_FLAG_NHWC if v.rank == 4 and own == (0, 2, 3, 1) else 0
        tid = self._tensor(TensorRec(DType.INT8, physical(v.shape, own), Storage.INPUT, offset=k,
                                     scale=qp.scale if qp else 0.0, zero_point=qp.zero_point if qp else 0,
                                     flags=flags))
        self.inputs[k] = tid
        if own == perm:
            return tid
        v.real[own] = tid
        inv = inverse(own)
        out = self.arena(v.shape, v.dtype, v.qp, perm)
        self.emit(Opcode.TRANSPOSE, [tid], out, perm_words([inv[x] for x in perm]))
        return out

    def value(self, node: Node) -> Value:
        v = self.values.get(node)
        if v is None:
            raise Unsupported(f"{node.name} is not available inside the partition")
        return v

    def operand(self, dq: Node) -> Value:
        """The int8 value a dequantize node reads, with that dequantize's parameters."""
        qp = qdq_params(dq)
        src = dq.args[0]
        if not isinstance(src, Node):
            raise Unsupported(f"{dq.name} does not read a tensor")
        if src not in self.values and self.ctx.is_constant(src):
            return self._constant_operand(src, qp)
        v = self.value(src)
        if v.dtype != DType.INT8:
            raise Unsupported(f"{dq.name} dequantizes a {v.dtype.name} tensor")
        if v.qp is None:
            # an int8 delegate input: its parameters are the ones its readers use
            v.qp = qp
            for tid in v.real.values():
                self.tensors[tid].scale = qp.scale
                self.tensors[tid].zero_point = qp.zero_point
            return v
        if v.qp == qp:
            return v
        key = (id(v), qp)
        cached = self._operand_cache.get(key)
        if cached is not None:
            return cached
        # the same bytes read with other parameters: relabel through a (free) copy
        relabelled = Value(f"{v.name}@{qp.scale:g},{qp.zero_point}", v.shape, DType.INT8, qp)

        def make(perm: Perm) -> int:
            src_t = self.realize(v, perm)
            out = self.arena(v.shape, DType.INT8, qp, perm)
            self.emit(Opcode.RESHAPE, [src_t], out)
            return out

        relabelled.lazy = make
        self._operand_cache[key] = relabelled
        return relabelled

    def _constant_operand(self, src: Node, qp: QParams) -> Value:
        """A quantized constant read as an activation (``x + self.pos``): a constant tensor,
        laid out in whatever order its reader wants."""
        key = (id(src), qp)
        cached = self._operand_cache.get(key)
        if cached is not None:
            return cached
        raw = self.ctx.constant(src)
        if raw is None:
            raise Unsupported(f"the values of constant {src.name} are not known")
        if raw.dtype != torch.int8:
            raise Unsupported(f"constant operand {src.name} is {raw.dtype}, expected int8")
        values = raw.numpy().astype(np.int8)
        v = Value(src.name, tuple(int(d) for d in values.shape), DType.INT8, qp)

        def make(perm: Perm) -> int:
            return self.constant(np.transpose(values, perm) if values.ndim else values)

        v.lazy = make
        self._operand_cache[key] = v
        return v

    def define(self, q: Node, perm: Perm | None = None, shape: Sequence[int] | None = None) -> tuple[Value, int]:
        """The value a unit's quantize node produces, with a fresh tensor in ``perm``."""
        qp = qdq_params(q)
        shp = tuple(shape) if shape is not None else static_shape(q)
        perm = identity(len(shp)) if perm is None else perm
        v = Value(q.name, shp, DType.INT8, qp)
        tid = self.arena(shp, DType.INT8, qp, perm)
        v.real[perm] = tid
        self.values[q] = v
        return v, tid

    def define_lazy(self, q: Node, make: Callable[[Perm], int]) -> Value:
        """The value a unit's quantize node produces, made on first use in the order its first
        reader asks for (``make(perm)`` returns the tensor holding it in that order)."""
        v = Value(q.name, static_shape(q), DType.INT8, qdq_params(q))
        v.lazy = make
        self.values[q] = v
        return v

    def wrap(self, tid: int, shape: Sequence[int], qp: QParams | None, perm: Perm) -> Value:
        """An anonymous value for a tensor an op already wrote (an intermediate result)."""
        t = self.tensors[tid]
        shp = tuple(shape)
        if t.dims != physical(shp, perm):
            raise AssertionError(f"wrap: tensor dims {t.dims} vs {physical(shp, perm)}")
        return Value(f"t{tid}", shp, t.dtype, qp, {perm: tid})

    def alias(self, q: Node, perm: Perm, tid: int) -> Value:
        """Declare that ``tid`` already holds the value of ``q`` in order ``perm`` (no op)."""
        qp = qdq_params(q)
        shp = static_shape(q)
        t = self.tensors[tid]
        if t.dims != physical(shp, perm):
            raise AssertionError(f"alias of {q.name}: tensor dims {t.dims} vs {physical(shp, perm)}")
        v = Value(q.name, shp, DType.INT8, qp, {perm: tid})
        self.values[q] = v
        return v

    def realize(self, v: Value, perm: Perm) -> int:
        """A tensor holding ``v`` in physical order ``perm``, emitting what it takes."""
        perm = tuple(perm)
        if len(perm) != v.rank:
            raise AssertionError(f"perm {perm} for rank {v.rank}")
        hit = v.real.get(perm)
        if hit is not None:
            return hit
        if not v.real:
            if v.lazy is None:
                raise AssertionError(f"value {v.name} has no realization")
            tid = v.lazy(perm)
            v.real[perm] = tid
            return tid
        for p, tid in v.real.items():
            if same_bytes(v.shape, p, perm):
                out = self.arena(v.shape, v.dtype, v.qp, perm)
                self.emit(Opcode.RESHAPE, [tid], out)
                v.real[perm] = out
                return out
        p, tid = next(iter(v.real.items()))
        inv = inverse(p)
        out = self.arena(v.shape, v.dtype, v.qp, perm)
        self.emit(Opcode.TRANSPOSE, [tid], out, perm_words([inv[x] for x in perm]))
        v.real[perm] = out
        return out

    def contiguous(self, v: Value) -> int:
        """A tensor holding ``v`` with its bytes in logical (row-major) order."""
        ident = identity(v.rank)
        for p, tid in v.real.items():
            if same_bytes(v.shape, p, ident):
                return tid
        return self.realize(v, ident)

    def reshaped(self, v: Value, shape: Sequence[int]) -> Value:
        """``v`` viewed with another shape of the same size (a RESHAPE, made on demand).

        A view that only adds or drops unit dims ([N, C, L] as [N, C, 1, L]) keeps any
        layout ``v`` has: the RESHAPE reads its bytes where they are (planned in place).
        Other views read ``v`` in logical order.  Views are cached both ways, so viewing
        a view back gives the original value and its realizations.
        """
        shp = tuple(int(d) for d in shape)
        if int(np.prod(shp, dtype=np.int64)) != int(np.prod(v.shape, dtype=np.int64)):
            raise Unsupported(f"cannot view {v.shape} as {shp}")
        if shp == v.shape:
            return v
        cached = self._views.get((id(v), shp))
        if cached is not None:
            return cached[1]
        nv = Value(f"{v.name}:view", shp, v.dtype, v.qp)

        def make_unit(perm: Perm) -> int:
            out = self.arena(shp, v.dtype, v.qp, perm)
            for p, tid in v.real.items():
                if same_bytes(shp, view_perm(v.shape, p, shp), perm):
                    self.emit(Opcode.RESHAPE, [tid], out)
                    return out
            self.emit(Opcode.RESHAPE, [self.realize(v, view_perm(shp, perm, v.shape))], out)
            return out

        def make(perm: Perm) -> int:
            src = self.contiguous(v)
            out = self.arena(shp, v.dtype, v.qp, identity(len(shp)))
            self.emit(Opcode.RESHAPE, [src], out)
            nv.real[identity(len(shp))] = out
            return self.realize(nv, perm)

        if unit_dim_view(v.shape, shp):
            nv.lazy, nv.view_of = make_unit, v
        else:
            nv.lazy = make
        self._views[(id(v), shp)] = (v, nv)
        self._views[(id(nv), v.shape)] = (nv, v)
        return nv

    def define_view(self, q: Node, shape: Sequence[int], perm: Perm) -> tuple[Value, int]:
        """Like ``define``, for an op that writes ``q``'s value with unit dims added or
        dropped (a conv1d's [N, C, L] result written as [N, C, 1, L]): a fresh ``shape``
        tensor in ``perm``, and ``q`` defined as its view (a reader of that same view gets
        the tensor itself; others a RESHAPE, free in place)."""
        qp = qdq_params(q)
        shp = tuple(int(d) for d in shape)
        logical = static_shape(q)
        if not unit_dim_view(shp, logical):
            raise AssertionError(f"define_view of {q.name}: {shp} is not a unit-dim view of {logical}")
        inner = Value(f"{q.name}:{'x'.join(map(str, shp))}", shp, DType.INT8, qp)
        tid = self.arena(shp, DType.INT8, qp, perm)
        inner.real[perm] = tid
        v = self.reshaped(inner, logical)
        v.name = q.name
        self.values[q] = v
        return inner, tid

    def layouts(self, v: Value) -> list[Perm]:
        """The orders ``v`` has, or (a view not made yet) can have without moving bytes."""
        if v.real or v.view_of is None:
            return list(v.real)
        base = v.view_of
        return [view_perm(base.shape, p, v.shape) for p in self.layouts(base)]

    def any_layout(self, v: Value, prefer: Perm) -> Perm:
        """A layout ``v`` already has (``prefer``, or one with the same bytes, if possible);
        ``prefer`` when ``v`` is not made yet."""
        have = self.layouts(v)
        if not have or prefer in have:
            return prefer
        for p in have:
            if same_bytes(v.shape, p, prefer):
                return p
        return have[0]

    def lazy_quantize(self, q: Node) -> None:
        """A boundary quantize: float → int8, emitted in the order its first reader wants."""
        src_node = q.args[0]
        if not isinstance(src_node, Node):
            raise Unsupported(f"{q.name} does not read a tensor")
        src = self.value(src_node)
        if src.dtype != DType.FLOAT32:
            raise Unsupported(f"{q.name} quantizes a {src.dtype.name} tensor")
        qp = qdq_params(q)
        v = Value(q.name, src.shape, DType.INT8, qp)

        def make(perm: Perm) -> int:
            s = self.realize(src, identity(src.rank))
            out = self.arena(src.shape, DType.INT8, qp, perm)
            self.emit(Opcode.QUANTIZE, [s], out, perm_words(perm))
            return out

        v.lazy = make
        self.values[q] = v

    def lazy_dequantize(self, dq: Node) -> None:
        """A boundary dequantize: int8 → float, for a delegate output (logical order)."""
        src = self.operand(dq)
        v = Value(dq.name, src.shape, DType.FLOAT32, None)

        def make(perm: Perm) -> int:
            p = self.any_layout(src, perm)  # DEQUANTIZE transposes for free
            s = self.realize(src, p)
            inv = inverse(p)
            out = self.arena(src.shape, DType.FLOAT32, None, perm)
            self.emit(Opcode.DEQUANTIZE, [s], out, perm_words([inv[x] for x in perm]))
            return out

        v.lazy = make
        self.values[dq] = v

    # --------------------------------------------------------------------- ops
    def emit(
        self,
        opcode: Opcode,
        inputs: Sequence[int | None],
        output: int,
        params: dict[str, int] | None = None,
        scratch: int = 0,
    ) -> int:
        self.ops.append(OpRec(opcode, tuple(inputs), output, dict(params or {}), 0, int(scratch)))
        return len(self.ops) - 1

    # ------------------------------------------------------------------ finish
    def _check_limits(self) -> None:
        lim = self.limits
        for what, n, hi, option in (
            ("tensors", len(self.tensors), lim.max_tensors, "max_tensors"),
            ("ops", len(self.ops), lim.max_ops, "max_ops"),
            ("inputs", len(self.inputs), lim.max_io, "max_io"),
            ("outputs", len(self.outputs), lim.max_io, "max_io"),
        ):
            if n > hi:
                raise LimitExceeded(f"the partition needs {n} {what}, the engine allows {hi}", option)

    def finish(self, outputs: Sequence[Node]) -> BuildResult:
        for k, node in enumerate(outputs):
            v = self.value(node)
            tid = self._output_source(v)
            t = self.tensors[tid]
            writer = self._writer(tid)
            if t.storage == Storage.ARENA and writer is not None:
                # the op that computes it writes the program's output storage (no copy)
                t.storage = Storage.OUTPUT
                t.offset = k
                if t.dims == tuple(v.shape):
                    t.flags = 0
            else:
                out = self._tensor(TensorRec(t.dtype, t.dims, Storage.OUTPUT, offset=k,
                                             scale=t.scale, zero_point=t.zero_point))
                self.emit(Opcode.RESHAPE, [tid], out)
                tid = out
            self.outputs.append(tid)
        for k, pending in self._pending_inputs.items():
            if self.inputs[k] < 0:  # an input no op reads: still an io tensor of the payload
                self.realize(pending, identity(pending.rank))
        if not self.ops:
            raise Unsupported("the partition computes nothing")
        self._check_limits()
        payload = Payload(
            tensors=self.tensors,
            ops=self.ops,
            inputs=self.inputs,
            outputs=self.outputs,
            constants=self.pool.bytes(),
            arena_size=0,
            target=self.target,
            producer=version_tuple(),
        )
        new_id = constants_last(payload)  # the engine's state keeps only an offset per constant
        # before planning: the arena is planned with the scratch the choice leaves
        if self.ram_first:
            choose_ram_first(payload)
        else:
            choose_bands(payload)
        plan_payload(payload)
        names: dict[int, tuple[str, Perm, tuple[int, ...]]] = {}
        for node, v in self.values.items():
            seen: Value | None = v
            while seen is not None:  # a value and the tensors it views (conv1d's 4-D result)
                for perm, tid in seen.real.items():
                    names.setdefault(new_id[tid], (node.name, perm, seen.shape))
                seen = seen.view_of
        try:
            data = encode(payload)
        except PayloadError as e:
            if e.field in ("n_tensors", "n_ops", "n_inputs", "total_size", "arena_size"):
                raise LimitExceeded(str(e)) from None
            raise
        return BuildResult(payload, data, names)

    def _output_source(self, v: Value) -> int:
        """The tensor a delegate output is taken from: an int8 realization whose bytes are the
        logical order's (written in place of the program's output when an op writes it), else
        the value in logical order."""
        ident = identity(v.rank)
        if ident not in v.real and v.dtype == DType.INT8:
            for p, tid in v.real.items():
                t = self.tensors[tid]
                if same_bytes(v.shape, p, ident) and t.storage == Storage.ARENA and self._writer(tid) is not None:
                    return tid
        return self.realize(v, ident)

    def _writer(self, tid: int) -> int | None:
        for i, op in enumerate(self.ops):
            if op.output == tid:
                return i
        return None

