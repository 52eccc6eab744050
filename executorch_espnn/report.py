"""What a lowering produced: delegated and CPU operators, partitions, memory, fast paths.

Every figure is derived from the bytes of the ``.pte`` (the program's memory plan, its
operator table and instructions) and from decoding each delegate payload with
``executorch_espnn.payload.decode``; the partitioner's decision records only add what the
bytes cannot tell (the reason an operator stayed on the CPU and its source location).
A ready ``.pte`` is reported on the same way, without those records.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .decisions import OpDecision
from .errors import PteError
from .payload import DType, Opcode, Payload, PayloadError, Storage, decode
from .payload.format import AVG_TORCH_ADAPTIVE, AVG_TORCH_MEAN, AVG_TORCH_POOL
from .payload.state import state_bytes
from .pte import BACKEND_ID

REPORT_SCHEMA = 2  # 2: partitions[].starts, float_averages
# the engine runs depthwise convolutions whose padded input is taller or wider than this on its
# own kernel (ESP-NN indexes the padded input with int16_t; engine/ops/depthwise_conv2d.c)
DW_MAX_SPAN = 32767

# ExecuTorch ScalarType codes -> names (exir/scalar_type.py)
_SCALAR_TYPES = {0: "uint8", 1: "int8", 2: "int16", 3: "int32", 4: "int64", 5: "float16",
                 6: "float32", 7: "float64", 11: "bool", 15: "bfloat16"}
_SCALAR_SIZES = {0: 1, 1: 1, 2: 2, 3: 4, 4: 8, 5: 2, 6: 4, 7: 8, 11: 1, 15: 2}

UNCALIBRATED_WARNING = (
    "not calibrated: accuracy unknown, pass calibration data (calibration= in lower(), "
    "calibration_data() in the model file, or --calibration data.npz)"
)


# ---------------------------------------------------------------------------------------------
# records


@dataclass(frozen=True)
class OpEntry:
    """One operator of the lowered graph: where it runs and why."""

    operator: str  # "aten.convolution.default" (edge op), or a payload opcode / CPU kernel name
    location: str | None  # "model.py:42 in forward" when known
    reason: str  # why it stays on the CPU; "" when delegated
    partition: int | None = None  # partition index when delegated
    node: str | None = None  # FX node name when known


@dataclass(frozen=True)
class TensorSpec:
    """A delegate or program input/output."""

    name: str
    shape: tuple[int, ...]
    dtype: str  # "float32", "int8", …
    scale: float | None = None  # quantization of the int8 side, when there is one
    zero_point: int | None = None
    quantized_by: str | None = None  # "delegate" (q/dq inside the payload), "cpu" (a CPU kernel), "input"


@dataclass(frozen=True)
class PartitionReport:
    index: int
    ops: tuple[str, ...]  # payload opcodes in execution order
    n_tensors: int
    arena_bytes: int  # activations + scratch, as planned
    arena_lower_bound: int  # peak of simultaneously live bytes, recomputed from the op list
    scratch_bytes: int  # the largest scratch of one op (included in arena_bytes)
    weights_bytes: int  # the payload's constants section
    state_bytes: int | None  # decoded engine state (None: formula not available)
    payload_bytes: int
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    target: str
    producer: str
    # where and why the partition starts, completing "partition i starts ...": "at the
    # model's inputs", "after CPU operator ...", "here: ... would exceed an engine limit ..."
    # ("" for a ready .pte: the reasons come from the partitioner)
    starts: str = ""


@dataclass(frozen=True)
class FastPathLayer:
    """A conv/depthwise/FC layer and whether ESP-NN's ESP32-S3 optimised kernel takes it."""

    partition: int
    op: int  # op index inside the payload
    layer: str  # "conv 3x3/2", "depthwise 3x3/1", "fc 1280->1000"
    shape: str  # "96x96x3 -> 48x48x16"
    macs: int
    fast: bool
    why: str


@dataclass(frozen=True)
class FloatAverage:
    """An average run on the engine's float32 kernel (AVG_POOL2D_FLOAT) instead of ESP-NN's
    integer average pool, whose rounding of tied window sums differs from PyTorch's."""

    partition: int
    op: int  # op index inside the payload
    layer: str  # "avg pool 2x2/2", "mean 4x4", "adaptive avg pool 3x4"
    shape: str  # "16x16x8 -> 8x8x8"
    adds: int  # float32 additions per inference (one per window tap)
    why: str


@dataclass
class LoweringReport:
    target: str
    delegated_ops: list[OpEntry]
    cpu_ops: list[OpEntry]
    partitions: list[PartitionReport]
    arena_bytes: int  # sum of the delegates' arenas (scratch included)
    planned_bytes: int  # ExecuTorch's planned buffers, every mem id
    weights_bytes: int  # delegate constants + CPU-side constant tensors
    state_bytes: int | None  # sum of the delegates' decoded engine state
    pte_bytes: int
    inputs: list[TensorSpec]
    outputs: list[TensorSpec]
    fast_path: list[FastPathLayer]
    cpu_kernels: list[str]  # the program's CPU operator table, "aten::abs.out"
    cpu_weights_bytes: int = 0
    planned_buffers: list[int] = field(default_factory=list)  # per mem id (1…)
    warnings: list[str] = field(default_factory=list)
    calibrated: bool | None = None  # None: unknown (a ready .pte)
    timings: dict[str, float] = field(default_factory=dict)  # seconds per lowering stage
    versions: dict[str, str] = field(default_factory=dict)  # package/format/toolchain versions
    float_averages: list[FloatAverage] = field(default_factory=list)

    @property
    def delegate_weights_bytes(self) -> int:
        return sum(p.weights_bytes for p in self.partitions)

    @property
    def fast_path_mac_share(self) -> float | None:
        """Share of conv/depthwise/FC MACs in layers that meet the S3 fast-path conditions."""
        total = sum(layer.macs for layer in self.fast_path)
        if total == 0:
            return None
        return sum(layer.macs for layer in self.fast_path if layer.fast) / total

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable; keys are stable (``schema`` bumps when they change)."""

        def op(e: OpEntry) -> dict[str, Any]:
            return {"operator": e.operator, "location": e.location, "reason": e.reason,
                    "partition": e.partition, "node": e.node}

        def ts(t: TensorSpec) -> dict[str, Any]:
            return {"name": t.name, "shape": list(t.shape), "dtype": t.dtype, "scale": t.scale,
                    "zero_point": t.zero_point, "quantized_by": t.quantized_by}

        return {
            "schema": REPORT_SCHEMA,
            "target": self.target,
            "calibrated": self.calibrated,
            "pte_bytes": self.pte_bytes,
            "arena_bytes": self.arena_bytes,
            "planned_bytes": self.planned_bytes,
            "planned_buffers": list(self.planned_buffers),
            "weights_bytes": self.weights_bytes,
            "delegate_weights_bytes": self.delegate_weights_bytes,
            "cpu_weights_bytes": self.cpu_weights_bytes,
            "state_bytes": self.state_bytes,
            "n_delegated_ops": len(self.delegated_ops),
            "n_cpu_ops": len(self.cpu_ops),
            "delegated_ops": [op(e) for e in self.delegated_ops],
            "cpu_ops": [op(e) for e in self.cpu_ops],
            "cpu_kernels": list(self.cpu_kernels),
            "partitions": [
                {
                    "index": p.index, "ops": list(p.ops), "n_ops": len(p.ops),
                    "n_tensors": p.n_tensors, "arena_bytes": p.arena_bytes,
                    "arena_lower_bound": p.arena_lower_bound, "scratch_bytes": p.scratch_bytes,
                    "weights_bytes": p.weights_bytes, "state_bytes": p.state_bytes,
                    "payload_bytes": p.payload_bytes, "target": p.target, "producer": p.producer,
                    "starts": p.starts,
                    "inputs": [ts(t) for t in p.inputs], "outputs": [ts(t) for t in p.outputs],
                }
                for p in self.partitions
            ],
            "inputs": [ts(t) for t in self.inputs],
            "outputs": [ts(t) for t in self.outputs],
            "fast_path": {
                "mac_share": self.fast_path_mac_share,
                "layers": [
                    {"partition": f.partition, "op": f.op, "layer": f.layer, "shape": f.shape,
                     "macs": f.macs, "fast": f.fast, "why": f.why}
                    for f in self.fast_path
                ],
            },
            "float_averages": [
                {"partition": a.partition, "op": a.op, "layer": a.layer, "shape": a.shape,
                 "adds": a.adds, "why": a.why}
                for a in self.float_averages
            ],
            "timings": dict(self.timings),
            "versions": dict(self.versions),
            "warnings": list(self.warnings),
        }

    def summary(self) -> str:
        """Two lines: where the operators run, and the memory figures."""
        n_part = len(self.partitions)
        ops = (f"{len(self.delegated_ops)} operators on ESP-NN in {n_part} partition"
               f"{'' if n_part == 1 else 's'}, {len(self.cpu_ops)} on the CPU")
        state = "n/a" if self.state_bytes is None else _b(self.state_bytes)
        mem = (f"arena {_b(self.arena_bytes)}, planned {_b(self.planned_bytes)}, "
               f"weights {_b(self.weights_bytes)}, state {state}, .pte {_b(self.pte_bytes)}")
        return f"{ops}\n{mem}"

    def __str__(self) -> str:
        out = [f"ESP-NN lowering report (target {self.target})", ""]
        out += ["  " + line for line in self.summary().splitlines()]
        share = self.fast_path_mac_share
        if share is not None:
            out.append(f"  ESP32-S3 fast paths: {100 * share:.1f}% of "
                       f"{_macs(sum(f.macs for f in self.fast_path))} MACs")
        for kind, specs in (("input", self.inputs), ("output", self.outputs)):
            for t in specs:
                out.append(f"  {kind} {t.name}: {_spec(t)}")
        if self.partitions:
            out += ["", "Partitions"]
            out += _table(
                ["#", "ops", "tensors", "arena", "peak live", "scratch", "weights", "in -> out"],
                [[str(p.index), str(len(p.ops)), str(p.n_tensors), _b(p.arena_bytes),
                  _b(p.arena_lower_bound), _b(p.scratch_bytes), _b(p.weights_bytes),
                  f"{len(p.inputs)} -> {len(p.outputs)}"] for p in self.partitions],
            )
            out += [f"  partition {p.index} starts {p.starts}" for p in self.partitions if p.starts]
        out += ["", f"Operators on the CPU ({len(self.cpu_ops)})"]
        if self.cpu_ops:
            out += _table(["operator", "location", "reason"],
                          [[e.operator, e.location or "-", e.reason] for e in self.cpu_ops])
        else:
            out.append("  none: everything runs on ESP-NN")
        out += ["", "Memory (bytes)"]
        out += _table(
            ["what", "bytes", "notes"],
            [
                ["delegate arena", _b(self.arena_bytes), "activations + kernel scratch"],
                ["ExecuTorch planned", _b(self.planned_bytes),
                 "mem ids " + (", ".join(_b(b) for b in self.planned_buffers) or "-")],
                ["weights", _b(self.weights_bytes),
                 f"delegate {_b(self.delegate_weights_bytes)} + CPU {_b(self.cpu_weights_bytes)}"],
                ["delegate state", "n/a" if self.state_bytes is None else _b(self.state_bytes),
                 "decoded engine tables"],
                [".pte", _b(self.pte_bytes), ""],
            ],
        )
        if self.fast_path:
            note = "" if self.target == "esp32s3" else f" (informational: target is {self.target})"
            out += ["", f"ESP32-S3 fast paths per layer{note}"]
            out += _table(
                ["part", "op", "layer", "shape", "MACs", "fast", "why"],
                [[str(f.partition), str(f.op), f.layer, f.shape, _macs(f.macs),
                  "yes" if f.fast else "NO", f.why] for f in self.fast_path],
            )
        if self.float_averages:
            out += ["", "Averages on the engine's float32 kernel instead of ESP-NN's (PyTorch's rounding; "
                    "docs/operators.md, Rounding)"]
            out += _table(
                ["part", "op", "layer", "shape", "float adds", "why"],
                [[str(a.partition), str(a.op), a.layer, a.shape, f"{a.adds:,}", a.why]
                 for a in self.float_averages],
            )
        if self.timings:
            out += ["", "Lowering time: " + ", ".join(f"{k} {v:.2f} s" for k, v in self.timings.items())]
        if self.warnings:
            out += ["", "Warnings"] + [f"  - {w}" for w in self.warnings]
        return "\n".join(out) + "\n"


def _b(n: int) -> str:
    return f"{n:,}"


def _macs(n: int) -> str:
    for unit, div in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= div:
            return f"{n / div:.2f} {unit}"
    return str(n)


def _spec(t: TensorSpec) -> str:
    s = f"{t.dtype}{list(t.shape)}"
    if t.scale is not None:
        s += f" (int8 side: scale {t.scale:.6g}, zero point {t.zero_point}, by the {t.quantized_by})"
    return s


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        return "  " + "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    return [line(headers), line(["-" * w for w in widths])] + [line(r) for r in rows]


# ---------------------------------------------------------------------------------------------
# payload analysis


def _payload_specs(p: Payload, ids: Sequence[int], prefix: str) -> tuple[TensorSpec, ...]:
    out = []
    for k, tid in enumerate(ids):
        t = p.tensors[tid]
        quant = t.dtype == DType.INT8
        out.append(TensorSpec(f"{prefix}{k}", tuple(t.dims), t.dtype.numpy_name,
                              t.scale if quant else None, t.zero_point if quant else None,
                              "input" if quant else None))
    return tuple(out)


def arena_peak(p: Payload) -> int:
    """The largest sum of live arena bytes at any op (scratch included), from the op list.

    Computed from dataflow alone (who writes, who reads last), not from the planner's
    offsets, except to recognise in-place ops: an output at exactly the offset and size of
    an input that dies at that op counts once."""
    n = len(p.ops)
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    for i, op in enumerate(p.ops):
        for tid in op.inputs:
            if tid is not None and p.tensors[tid].storage == Storage.ARENA:
                last[tid] = i
        if p.tensors[op.output].storage == Storage.ARENA:
            first[op.output] = i
            last.setdefault(op.output, i)
    live = [0] * n
    for tid, f in first.items():
        for i in range(f, max(last[tid], f) + 1):
            live[i] += p.tensors[tid].nbytes
    for i, op in enumerate(p.ops):
        live[i] += op.scratch_size
        out = p.tensors[op.output]
        if out.storage != Storage.ARENA:
            continue
        for tid in op.inputs:
            if tid is None:
                continue
            t = p.tensors[tid]
            if (t.storage == Storage.ARENA and last.get(tid) == i and t.offset == out.offset
                    and t.nbytes == out.nbytes):
                live[i] -= out.nbytes
                break
    return max(live, default=0)


def _hwc(dims: tuple[int, ...]) -> str:
    return "x".join(str(d) for d in (dims[1:] if len(dims) == 4 else dims))


def _conv_layer(part: int, i: int, p: Payload) -> FastPathLayer | None:
    op = p.ops[i]
    if op.opcode not in (Opcode.CONV2D, Opcode.DEPTHWISE_CONV2D, Opcode.FULLY_CONNECTED):
        return None
    x_id, w_id = op.inputs[0], op.inputs[1]
    assert x_id is not None and w_id is not None
    x, w, y = p.tensors[x_id], p.tensors[w_id], p.tensors[op.output]
    shape = f"{_hwc(x.dims)} -> {_hwc(y.dims)}"
    pr = op.params
    if op.opcode == Opcode.FULLY_CONNECTED:
        out_f, k = w.dims
        rows = x.numel // k
        macs = rows * out_f * k
        layer = f"fc {k}->{out_f}" + (f" x{rows} rows" if rows > 1 else "")
        aligned = x.storage != Storage.ARENA or x.offset % 16 == 0
        if k < 16:
            return FastPathLayer(part, i, layer, shape, macs, False, f"row_len {k} < 16: ESP-NN's s16 fallback")
        if not aligned:
            return FastPathLayer(part, i, layer, shape, macs, False, "input not 16-byte aligned")
        if rows > 1 and k % 16:
            return FastPathLayer(part, i, layer, shape, macs, False,
                                 f"{rows} rows of {k} bytes: rows after the first are not 16-byte aligned")
        return FastPathLayer(part, i, layer, shape, macs, True, "row_len >= 16, input 16-byte aligned")
    n, oh, ow, cout = y.dims
    kh, kw = w.dims[1], w.dims[2]
    sh, sw = pr["stride_h"], pr["stride_w"]
    dilated = pr["dilation_h"] != 1 or pr["dilation_w"] != 1
    pads = any(pr[k] for k in ("pad_top", "pad_left", "pad_bottom", "pad_right"))
    if op.opcode == Opcode.DEPTHWISE_CONV2D:
        m = pr["ch_mult"]
        cin = x.dims[3]
        macs = n * oh * ow * cout * kh * kw
        layer = f"depthwise {kh}x{kw}/{sh}" + (f" x{m}" if m != 1 else "")
        if dilated:
            return FastPathLayer(part, i, layer, shape, macs, False, "dilated: the engine's generic kernel")
        span = max(x.dims[1] + pr["pad_top"] + pr["pad_bottom"], x.dims[2] + pr["pad_left"] + pr["pad_right"])
        if span > DW_MAX_SPAN:
            return FastPathLayer(part, i, layer, shape, macs, False,
                                 f"padded input span {span} > {DW_MAX_SPAN}: the engine's generic kernel")
        if m != 1:
            return FastPathLayer(part, i, layer, shape, macs, False, f"channel multiplier {m} (needs 1)")
        if cin % 8:
            return FastPathLayer(part, i, layer, shape, macs, False, f"{cin} channels, not a multiple of 8")
        best = "" if cin % 16 == 0 else " (16 would be best)"
        return FastPathLayer(part, i, layer, shape, macs, True, f"ch_mult 1, {cin} channels % 8 == 0{best}")
    groups = pr["groups"]
    cin = x.dims[3]
    macs = n * oh * ow * cout * kh * kw * (cin // groups)
    layer = f"conv {kh}x{kw}/{sh}" + (f" g{groups}" if groups > 1 else "")
    if groups > 1:
        return FastPathLayer(part, i, layer, shape, macs, False, "grouped: the engine's generic kernel")
    if dilated:
        return FastPathLayer(part, i, layer, shape, macs, False, "dilated: the engine's generic kernel")
    if kh == 1 and kw == 1 and sh == 1 and sw == 1 and not pads:
        if cin % 8:
            return FastPathLayer(part, i, layer, shape, macs, False,
                                 f"1x1 with {cin} input channels, not a multiple of 8")
        return FastPathLayer(part, i, layer, shape, macs, True, f"1x1, {cin} channels % 8 == 0")
    return FastPathLayer(part, i, layer, shape, macs, True, "dense conv: SIMD path")


_TORCH_OPS = {AVG_TORCH_POOL: "avg pool", AVG_TORCH_ADAPTIVE: "adaptive avg pool", AVG_TORCH_MEAN: "mean"}


def _float_average(part: int, i: int, p: Payload) -> FloatAverage | None:
    op = p.ops[i]
    if op.opcode != Opcode.AVG_POOL2D_FLOAT:
        return None
    x_id = op.inputs[0]
    assert x_id is not None
    x, y = p.tensors[x_id], p.tensors[op.output]
    pr = op.params
    kh, kw, sh = pr["kernel_h"], pr["kernel_w"], pr["stride_h"]
    kind = _TORCH_OPS.get(pr["torch_op"], "average")
    layer = f"{kind} {kh}x{kw}" + (f"/{sh}" if pr["torch_op"] == AVG_TORCH_POOL else "")
    n, oh, ow, c = y.dims
    h, w = x.dims[1], x.dims[2]
    # one addition per tap inside the input (padding taps are not summed)
    y0 = [oy * sh - pr["pad_top"] for oy in range(oh)]
    x0 = [ox * pr["stride_w"] - pr["pad_left"] for ox in range(ow)]
    taps = (sum(min(a + kh, h) - max(a, 0) for a in y0) * sum(min(b + kw, w) - max(b, 0) for b in x0))
    return FloatAverage(part, i, layer, f"{_hwc(x.dims)} -> {_hwc(y.dims)}", n * c * taps,
                        "a window sum can tie: PyTorch's float32 average, not ESP-NN's (ties away from zero)")


def analyse_payload(index: int, data: bytes) -> tuple[PartitionReport, list[FastPathLayer], Payload]:
    """Decode (and validate) one payload into its partition record and fast-path layers."""
    try:
        p = decode(data)
    except PayloadError as exc:
        raise PteError(f"delegate {index}: {exc}; re-lower the model with this version of executorch_espnn") from exc
    rep = PartitionReport(
        index=index,
        ops=tuple(op.opcode.name for op in p.ops),
        n_tensors=len(p.tensors),
        arena_bytes=p.arena_size,
        arena_lower_bound=arena_peak(p),
        scratch_bytes=max((op.scratch_size for op in p.ops), default=0),
        weights_bytes=len(p.constants),
        state_bytes=state_bytes(p),
        payload_bytes=len(data),
        inputs=_payload_specs(p, p.inputs, "in"),
        outputs=_payload_specs(p, p.outputs, "out"),
        target=p.target.name.lower(),
        producer=".".join(map(str, p.producer)),
    )
    layers = [lay for i in range(len(p.ops)) if (lay := _conv_layer(index, i, p)) is not None]
    return rep, layers, p


# ---------------------------------------------------------------------------------------------
# program analysis


@dataclass
class _Program:
    plan: Any
    payloads: list[tuple[int, bytes]]  # (delegate index in the plan, payload) for our backend
    backend_ids: list[str]


def _load_program(pte: bytes) -> _Program:
    from executorch.exir._serialize._program import deserialize_pte_binary
    from executorch.exir.schema import DataLocation

    data = bytes(pte)
    if len(data) < 8 or data[4:6] != b"ET":
        raise PteError(
            "not a readable ExecuTorch program (no 'ET' file identifier at byte 4); "
            "pass a .pte written by ExecuTorch's to_executorch()"
        )
    try:
        program = deserialize_pte_binary(data).program
    except Exception as exc:
        raise PteError(
            f"not a readable ExecuTorch program ({type(exc).__name__}: {str(exc)[:120]}); "
            "pass a .pte written by ExecuTorch's to_executorch()"
        ) from exc
    if not program.execution_plan:
        raise PteError("the program has no methods")
    plans = [pl for pl in program.execution_plan if pl.name == "forward"] or program.execution_plan
    plan = plans[0]
    payloads = []
    ids = []
    for di, d in enumerate(plan.delegates):
        ids.append(d.id)
        if d.id != BACKEND_ID:
            continue
        if d.processed.location != DataLocation.INLINE:
            raise PteError(f"delegate {di}: payload segment could not be restored")
        payloads.append((di, bytes(program.backend_delegate_data[d.processed.index].data)))
    return _Program(plan, payloads, ids)


def _tensor_bytes(t: Any) -> int:
    return math.prod(int(s) for s in t.sizes) * _SCALAR_SIZES.get(int(t.scalar_type), 1)


def _instructions(plan: Any) -> list[Any]:
    return [ins.instr_args for chain in plan.chains for ins in chain.instructions]


def _kernel_name(plan: Any, op_index: int) -> str:
    o = plan.operators[op_index]
    return f"{o.name}.{o.overload}" if o.overload else str(o.name)


def _evalue_number(plan: Any, idx: int) -> float | int | None:
    v = plan.values[idx].val
    for attr in ("double_val", "int_val"):
        if hasattr(v, attr):
            val = getattr(v, attr)
            return val if isinstance(val, int | float) else None
    return None


def _io_specs(prog: _Program, decoded: dict[int, Payload], names_in: Sequence[str] | None,
              names_out: Sequence[str] | None) -> tuple[list[TensorSpec], list[TensorSpec]]:
    """Program inputs/outputs with the int8 side's quantization when one is visible."""
    from executorch.exir.schema import DelegateCall, KernelCall

    plan = prog.plan
    consumers: dict[int, list[tuple[str, int, int]]] = {}  # value -> (kind, index, slot)
    producers: dict[int, tuple[str, int, int]] = {}
    for ins in _instructions(plan):
        if isinstance(ins, DelegateCall) and ins.delegate_index in decoded:
            p = decoded[ins.delegate_index]
            n_in = len(p.inputs)
            for k, v in enumerate(ins.args[:n_in]):
                consumers.setdefault(v, []).append(("delegate", ins.delegate_index, k))
            for k, v in enumerate(ins.args[n_in:n_in + len(p.outputs)]):
                producers[v] = ("delegate", ins.delegate_index, k)
        elif isinstance(ins, KernelCall):
            name = _kernel_name(plan, ins.op_index)
            if name.startswith("quantized_decomposed::quantize_per_tensor") and ins.args:
                consumers.setdefault(ins.args[0], []).append(("q", id(ins), 0))
            if name.startswith("quantized_decomposed::dequantize_per_tensor") and ins.args:
                producers[ins.args[-1]] = ("dq", id(ins), 0)
    kernel_args = {id(ins): ins.args for ins in _instructions(plan) if isinstance(ins, KernelCall)}

    def first_reader(p: Payload, tid: int) -> Any:
        return next((op for op in p.ops if tid in op.inputs), None)

    def spec(v: int, name: str, is_input: bool) -> TensorSpec:
        t = plan.values[v].val
        shape = tuple(int(s) for s in getattr(t, "sizes", ()))
        dtype = _SCALAR_TYPES.get(int(getattr(t, "scalar_type", -1)), "other")
        if dtype == "int8":
            return TensorSpec(name, shape, dtype, None, None, None)
        links = consumers.get(v, []) if is_input else ([producers[v]] if v in producers else [])
        for kind, idx, slot in links:
            if kind == "delegate":
                p = decoded[idx]
                tid = (p.inputs if is_input else p.outputs)[slot]
                if p.tensors[tid].dtype != DType.FLOAT32:
                    continue
                if is_input:
                    op = first_reader(p, tid)
                    if op is not None and op.opcode == Opcode.QUANTIZE:
                        q = p.tensors[op.output]
                        return TensorSpec(name, shape, dtype, q.scale, q.zero_point, "delegate")
                else:
                    op = next((o for o in p.ops if o.output == tid), None)
                    if op is not None and op.opcode == Opcode.DEQUANTIZE and op.inputs[0] is not None:
                        q = p.tensors[op.inputs[0]]
                        return TensorSpec(name, shape, dtype, q.scale, q.zero_point, "delegate")
            else:
                args = kernel_args[idx]
                scale, zp = _evalue_number(plan, args[1]), _evalue_number(plan, args[2])
                if scale is not None and zp is not None:
                    return TensorSpec(name, shape, dtype, float(scale), int(zp), "cpu")
        return TensorSpec(name, shape, dtype)

    ins_ = [spec(v, (names_in[k] if names_in and k < len(names_in) else f"input{k}"), True)
            for k, v in enumerate(plan.inputs)]
    outs = [spec(v, (names_out[k] if names_out and k < len(names_out) else f"output{k}"), False)
            for k, v in enumerate(plan.outputs)]
    return ins_, outs


def _cpu_kernel_entries(prog: _Program) -> list[OpEntry]:
    from executorch.exir.schema import KernelCall

    plan = prog.plan
    out = []
    frames_by_instr: list[Any] = []
    for chain in plan.chains:
        st = chain.stacktrace or []
        frames_by_instr += list(st) + [None] * (len(chain.instructions) - len(st))
    for i, ins in enumerate(_instructions(plan)):
        if not isinstance(ins, KernelCall):
            continue
        loc = None
        fl = frames_by_instr[i] if i < len(frames_by_instr) else None
        if fl is not None and fl.items:
            f = fl.items[-1]
            loc = f"{f.filename}:{f.lineno} in {f.name}"
        out.append(OpEntry(_kernel_name(plan, ins.op_index), loc,
                           "runs on ExecuTorch's CPU kernels (a ready .pte carries no reasons)"))
    return out


def build_report(
    pte: bytes,
    *,
    decisions: Iterable[OpDecision] | None = None,
    target: str | None = None,
    calibrated: bool | None = None,
    warnings: Iterable[str] = (),
    input_names: Sequence[str] | None = None,
    output_names: Sequence[str] | None = None,
    timings: dict[str, float] | None = None,
    partition_starts: Sequence[str] | None = None,
) -> LoweringReport:
    """The report of a ``.pte``.  ``decisions`` (from ``EspNNPartitioner.decisions``) supply
    the reasons and locations, ``partition_starts`` (``EspNNPartitioner.partition_starts``)
    why each partition starts where it does; without them (a ready .pte) operators are
    listed from the payloads and the program's CPU instructions."""
    prog = _load_program(pte)
    plan = prog.plan
    partitions: list[PartitionReport] = []
    fast: list[FastPathLayer] = []
    floats: list[FloatAverage] = []
    decoded: dict[int, Payload] = {}
    starts = list(partition_starts or [])
    for part, (di, data) in enumerate(prog.payloads):
        rep, layers, p = analyse_payload(part, data)
        if part < len(starts):
            rep = replace(rep, starts=starts[part])
        partitions.append(rep)
        fast += layers
        floats += [a for i in range(len(p.ops)) if (a := _float_average(part, i, p)) is not None]
        decoded[di] = p

    delegated: list[OpEntry]
    cpu: list[OpEntry]
    if decisions is not None:
        ds = list(decisions)
        delegated = [OpEntry(d.op, d.location, "", d.partition, d.node) for d in ds if d.delegated]
        cpu = [OpEntry(d.op, d.location, d.reason, None, d.node) for d in ds if not d.delegated]
    else:
        delegated = [OpEntry(name, None, "", r.index) for r in partitions for name in r.ops]
        cpu = _cpu_kernel_entries(prog)

    cpu_weights = 0
    for v in plan.values:
        t = v.val
        if hasattr(t, "data_buffer_idx") and t.data_buffer_idx > 0 and t.allocation_info is None:
            cpu_weights += _tensor_bytes(t)
    planned = [int(b) for b in plan.non_const_buffer_sizes[1:]]
    ins, outs = _io_specs(prog, decoded, input_names, output_names)

    tgt = target or (partitions[0].target if partitions else "unknown")
    warn = list(warnings)
    if calibrated is False and UNCALIBRATED_WARNING not in warn:
        warn.insert(0, UNCALIBRATED_WARNING)
    if not partitions:
        warn.append("no operator was delegated to ESP-NN: everything runs on ExecuTorch's CPU kernels")
    for r in partitions:
        if target is not None and r.target not in (target, "generic"):
            warn.append(f"partition {r.index} was built for {r.target}, not {target}")
    other = sorted({b for b in prog.backend_ids if b != BACKEND_ID})
    if other:
        warn.append(f"the program also holds delegates of other backends: {', '.join(other)}")

    states = [r.state_bytes for r in partitions]
    return LoweringReport(
        target=tgt,
        delegated_ops=delegated,
        cpu_ops=cpu,
        partitions=partitions,
        arena_bytes=sum(r.arena_bytes for r in partitions),
        planned_bytes=sum(planned),
        weights_bytes=sum(r.weights_bytes for r in partitions) + cpu_weights,
        state_bytes=None if any(s is None for s in states) else sum(s for s in states if s is not None),
        pte_bytes=len(pte),
        inputs=ins,
        outputs=outs,
        fast_path=fast,
        cpu_kernels=sorted({_kernel_name(plan, i) for i in range(len(plan.operators))}),
        cpu_weights_bytes=cpu_weights,
        planned_buffers=planned,
        warnings=warn,
        calibrated=calibrated,
        timings=dict(timings or {}),
        versions=_versions(),
        float_averages=floats,
    )


def _versions() -> dict[str, str]:
    """What made this report: our package, the payload format, torch and ExecuTorch."""
    from importlib.metadata import PackageNotFoundError, version

    from .payload.format import FORMAT_MAJOR, FORMAT_MINOR
    from .version import __version__

    out = {"executorch_espnn": __version__, "payload_format": f"{FORMAT_MAJOR}.{FORMAT_MINOR}"}
    for dist in ("torch", "executorch"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            out[dist] = "unknown"
    return out
