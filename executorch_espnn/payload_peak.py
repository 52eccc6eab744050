"""Where one delegate payload's arena need peaks: live activations plus the running kernel's scratch.

Computed from the payload's tensors and op order alone, never from the arena planner's offsets:
at each op, the arena tensors written by an op at or before it and read at or after it are live
(a delegate input or output with an io home in the arena, format 2.4, counts like one: an input
from the start to its last reader, an output from its writer to the end);
an op the format lets run in place (``OpSpec.in_place_slots``) whose input there dies at that op
with the output's size counts that pair once; the running kernel's scratch comes from
``executorch_espnn.scratch`` for the op's operands.  It sits below both the report
(executorch_espnn.report.ram: the whole RAM bill) and the lowering's kernel choice
(executorch_espnn.kernel_choice), which both read it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .payload import Opcode, Payload
from .planner import arena_lifetimes, in_place_inputs
from .scratch import (
    ConvGeometry,
    conv_scratch,
    depthwise_band_rows,
    depthwise_band_scratch,
    depthwise_bandable,
    depthwise_scratch,
    softmax_scratch,
)


def op_scratch(p: Payload, i: int) -> int:
    """The scratch bytes op ``i``'s kernel uses, from its operands (executorch_espnn.scratch),
    for the kernels that take one: ESP-NN's dense and depthwise convolutions without dilation
    (grouped and dilated ones run on the engine's own kernels) and its softmax.  A convolution
    with ``scratch_size`` 0 runs ESP-NN's ANSI kernel (executorch_espnn.kernel_choice): none;
    a depthwise one given less than its whole-map kernel touches runs in bands of output rows
    (docs/engine.md, "Depthwise bands"): what its bands take."""
    op = p.ops[i]
    if op.opcode in (Opcode.CONV2D, Opcode.DEPTHWISE_CONV2D) and op.scratch_size == 0:
        return 0
    geom = conv_geometry(p, i)
    # the whole-map figure is both the answer when the op is not banded and what band_rows_for
    # compares scratch_size with: work it out once (this runs per op per peak walk)
    whole = kernel_scratch_for(p, i, geom)
    rows = band_rows_for(p, i, geom, whole)
    if rows:
        assert geom is not None  # band_rows_for found one
        return depthwise_band_scratch(p.target, geom, rows)
    return whole


def band_rows(p: Payload, i: int) -> int:
    """Output rows per band op ``i`` runs with: a DEPTHWISE_CONV2D whose ``scratch_size`` is
    short of what its whole-map kernel touches but holds a band (what the engine reads the
    same way); 0 for every other op."""
    return band_rows_for(p, i, conv_geometry(p, i))


def band_rows_for(p: Payload, i: int, geom: ConvGeometry | None, whole: int | None = None) -> int:
    """``band_rows`` for op ``i`` given its ``conv_geometry`` ``geom``, for a caller that has
    read it already; ``whole`` is the op's ``kernel_scratch_for`` if the caller has that too
    (else it is worked out here, and only for an op that could run in bands)."""
    op = p.ops[i]
    if op.opcode != Opcode.DEPTHWISE_CONV2D or op.scratch_size == 0 or geom is None:
        return 0
    if whole is None:
        whole = kernel_scratch_for(p, i, geom)
    if op.scratch_size >= whole:
        return 0
    return depthwise_band_rows(p.target, geom, op.scratch_size)


def bandable_ops(p: Payload) -> list[tuple[int, ConvGeometry]]:
    """The DEPTHWISE_CONV2D ops of ``p`` whose geometry the engine can run in bands on
    ``p.target`` (``scratch.depthwise_bandable``), each with that geometry, in op order:
    the one scan both the speed lowering's band choice (executorch_espnn.kernel_choice) and
    the test payloads' banding (devkit/scratch_helpers.py) start from."""
    out = []
    for i, op in enumerate(p.ops):
        if op.opcode != Opcode.DEPTHWISE_CONV2D:
            continue
        geom = conv_geometry(p, i)
        if geom is not None and depthwise_bandable(p.target, geom):
            out.append((i, geom))
    return out


def conv_geometry(p: Payload, i: int) -> ConvGeometry | None:
    """What ESP-NN's scratch rules read of CONV2D/DEPTHWISE_CONV2D op ``i``; None for other
    ops and for dilated convolutions (the engine's own kernel, no scratch)."""
    op = p.ops[i]
    if op.opcode not in (Opcode.CONV2D, Opcode.DEPTHWISE_CONV2D):
        return None
    pr = op.params
    if pr["dilation_h"] != 1 or pr["dilation_w"] != 1:
        return None
    x_id, w_id = op.inputs[0], op.inputs[1]
    assert x_id is not None and w_id is not None
    _, kh, kw, _ = p.tensors[w_id].dims
    _, h, wd, cin = p.tensors[x_id].dims
    _, oh, ow, cout = p.tensors[op.output].dims
    depthwise = op.opcode == Opcode.DEPTHWISE_CONV2D
    return ConvGeometry(in_w=wd, in_h=h, in_ch=cin, filter_w=kw, filter_h=kh, out_w=ow, out_h=oh, out_ch=cout,
                        pad_w=pr["pad_left"], pad_h=pr["pad_top"], stride_w=pr["stride_w"],
                        stride_h=pr["stride_h"], ch_mult=pr["ch_mult"] if depthwise else 1)


def kernel_scratch(p: Payload, i: int) -> int:
    """The scratch the target's ESP-NN kernel for op ``i`` takes for its operands (its fast
    kernel for a convolution, on the whole map, whatever the payload chose)."""
    return kernel_scratch_for(p, i, conv_geometry(p, i))


def kernel_scratch_for(p: Payload, i: int, geom: ConvGeometry | None) -> int:
    """``kernel_scratch`` for op ``i`` given its ``conv_geometry`` ``geom``, for a caller that
    has read it already (see ``band_rows_for``)."""
    op = p.ops[i]
    if op.opcode == Opcode.SOFTMAX:
        x_id = op.inputs[0]
        assert x_id is not None
        return softmax_scratch(p.target, p.tensors[x_id].dims[-1])
    if geom is None:
        return 0
    if op.opcode == Opcode.DEPTHWISE_CONV2D:
        return depthwise_scratch(p.target, geom)
    return conv_scratch(p.target, geom) if op.params["groups"] == 1 else 0


@dataclass(frozen=True)
class LiveTensor:
    """An arena tensor live at the peak."""

    tensor: int  # tensor id in the payload
    dtype: str
    shape: tuple[int, ...]
    nbytes: int
    written_by: int  # op index (-1: a delegate input, written before the first op)
    opcode: str  # of that op

    def label(self) -> str:
        by = "program input" if self.written_by < 0 else f"op {self.written_by} {self.opcode}"
        return f"t{self.tensor} {self.dtype}{list(self.shape)} ({by})"


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


def _live_sets(p: Payload) -> tuple[list[list[int]], dict[int, int]]:
    """Per op, the arena tensors live while it runs (module docstring), and each one's writer."""
    lifetimes = arena_lifetimes(p.tensors, p.ops, p.homes())
    first = {tid: f for tid, (f, _) in lifetimes.items()}
    last = {tid: until for tid, (_, until) in lifetimes.items()}
    inplace = in_place_inputs(p.tensors, p.ops, last)
    sets = []
    for i, op in enumerate(p.ops):
        live = [tid for tid, f in first.items() if f <= i <= last[tid]]
        if op.output in inplace:
            live.remove(op.output)  # the output takes its dying input's bytes
        sets.append(live)
    return sets, first


def live_bytes(p: Payload) -> list[int]:
    """Per op, the live arena activation bytes while it runs (its scratch left out)."""
    sets, _ = _live_sets(p)
    return [sum(p.tensors[t].nbytes for t in live) for live in sets]


def partition_peak(index: int, p: Payload) -> PartitionPeak:
    """The peak over ``p``'s ops of live arena bytes plus the running kernel's scratch (see the
    module's docstring for what counts)."""
    sets, first = _live_sets(p)
    best: PartitionPeak | None = None
    for i, (op, live) in enumerate(zip(p.ops, sets, strict=True)):
        acts = sum(p.tensors[t].nbytes for t in live)
        scratch = op_scratch(p, i)
        if best is None or acts + scratch > best.bytes:
            ordered = sorted(live, key=lambda t: (-p.tensors[t].nbytes, t))
            best = PartitionPeak(index, i, op.opcode.name, acts, scratch, tuple(
                LiveTensor(t, p.tensors[t].dtype.numpy_name, tuple(p.tensors[t].dims), p.tensors[t].nbytes,
                           first[t], p.ops[first[t]].opcode.name if first[t] >= 0 else "-") for t in ordered))
    return best if best is not None else PartitionPeak(index, -1, "-", 0, 0, ())
