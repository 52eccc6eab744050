"""The report's records: operators, tensors, partitions, fast-path layers and the whole
lowering, with the JSON form (``to_dict``) whose keys are stable."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..payload_peak import PartitionPeak
from . import text
from .ram import NO_PROGRAM, HeldIO, ram_record

if TYPE_CHECKING:
    from ..accuracy import AccuracyReport

# 2: partitions[].starts, float_averages, the accuracy key (null without validation data),
# graph, partitions' arena
# 3: ram (the whole RAM bill and its lower bound, executorch_espnn/report/ram.py); inputs/
# outputs carry layout and access (int8 program I/O)
# 4: profile (the layer table of a profiling build, executorch_espnn.profile_table; null otherwise)
REPORT_SCHEMA = 5


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
    # who holds the int8 side: "delegate" (q/dq inside the payload), "cpu" (a CPU kernel),
    # "program" (an int8 program tensor, io="int8": these are its own scale and zero point)
    quantized_by: str | None = None
    # the program tensor's memory order: ExecuTorch's contiguous default dim order ("NCHW" for
    # rank 4, "contiguous" otherwise)
    layout: str | None = None
    # how the delegate reaches it: "in place" (reads/writes the program's storage, no copy),
    # "transposed copy" (one TRANSPOSE to/from its NHWC arena tensor), "copy", "quantized" /
    # "dequantized" (float I/O converted inside the payload); None when no delegate touches it
    access: str | None = None


@dataclass(frozen=True)
class ArenaTensor:
    """One arena tensor of a payload: where the planner put it and while which ops it is live."""

    tensor: int  # tensor id
    offset: int
    nbytes: int
    first: int  # the op that writes it
    last: int  # the last op that reads it


@dataclass(frozen=True)
class ArenaTimeline:
    """The arena over the op list: each tensor's lifetime and offset, each op's scratch, and the
    live bytes at every op (what ``arena_lower_bound`` is the peak of)."""

    tensors: tuple[ArenaTensor, ...]
    scratch: tuple[tuple[int, int, int], ...]  # (op, offset, bytes) of each op with scratch
    live_bytes: tuple[int, ...]  # per op, scratch included, in-place outputs counted once

    @property
    def peak_op(self) -> int:
        return max(range(len(self.live_bytes)), key=self.live_bytes.__getitem__, default=0)

    def to_dict(self) -> dict[str, Any]:
        return {"tensors": [{"tensor": t.tensor, "offset": t.offset, "bytes": t.nbytes, "first": t.first,
                             "last": t.last} for t in self.tensors],
                "scratch": [{"op": o, "offset": off, "bytes": n} for o, off, n in self.scratch],
                "live_bytes": list(self.live_bytes), "peak_op": self.peak_op}


@dataclass(frozen=True)
class GraphNode:
    """One operator of the lowered graph in graph order, with the values it reads."""

    node: str
    operator: str
    partition: int | None  # None: on the CPU
    reason: str
    location: str | None
    inputs: tuple[str, ...]  # node names, "input:<name>" for program inputs


@dataclass(frozen=True)
class RamFirstLayer:
    """One layer ``optimize="ram"`` moved to ESP-NN's ANSI kernel: which kernel, the scratch its
    fast kernel would have taken, and the instructions that costs when a measurement exists."""

    op: int  # op index inside the payload
    opcode: str
    layer: str  # the fast-path table's name: "depthwise 3x3/1"
    shape: str  # "25x5x64 -> 25x5x64"
    saved_bytes: int  # the speed plan's scratch for this op minus the ram plan's (0)
    kernel: str  # "ESP-NN ANSI C"
    instead_of: str  # "ESP-NN ESP32-S3 SIMD"
    # (fast, ANSI) instructions per invoke, measured (executorch_espnn.kernel_cost); None: not measured
    instructions: tuple[int, int] | None = None
    cost_source: str = ""  # where the figure came from, or why there is none

    def to_dict(self) -> dict[str, Any]:
        fast, ansi = self.instructions if self.instructions is not None else (None, None)
        return {"op": self.op, "opcode": self.opcode, "layer": self.layer, "shape": self.shape,
                "saved_bytes": self.saved_bytes, "kernel": self.kernel, "instead_of": self.instead_of,
                "fast_instructions": fast, "ansi_instructions": ansi, "cost_source": self.cost_source}


@dataclass(frozen=True)
class BandedLayer:
    """One depthwise layer the engine runs in bands of output rows on ESP-NN's fast kernel
    (docs/engine.md, "Depthwise bands"): rows per band and the scratch that saves against the
    whole map at once."""

    op: int
    layer: str  # the fast-path table's name: "depthwise 3x3/1"
    shape: str  # "25x5x64 -> 25x5x64"
    rows: int
    scratch_bytes: int  # the bands' scratch
    saved_bytes: int  # the whole map's scratch minus the bands'

    def to_dict(self) -> dict[str, Any]:
        return {"op": self.op, "layer": self.layer, "shape": self.shape, "rows": self.rows,
                "scratch_bytes": self.scratch_bytes, "saved_bytes": self.saved_bytes}


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
    arena: ArenaTimeline | None = None
    # RAM-first kernels (executorch_espnn.kernel_choice): each op moved to ESP-NN's ANSI kernel
    ansi_ops: tuple[RamFirstLayer, ...] = ()
    # depthwise ops run in bands of output rows (kernel_choice.choose_bands, the speed default)
    banded_ops: tuple[BandedLayer, ...] = ()


@dataclass(frozen=True)
class FastPathLayer:
    """A conv/depthwise/FC/matmul/layer-norm layer and whether ESP-NN's ESP32-S3 optimised
    kernel takes it; or a layer ESP-NN has no kernel for (PReLU, bilinear upsampling,
    transposed conv, layer norm: never fast, they are the engine's own C kernels)."""

    partition: int
    op: int  # op index inside the payload
    layer: str  # "conv 3x3/2", "depthwise 3x3/1", "fc 1280->1000", "transposed conv 4x4/2", "prelu"
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
    arena_bytes: int  # the one arena every delegate uses: the largest partition's (scratch included)
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
    accuracy: AccuracyReport | None = None  # with validation data (executorch_espnn.accuracy)
    graph: list[GraphNode] = field(default_factory=list)  # graph order; empty for a ready .pte
    peaks: list[PartitionPeak] = field(default_factory=list)  # per partition: its live set's peak (ram.py)
    held_io: HeldIO = NO_PROGRAM  # the planned tensors the program must hold at one moment (ram.py)
    profile: dict[str, Any] | None = None  # lower(..., profile=True): ProfileTable.to_dict()

    @property
    def delegate_weights_bytes(self) -> int:
        return sum(p.weights_bytes for p in self.partitions)

    @property
    def fast_path_mac_share(self) -> float | None:
        """Share of conv/depthwise/FC/transposed-conv/matmul (and layer norm) MACs in layers that
        meet the S3 fast-path conditions."""
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
                    "zero_point": t.zero_point, "quantized_by": t.quantized_by, "layout": t.layout,
                    "access": t.access}

        out = {
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
                    "arena": None if p.arena is None else p.arena.to_dict(),
                    "ansi_ops": [a.to_dict() for a in p.ansi_ops],
                    "banded_ops": [b.to_dict() for b in p.banded_ops],
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
            "accuracy": None if self.accuracy is None else self.accuracy.to_dict(),
            "graph": [{"node": g.node, "operator": g.operator, "partition": g.partition, "reason": g.reason,
                       "location": g.location, "inputs": list(g.inputs)} for g in self.graph],
            "profile": self.profile,
        }
        out["ram"] = ram_record(self.peaks, self.held_io, out)
        return out

    def summary(self) -> str:
        """Two lines: where the operators run, and the memory figures."""
        return text.summary(self.to_dict())

    def __str__(self) -> str:
        return text.report_text(self.to_dict())

    def html(self) -> str:
        """report.html: the self-contained page (executorch_espnn.report.html)."""
        from . import html

        return html.report_html(self.to_dict())
