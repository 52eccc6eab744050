"""The whole RAM bill of a lowered program and the lower bound it is judged against.

The bill is what ``EspnnModel::begin()`` allocates (docs/memory.md): the delegate arena,
ExecuTorch's planned buffers, the delegate state (handles + decoded tables), the method
allocator and the temp allocator — the five byte counts of the generated ``model_pte.h`` —
plus the I/O views a sketch may ask for later (``input<int8_t>()`` on a float input and so on),
allocated on first request and listed apart.  The lowering report knows the first three; the
method and temp allocators are measured by loading the program (``executorch_espnn.host.measure``,
what the build does), so a report made without measuring leaves them ``None``.

Each partition's term of the bound is its payload's peak (``executorch_espnn.payload_peak``:
live activations plus the running kernel's scratch, never the arena planner's offsets).  The
delegates of one method all use one arena, each from its start (they never run at the same time and keep nothing
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

from ..payload_peak import PartitionPeak
from ..program_io import view_bytes
from ..pte import DelegateCallInfo, ProgramInfo


def io_view_bytes(dtype: str, numel: int, scale: float | None) -> int:
    """Bytes of the other-dtype view ``EspnnModel`` allocates for one program input or output
    on the first ``input<T>()``/``output<T>()`` whose T is not the tensor's dtype
    (``program_io.view_bytes``, the Python twin of ``view_bytes`` in
    espnn_component/runtime/espnn_model.cpp); none without a quantization to convert with."""
    if scale is None or not scale > 0 or dtype not in ("int8", "float32"):
        return 0
    return view_bytes(numel, dtype, "float32" if dtype == "int8" else "int8")


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
