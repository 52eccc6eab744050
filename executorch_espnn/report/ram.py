"""The whole RAM bill of a lowered program and the lower bound it is judged against.

The bill is what ``EspnnModel::begin()`` allocates (docs/memory.md): the delegate arena,
ExecuTorch's planned buffers, the delegate state (handles + decoded tables), the method
allocator and the temp allocator — the five byte counts of the generated ``model_pte.h`` —
plus the I/O views a sketch may ask for later (``input<int8_t>()`` on a float input and so on),
allocated on first request and listed apart.  The lowering report knows the first three; the
method and temp allocators are measured by loading the program (``executorch_espnn.host.measure``,
what the build does), so a report made without measuring leaves them ``None``.

The bound is computed from the payloads' tensors and op order alone, never from the arena
planner's offsets: at each op, the arena tensors written by an op at or before it and read at
or after it are live; an op the format lets run in place (``OpSpec.in_place_slots``) whose input
there dies at that op with the output's size counts that pair once; the running kernel's
scratch comes from ``executorch_espnn.scratch`` for the op's operands.  The delegates of one
method all use one arena, each from its start (they never run at the same time and keep nothing
in it between calls: espnn_component/adapter/espnn_arena_lease.h), so the arena's bound is the
largest partition's peak, not their sum.  The arena is memory of its own, apart from ExecuTorch's planned buffers, which must
at some moment hold together whichever is largest of: the program's inputs (before the first
instruction), its outputs (after the last), or one delegate call's inputs and outputs (during
the call), each in the dtype the program has it (``held_io``).  ExecuTorch's planner may reuse
an input's bytes once its last reader ran, so the inputs and outputs are not simply added.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..payload import Opcode, Payload, Storage
from ..payload.format import OP_SPECS
from ..program_io import view_bytes
from ..pte import DelegateCallInfo, ProgramInfo
from ..scratch import ConvGeometry, conv_scratch, depthwise_scratch, softmax_scratch


def io_view_bytes(dtype: str, numel: int, scale: float | None) -> int:
    """Bytes of the other-dtype view ``EspnnModel`` allocates for one program input or output
    on the first ``input<T>()``/``output<T>()`` whose T is not the tensor's dtype
    (``program_io.view_bytes``, the Python twin of ``view_bytes`` in
    espnn_component/runtime/espnn_model.cpp); none without a quantization to convert with."""
    if scale is None or not scale > 0 or dtype not in ("int8", "float32"):
        return 0
    return view_bytes(numel, dtype, "float32" if dtype == "int8" else "int8")


def op_scratch(p: Payload, i: int) -> int:
    """The scratch bytes op ``i``'s kernel uses, from its operands (executorch_espnn.scratch),
    for the kernels that take one: ESP-NN's dense and depthwise convolutions without dilation
    (grouped and dilated ones run on the engine's own kernels) and its softmax.  A convolution
    with ``scratch_size`` 0 runs ESP-NN's ANSI kernel (executorch_espnn.kernel_choice): none."""
    op = p.ops[i]
    if op.opcode in (Opcode.CONV2D, Opcode.DEPTHWISE_CONV2D) and op.scratch_size == 0:
        return 0
    return kernel_scratch(p, i)


def kernel_scratch(p: Payload, i: int) -> int:
    """The scratch the target's ESP-NN kernel for op ``i`` takes for its operands (its fast
    kernel for a convolution, whatever the payload chose)."""
    op = p.ops[i]
    if op.opcode not in (Opcode.CONV2D, Opcode.DEPTHWISE_CONV2D, Opcode.SOFTMAX):
        return 0
    x_id = op.inputs[0]
    assert x_id is not None
    x, y = p.tensors[x_id], p.tensors[op.output]
    if op.opcode == Opcode.SOFTMAX:
        return softmax_scratch(p.target, x.dims[-1])
    pr = op.params
    if pr["dilation_h"] != 1 or pr["dilation_w"] != 1:
        return 0
    w_id = op.inputs[1]
    assert w_id is not None
    _, kh, kw, _ = p.tensors[w_id].dims
    _, h, wd, cin = x.dims
    _, oh, ow, cout = y.dims
    depthwise = op.opcode == Opcode.DEPTHWISE_CONV2D
    geom = ConvGeometry(in_w=wd, in_h=h, in_ch=cin, filter_w=kw, filter_h=kh, out_w=ow, out_h=oh, out_ch=cout,
                        pad_w=pr["pad_left"], pad_h=pr["pad_top"], stride_w=pr["stride_w"],
                        stride_h=pr["stride_h"], ch_mult=pr["ch_mult"] if depthwise else 1)
    if depthwise:
        return depthwise_scratch(p.target, geom)
    return conv_scratch(p.target, geom) if pr["groups"] == 1 else 0


@dataclass(frozen=True)
class LiveTensor:
    """An arena tensor live at the peak."""

    tensor: int  # tensor id in the payload
    dtype: str
    shape: tuple[int, ...]
    nbytes: int
    written_by: int  # op index
    opcode: str  # of that op

    def label(self) -> str:
        return f"t{self.tensor} {self.dtype}{list(self.shape)} (op {self.written_by} {self.opcode})"


@dataclass(frozen=True)
class PartitionPeak:
    """Where one payload's live set peaks: op, its live tensors, its kernel's scratch."""

    index: int
    op: int  # -1: no op
    opcode: str
    activation_bytes: int
    scratch_bytes: int
    tensors: tuple[LiveTensor, ...]  # live at ``op``, the largest first (an in-place pair: the input)

    @property
    def bytes(self) -> int:
        return self.activation_bytes + self.scratch_bytes

    def setter(self) -> str:
        """Which tensors or scratch set the peak, in one phrase."""
        if self.op < 0:
            return "no op"
        parts = [t.label() for t in self.tensors[:3]]
        if len(self.tensors) > 3:
            parts.append(f"{len(self.tensors) - 3} more")
        if self.scratch_bytes:
            parts.append(f"{self.scratch_bytes:,} B scratch")
        return f"partition {self.index} op {self.op} {self.opcode}: " + " + ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "op": self.op, "opcode": self.opcode, "bytes": self.bytes,
                "activation_bytes": self.activation_bytes, "scratch_bytes": self.scratch_bytes,
                "tensors": [{"tensor": t.tensor, "dtype": t.dtype, "shape": list(t.shape), "bytes": t.nbytes,
                             "written_by": t.written_by, "opcode": t.opcode} for t in self.tensors],
                "setter": self.setter()}


def partition_peak(index: int, p: Payload) -> PartitionPeak:
    """The peak over ``p``'s ops of live arena bytes plus the running kernel's scratch (see the
    module's docstring for what counts)."""
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    for i, op in enumerate(p.ops):
        if p.tensors[op.output].storage == Storage.ARENA:
            first.setdefault(op.output, i)
            last[op.output] = max(last.get(op.output, i), i)
        for tid in op.inputs:
            if tid is not None and p.tensors[tid].storage == Storage.ARENA:
                last[tid] = max(last.get(tid, i), i)
    best: PartitionPeak | None = None
    for i, op in enumerate(p.ops):
        live = [tid for tid, f in first.items() if f <= i <= last[tid]]
        shared = _in_place_input(p, i, last)
        if shared is not None:
            live.remove(op.output)  # the output takes its dying input's bytes
        acts = sum(p.tensors[t].nbytes for t in live)
        scratch = op_scratch(p, i)
        if best is None or acts + scratch > best.bytes:
            ordered = sorted(live, key=lambda t: (-p.tensors[t].nbytes, t))
            best = PartitionPeak(index, i, op.opcode.name, acts, scratch, tuple(
                LiveTensor(t, p.tensors[t].dtype.numpy_name, tuple(p.tensors[t].dims), p.tensors[t].nbytes,
                           first[t], p.ops[first[t]].opcode.name) for t in ordered))
    return best if best is not None else PartitionPeak(index, -1, "-", 0, 0, ())


def _in_place_input(p: Payload, i: int, last: dict[int, int]) -> int | None:
    """The input op ``i`` may overwrite with its output by the format's in-place rule (an
    in-place slot, the same bytes, dims unless the op allows any, last read here, read once)."""
    op = p.ops[i]
    out = p.tensors[op.output]
    spec = OP_SPECS[op.opcode]
    if out.storage != Storage.ARENA:
        return None
    for s in spec.in_place_slots:
        tid = op.inputs[s]
        if tid is None:
            continue
        t = p.tensors[tid]
        if (t.storage == Storage.ARENA and last.get(tid) == i and t.nbytes == out.nbytes
                and (spec.in_place_any_dims or t.dims == out.dims) and op.inputs.count(tid) == 1):
            return tid
    return None


@dataclass(frozen=True)
class HeldIO:
    """The planned program tensors that must be live at one moment (``held_io``)."""

    bytes: int
    what: str  # "the program's inputs", "the program's outputs", "delegate 0's inputs and outputs"


NO_PROGRAM = HeldIO(0, "nothing (no program read)")


def held_io(info: ProgramInfo) -> HeldIO:
    """The largest set of memory-planned tensors the program must hold at one moment among
    the program's inputs, its outputs and each delegate call's arguments (module docstring)."""
    def size(values: Sequence[int]) -> int:
        return sum(info.planned_values.get(v, 0) for v in set(values))

    best = HeldIO(size(info.input_values), "the program's inputs")
    outs = HeldIO(size(info.output_values), "the program's outputs")
    best = outs if outs.bytes > best.bytes else best
    for call in info.calls:
        if isinstance(call, DelegateCallInfo):
            held = HeldIO(size(call.args), f"delegate {call.delegate_index}'s inputs and outputs")
            best = held if held.bytes > best.bytes else best
    return best


def _numel(shape: Sequence[int]) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n


def ram_record(peaks: Sequence[PartitionPeak], io: HeldIO, r: dict[str, Any]) -> dict[str, Any]:
    """report.json's ``ram``: the bill as the report knows it (method and temp allocator
    ``None``: not measured) and the bound, from the rest of the report's JSON form ``r``."""
    views = [{"role": role, "name": s["name"], "dtype": s["dtype"],
              "bytes": io_view_bytes(s["dtype"], _numel(s["shape"]), s["scale"])}
             for role, side in (("input", "inputs"), ("output", "outputs")) for s in r[side]]
    # one arena for every partition: the largest partition's peak (module docstring)
    top = max(peaks, key=lambda p: p.bytes, default=None)
    act = top.activation_bytes if top is not None else 0
    scratch = top.scratch_bytes if top is not None else 0
    bound = {"bytes": act + scratch + io.bytes, "activation_bytes": act, "scratch_bytes": scratch,
             "io_bytes": io.bytes, "io_held": io.what, "setter": top.setter() if top is not None else "no delegate",
             "partitions": [p.to_dict() for p in peaks]}
    return with_measured({"arena_bytes": r["arena_bytes"], "planned_bytes": r["planned_bytes"],
                          "state_bytes": r["state_bytes"], "io_views": views, "bound": bound}, None)


# the bill's pools: model_pte.h's byte counts, in the order EspnnModel::begin() allocates them
POOLS = ("arena_bytes", "state_bytes", "planned_bytes", "method_allocator_bytes", "temp_allocator_bytes")


def with_measured(ram: dict[str, Any], sizes: dict[str, int] | None) -> dict[str, Any]:
    """``ram`` (report.json's) completed with the measured pools (``host.measure(pte).header_sizes()``,
    the generated header's figures; ``None``: not measured): the total, what begin() allocates,
    equals their sum; ``ratio`` is the total over the bound."""
    out = dict(ram)
    if sizes is not None:
        out.update({k: int(sizes[k]) for k in POOLS})
    else:
        out.setdefault("method_allocator_bytes", None)
        out.setdefault("temp_allocator_bytes", None)
    out["measured"] = sizes is not None
    pools = [out.get(k) for k in POOLS]
    total = sum(int(v) for v in pools if v is not None) if all(v is not None for v in pools) else None
    out["total_bytes"] = total
    out["io_view_bytes"] = sum(int(v["bytes"]) for v in out["io_views"])
    bound = out["bound"]
    out["ratio"] = total / bound["bytes"] if total is not None and bound["bytes"] else None
    kernel = bound["activation_bytes"] + bound["scratch_bytes"]
    out["arena_ratio"] = out["arena_bytes"] / kernel if kernel else None
    return out
