"""The report's figures, derived from the bytes of the ``.pte`` (read by executorch_espnn.pte)
and of each decoded delegate payload, plus the partitioner's decisions when there are any."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..decisions import OpDecision
from ..errors import PteError
from ..kernel_choice import ansi_ops, banded_ops
from ..payload import DType, Opcode, Payload, PayloadError, Storage, decode
from ..payload.format import AVG_TORCH_ADAPTIVE, AVG_TORCH_MEAN, AVG_TORCH_POOL
from ..payload.state import state_bytes
from ..payload_peak import PartitionPeak, partition_peak
from ..planner import arena_lifetimes
from ..pte import BACKEND_ID, SCALAR_TYPES, DelegateCallInfo, ProgramInfo, TensorDecl, read_program
from .ram import held_io
from .records import (
    ArenaTensor,
    ArenaTimeline,
    BandedLayer,
    FastPathLayer,
    FloatAverage,
    GraphNode,
    LoweringReport,
    OpEntry,
    PartitionReport,
    RamFirstLayer,
    TensorSpec,
)

if TYPE_CHECKING:
    from ..accuracy import AccuracyReport

# the engine runs depthwise convolutions whose padded input is taller or wider than this on its
# own kernel (ESP-NN indexes the padded input with int16_t; engine/ops/depthwise_conv2d.c)
DW_MAX_SPAN = 32767

UNCALIBRATED_WARNING = (
    "not calibrated: accuracy unknown, pass calibration data (calibration= in lower(), "
    "calibration_data() in the model file, or --calibration data.npz)"
)


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
    """The largest sum of live arena bytes at any op (scratch included), from the op list."""
    return max(arena_timeline(p).live_bytes, default=0)


def arena_timeline(p: Payload) -> ArenaTimeline:
    """Each arena tensor's lifetime and planned offset, and the live bytes at every op.

    Live bytes are computed from dataflow alone (who writes, who reads last), not from the
    planner's offsets, except to recognise in-place ops: an output at exactly the offset and
    size of an input that dies at that op counts once.  A delegate input or output with an io
    home (format 2.4) is an arena tensor at its home: an input from op 0 to its last reader, an
    output from its writer to the last op."""
    n = len(p.ops)
    homes = p.homes()
    # a homed input is live "before op 0": the timeline starts it at op 0
    spans = {tid: (max(f, 0), max(until, f, 0)) for tid, (f, until) in arena_lifetimes(p.tensors, p.ops, homes).items()}

    def offset(tid: int) -> int:
        return homes.get(tid, p.tensors[tid].offset)

    live = [0] * n
    for tid, (f, until) in spans.items():
        for i in range(f, until + 1):
            live[i] += p.tensors[tid].nbytes
    for i, op in enumerate(p.ops):
        live[i] += op.scratch_size
        out = p.tensors[op.output]
        if out.storage != Storage.ARENA:
            continue
        for src in op.inputs:
            if src is None:
                continue
            t = p.tensors[src]
            if (t.storage == Storage.ARENA and spans.get(src, (0, -1))[1] == i and t.offset == out.offset
                    and t.nbytes == out.nbytes):  # (homed io tensors are never in place)
                live[i] -= out.nbytes
                break
    tensors = tuple(ArenaTensor(tid, offset(tid), p.tensors[tid].nbytes, f, until)
                    for tid, (f, until) in sorted(spans.items(), key=lambda kv: (kv[1][0], kv[0])))
    scratch = tuple((i, op.scratch_offset, op.scratch_size) for i, op in enumerate(p.ops) if op.scratch_size)
    return ArenaTimeline(tensors, scratch, tuple(live))


def _hwc(dims: tuple[int, ...]) -> str:
    return "x".join(str(d) for d in (dims[1:] if len(dims) == 4 else dims))


def _dims(dims: tuple[int, ...]) -> str:
    return "x".join(str(d) for d in dims)


def _matmul_layer(part: int, i: int, p: Payload) -> FastPathLayer:
    """BATCH_MATMUL runs one esp_nn_fully_connected_s8 call per row of a, with b (handed over
    transposed) as the filter and b's zero point as ESP-NN's filter offset, a's as its input
    offset (fast on the S3 only with both 0)."""
    op = p.ops[i]
    a_id, b_id = op.inputs[0], op.inputs[1]
    assert a_id is not None and b_id is not None
    a, bt, y = p.tensors[a_id], p.tensors[b_id], p.tensors[op.output]
    m, k = a.dims[-2], a.dims[-1]
    n = bt.dims[-2]
    rows = y.numel // n
    layer = f"matmul {m}x{k} @ {k}x{n}" + (f" x{rows // m} batches" if rows > m else "")
    # every dim (a batch of heads is no image, unlike _hwc's NHWC shapes)
    shape = " -> ".join((f"{_dims(a.dims)}, {_dims(bt.dims)}", _dims(y.dims)))
    macs = rows * n * k
    if op.params["b_offset"] != 0:
        return FastPathLayer(part, i, layer, shape, macs, False,
                             "b's zero point is not 0 (ESP-NN's filter offset): ESP-NN's s16 kernel")
    if k < 16:
        return FastPathLayer(part, i, layer, shape, macs, False, f"row_len {k} < 16: ESP-NN's s16 fallback")
    if (a.storage == Storage.ARENA and a.offset % 16) or (rows > 1 and k % 16):
        return FastPathLayer(part, i, layer, shape, macs, False, "rows of a not 16-byte aligned")
    if op.params["a_offset"] != 0:
        # measured slower than the s16 path (docs/operators.md, "Symmetric matmul operands")
        return FastPathLayer(part, i, layer, shape, macs, False,
                             "s8 path with a's zero point: ESP-NN sums the filter at every row")
    return FastPathLayer(part, i, layer, shape, macs, True, "row_len >= 16, zero points 0, aligned")


#: operators ESP-NN has no kernel for, run by the engine's own C kernel (engine/ops/*.c); the
#: fast-path table lists them so that every layer's status is visible
ENGINE_KERNEL_OPS = {
    Opcode.PRELU: "engine C kernel: ESP-NN has no PReLU",
    Opcode.UPSAMPLE_BILINEAR: "engine C kernel: ESP-NN has no resize",
    Opcode.TRANSPOSE_CONV2D: "engine C kernel: ESP-NN has no transposed convolution",
    Opcode.DIV: "engine C kernel: ESP-NN has no division",
}


def _engine_kernel_layer(part: int, i: int, p: Payload) -> FastPathLayer:
    op = p.ops[i]
    x_id = op.inputs[0]
    assert x_id is not None
    x, y = p.tensors[x_id], p.tensors[op.output]
    shape = f"{_hwc(x.dims)} -> {_hwc(y.dims)}"
    why = ENGINE_KERNEL_OPS[op.opcode]
    if op.opcode == Opcode.TRANSPOSE_CONV2D:
        w_id = op.inputs[1]
        assert w_id is not None
        n, h, w, cin = x.dims
        cout, kh, kw = p.tensors[w_id].dims[:3]
        pr = op.params
        groups = pr["groups"]
        # every input element times every filter tap of its group (the dual of CONV2D's count)
        macs = n * h * w * cin * kh * kw * (cout // groups)
        layer = f"transposed conv {kh}x{kw}/{pr['stride_h']}" + (f" g{groups}" if groups > 1 else "")
        return FastPathLayer(part, i, layer, shape, macs, False, why)
    # elementwise and resampling: no multiply-accumulate layer, no MACs counted
    layer = {Opcode.PRELU: "prelu", Opcode.DIV: "division"}.get(op.opcode, "bilinear upsample")
    return FastPathLayer(part, i, layer, shape, 0, False, why)


def _fast_path_layer(part: int, i: int, p: Payload) -> FastPathLayer | None:
    """The fast-path record of op ``i`` when it is a MAC layer (conv, FC, matmul, layer norm)
    or a layer ESP-NN has no kernel for."""
    op = p.ops[i]
    if op.opcode in ENGINE_KERNEL_OPS:
        return _engine_kernel_layer(part, i, p)
    if op.opcode == Opcode.BATCH_MATMUL:
        return _matmul_layer(part, i, p)
    if op.opcode == Opcode.LAYER_NORM:
        x = p.tensors[op.output]
        d = x.dims[-1]
        # two multiplies per element (the square for the variance, gamma)
        return FastPathLayer(part, i, f"layer norm over {d}", _hwc(x.dims), 2 * x.numel, False,
                             "engine C kernel (ESP-NN has no layer norm)")
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
    timeline = arena_timeline(p)
    rep = PartitionReport(
        index=index,
        ops=tuple(op.opcode.name for op in p.ops),
        n_tensors=len(p.tensors),
        arena_bytes=p.arena_size,
        arena_lower_bound=max(timeline.live_bytes, default=0),
        scratch_bytes=max((op.scratch_size for op in p.ops), default=0),
        weights_bytes=len(p.constants),
        state_bytes=state_bytes(p),
        payload_bytes=len(data),
        inputs=_payload_specs(p, p.inputs, "in"),
        outputs=_payload_specs(p, p.outputs, "out"),
        target=p.target.name.lower(),
        producer=".".join(map(str, p.producer)),
        arena=timeline,
    )
    layers = [lay for i in range(len(p.ops)) if (lay := _fast_path_layer(index, i, p)) is not None]
    return replace(rep, ansi_ops=_ram_first_layers(p, layers), banded_ops=_banded_layers(p, layers)), layers, p


def _banded_layers(p: Payload, layers: Sequence[FastPathLayer]) -> tuple[BandedLayer, ...]:
    """The depthwise ops run in bands, named like the fast-path table."""
    by_op = {lay.op: lay for lay in layers}
    out = []
    for c in banded_ops(p):
        lay = by_op.get(c.op)
        out.append(BandedLayer(c.op, lay.layer if lay else "depthwise", lay.shape if lay else "", c.rows,
                               p.ops[c.op].scratch_size, c.saved_bytes))
    return tuple(out)


def _ram_first_layers(p: Payload, layers: Sequence[FastPathLayer]) -> tuple[RamFirstLayer, ...]:
    """The ops on ESP-NN's ANSI kernel by choice, named like the fast-path table, with the
    measured instruction cost when the cost cache has one (executorch_espnn.kernel_cost)."""
    from ..kernel_cost import NOT_MEASURED, cost_key, lookup

    by_op = {lay.op: lay for lay in layers}
    chip = "ESP32-" + p.target.name[len("ESP32"):]  # only S3/P4 kernels take scratch
    out = []
    for c in ansi_ops(p):
        lay = by_op.get(c.op)
        cost = lookup(cost_key(p, c.op))
        out.append(RamFirstLayer(
            c.op, c.opcode, lay.layer if lay else c.opcode.lower(), lay.shape if lay else "", c.saved_bytes,
            "ESP-NN ANSI C", f"ESP-NN {chip} SIMD",
            None if cost is None else (cost.fast_instructions, cost.ansi_instructions),
            NOT_MEASURED if cost is None else cost.source,
        ))
    return tuple(out)


# ---------------------------------------------------------------------------------------------
# program analysis


def _io_specs(info: ProgramInfo, decoded: dict[int, Payload], names_in: Sequence[str] | None,
              names_out: Sequence[str] | None) -> tuple[list[TensorSpec], list[TensorSpec]]:
    """Program inputs/outputs with the int8 side's quantization when one is visible."""
    consumers: dict[int, list[tuple[str, int, int]]] = {}  # value -> (kind, index, slot)
    producers: dict[int, tuple[str, int, int]] = {}
    kernel_args: dict[int, tuple[int, ...]] = {}
    for i, call in enumerate(info.calls):
        if isinstance(call, DelegateCallInfo):
            if call.delegate_index not in decoded:
                continue
            p = decoded[call.delegate_index]
            n_in = len(p.inputs)
            for k, v in enumerate(call.args[:n_in]):
                consumers.setdefault(v, []).append(("delegate", call.delegate_index, k))
            for k, v in enumerate(call.args[n_in:n_in + len(p.outputs)]):
                producers[v] = ("delegate", call.delegate_index, k)
        else:
            kernel_args[i] = call.args
            if call.op.startswith("quantized_decomposed::quantize_per_tensor") and call.args:
                consumers.setdefault(call.args[0], []).append(("q", i, 0))
            if call.op.startswith("quantized_decomposed::dequantize_per_tensor") and call.args:
                producers[call.args[-1]] = ("dq", i, 0)

    def first_reader(p: Payload, tid: int) -> Any:
        return next((op for op in p.ops if tid in op.inputs), None)

    def writer(p: Payload, tid: int) -> Any:
        return next((op for op in p.ops if op.output == tid), None)

    def access(op: Any, converts: Opcode) -> str:
        if op is None:
            return "in place"
        if op.opcode == converts:
            return "quantized" if converts == Opcode.QUANTIZE else "dequantized"
        if op.opcode == Opcode.TRANSPOSE:
            return "transposed copy"
        if op.opcode == Opcode.RESHAPE:
            return "copy"
        return "in place"

    def spec(v: int, decl: TensorDecl | None, name: str, is_input: bool) -> TensorSpec:
        shape = decl.sizes if decl is not None else ()
        dtype = decl.dtype if decl is not None and decl.scalar_type in SCALAR_TYPES else "other"
        layout = "NCHW" if len(shape) == 4 else "contiguous"  # (said where a delegate reads it)
        links = consumers.get(v, []) if is_input else ([producers[v]] if v in producers else [])
        for kind, idx, slot in links:
            if kind == "delegate":
                p = decoded[idx]
                tid = (p.inputs if is_input else p.outputs)[slot]
                t = p.tensors[tid]
                op = first_reader(p, tid) if is_input else writer(p, tid)
                how = access(op, Opcode.QUANTIZE if is_input else Opcode.DEQUANTIZE)
                if dtype == "int8" and t.dtype == DType.INT8:
                    # int8 program I/O: the delegate's own parameters are the tensor's
                    return TensorSpec(name, shape, dtype, t.scale, t.zero_point, "program", layout, how)
                if t.dtype != DType.FLOAT32:
                    continue
                if is_input:
                    if op is not None and op.opcode == Opcode.QUANTIZE:
                        q = p.tensors[op.output]
                        return TensorSpec(name, shape, dtype, q.scale, q.zero_point, "delegate", layout, how)
                else:
                    if op is not None and op.opcode == Opcode.DEQUANTIZE and op.inputs[0] is not None:
                        q = p.tensors[op.inputs[0]]
                        return TensorSpec(name, shape, dtype, q.scale, q.zero_point, "delegate", layout, how)
            elif dtype != "int8":
                args = kernel_args[idx]
                scale, zp = info.scalars.get(args[1]), info.scalars.get(args[2])
                if scale is not None and zp is not None:
                    return TensorSpec(name, shape, dtype, float(scale), int(zp), "cpu")
        return TensorSpec(name, shape, dtype)

    ins_ = [spec(v, d, (names_in[k] if names_in and k < len(names_in) else f"input{k}"), True)
            for k, (v, d) in enumerate(zip(info.input_values, info.inputs, strict=True))]
    outs = [spec(v, d, (names_out[k] if names_out and k < len(names_out) else f"output{k}"), False)
            for k, (v, d) in enumerate(zip(info.output_values, info.outputs, strict=True))]
    return ins_, outs


def _cpu_kernel_entries(info: ProgramInfo) -> list[OpEntry]:
    return [OpEntry(k.op, k.location, "runs on ExecuTorch's CPU kernels (a ready .pte carries no reasons)")
            for k in info.kernel_calls]


UNRECORDED_LAYOUT_WARNING = (
    'input_layout="nhwc" is recorded in the ESP-NN delegates\' options and this program has none: '
    "read as a ready .pte (a build's model_pte.h, its report) its 4-D inputs are labelled NCHW, "
    "though the program takes them [N, H, W, C]")


def nhwc_copy_warning(index: int, name: str) -> str:
    return (f'input {index} ({name}) is taken channels-last (input_layout="nhwc"), but the first '
            "delegated op reads it in NCHW order (not a convolution): the payload transposes it "
            'once; input_layout="nchw" would have the caller do that copy instead')


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
    accuracy: AccuracyReport | None = None,
    profile: dict[str, Any] | None = None,
    nhwc_inputs: Sequence[int] | None = None,
) -> LoweringReport:
    """The report of a ``.pte``.  ``nhwc_inputs``: the program inputs a channels-last lowering
    takes as [N, H, W, C] (``lower(..., input_layout="nhwc")``); None (a ready .pte) reads
    them from what its delegates record (``ProgramInfo.nhwc_inputs``).  ``decisions`` (from ``EspNNPartitioner.decisions``) supply
    the reasons and locations, ``partition_starts`` (``EspNNPartitioner.partition_starts``)
    why each partition starts where it does; without them (a ready .pte) operators are
    listed from the payloads and the program's CPU instructions."""
    info = read_program(pte, None)
    ours = [(di, data) for di, (bid, data) in enumerate(zip(info.backends, info.payloads, strict=True))
            if bid == BACKEND_ID]
    partitions: list[PartitionReport] = []
    fast: list[FastPathLayer] = []
    floats: list[FloatAverage] = []
    decoded: dict[int, Payload] = {}
    peaks: list[PartitionPeak] = []
    starts = list(partition_starts or [])
    for part, (di, data) in enumerate(ours):
        rep, layers, p = analyse_payload(part, data)
        if part < len(starts):
            rep = replace(rep, starts=starts[part])
        partitions.append(rep)
        fast += layers
        floats += [a for i in range(len(p.ops)) if (a := _float_average(part, i, p)) is not None]
        decoded[di] = p
        peaks.append(partition_peak(part, p))

    delegated: list[OpEntry]
    cpu: list[OpEntry]
    graph: list[GraphNode] = []
    if decisions is not None:
        ds = list(decisions)
        graph = [GraphNode(d.node, d.op, d.partition if d.delegated else None, d.reason, d.location, d.inputs)
                 for d in ds]
        delegated = [OpEntry(d.op, d.location, "", d.partition, d.node) for d in ds if d.delegated]
        cpu = [OpEntry(d.op, d.location, d.reason, None, d.node) for d in ds if not d.delegated]
    else:
        delegated = [OpEntry(name, None, "", r.index) for r in partitions for name in r.ops]
        cpu = _cpu_kernel_entries(info)

    cpu_weights = info.constant_tensor_bytes
    planned = list(info.planned_buffers)
    ins, outs = _io_specs(info, decoded, input_names, output_names)
    recorded = info.nhwc_inputs
    nhwc_inputs = recorded if nhwc_inputs is None else tuple(nhwc_inputs)
    ins = [replace(t, layout="NHWC") if i in nhwc_inputs else t for i, t in enumerate(ins)]

    tgt = target or (partitions[0].target if partitions else "unknown")
    warn = list(warnings)
    warn += [nhwc_copy_warning(i, t.name) for i, t in enumerate(ins)
             if i in nhwc_inputs and t.access == "transposed copy"]
    if nhwc_inputs != recorded:  # (a program with no delegate of ours: nothing records it)
        warn.append(UNRECORDED_LAYOUT_WARNING)
    if calibrated is False and UNCALIBRATED_WARNING not in warn:
        warn.insert(0, UNCALIBRATED_WARNING)
    if not partitions:
        warn.append("no operator was delegated to ESP-NN: everything runs on ExecuTorch's CPU kernels")
    for r in partitions:
        if target is not None and r.target not in (target, "generic"):
            warn.append(f"partition {r.index} was built for {r.target}, not {target}")
    other = sorted({b for b in info.backends if b != BACKEND_ID})
    if other:
        warn.append(f"the program also holds delegates of other backends: {', '.join(other)}")

    states = [r.state_bytes for r in partitions]
    return LoweringReport(
        target=tgt,
        delegated_ops=delegated,
        cpu_ops=cpu,
        partitions=partitions,
        # one arena lent to every delegate of the method, each from its start: the largest
        # partition's (espnn_component/adapter/espnn_arena_lease.h)
        arena_bytes=max((r.arena_bytes for r in partitions), default=0),
        planned_bytes=sum(planned),
        weights_bytes=sum(r.weights_bytes for r in partitions) + cpu_weights,
        state_bytes=None if any(s is None for s in states) else sum(s for s in states if s is not None),
        pte_bytes=len(pte),
        inputs=ins,
        outputs=outs,
        fast_path=fast,
        cpu_kernels=sorted(set(info.operators)),
        cpu_weights_bytes=cpu_weights,
        planned_buffers=planned,
        warnings=warn,
        calibrated=calibrated,
        timings=dict(timings or {}),
        versions=_versions(),
        float_averages=floats,
        accuracy=accuracy,
        graph=graph,
        peaks=peaks,
        held_io=held_io(info),
        profile=profile,
    )


def _versions() -> dict[str, str]:
    """What made this report: our package, the payload format, torch and ExecuTorch."""
    from importlib.metadata import PackageNotFoundError, version

    from ..payload.format import FORMAT_MAJOR, FORMAT_MINOR
    from ..version import __version__

    out = {"executorch_espnn": __version__, "payload_format": f"{FORMAT_MAJOR}.{FORMAT_MINOR}"}
    for dist in ("torch", "executorch"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            out[dist] = "unknown"
    return out
