"""report.txt: the lowering report as text (``str(LoweringReport)``) and its two-line summary.

``records`` imports this module to render itself, so this one does not import ``records``
back (not even for types: the package's import graph has no cycle); ``r`` is a
``LoweringReport``, ``t`` a ``TensorSpec``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def summary(r: Any) -> str:
    n_part = len(r.partitions)
    ops = (f"{len(r.delegated_ops)} operators on ESP-NN in {n_part} partition"
           f"{'' if n_part == 1 else 's'}, {len(r.cpu_ops)} on the CPU")
    state = "n/a" if r.state_bytes is None else _b(r.state_bytes)
    mem = (f"arena {_b(r.arena_bytes)}, planned {_b(r.planned_bytes)}, "
           f"weights {_b(r.weights_bytes)}, state {state}, .pte {_b(r.pte_bytes)}")
    return f"{ops}\n{mem}"


def report_text(r: Any) -> str:
    out = [f"ESP-NN lowering report (target {r.target})", ""]
    out += ["  " + line for line in summary(r).splitlines()]
    share = r.fast_path_mac_share
    if share is not None:
        out.append(f"  ESP32-S3 fast paths: {100 * share:.1f}% of "
                   f"{_macs(sum(f.macs for f in r.fast_path))} MACs")
    for kind, specs in (("input", r.inputs), ("output", r.outputs)):
        for t in specs:
            out.append(f"  {kind} {t.name}: {_spec(t)}")
    if r.partitions:
        out += ["", "Partitions"]
        out += _table(
            ["#", "ops", "tensors", "arena", "peak live", "scratch", "weights", "in -> out"],
            [[str(p.index), str(len(p.ops)), str(p.n_tensors), _b(p.arena_bytes),
              _b(p.arena_lower_bound), _b(p.scratch_bytes), _b(p.weights_bytes),
              f"{len(p.inputs)} -> {len(p.outputs)}"] for p in r.partitions],
        )
    out += ["", f"Operators on the CPU ({len(r.cpu_ops)})"]
    if r.cpu_ops:
        out += _table(["operator", "location", "reason"],
                      [[e.operator, e.location or "-", e.reason] for e in r.cpu_ops])
    else:
        out.append("  none: everything runs on ESP-NN")
    out += ["", "Memory (bytes)"]
    out += _table(
        ["what", "bytes", "notes"],
        [
            ["delegate arena", _b(r.arena_bytes), "activations + kernel scratch"],
            ["ExecuTorch planned", _b(r.planned_bytes),
             "mem ids " + (", ".join(_b(b) for b in r.planned_buffers) or "-")],
            ["weights", _b(r.weights_bytes),
             f"delegate {_b(r.delegate_weights_bytes)} + CPU {_b(r.cpu_weights_bytes)}"],
            ["delegate state", "n/a" if r.state_bytes is None else _b(r.state_bytes),
             "decoded engine tables"],
            [".pte", _b(r.pte_bytes), ""],
        ],
    )
    if r.fast_path:
        note = "" if r.target == "esp32s3" else f" (informational: target is {r.target})"
        out += ["", f"ESP32-S3 fast paths per layer{note}"]
        out += _table(
            ["part", "op", "layer", "shape", "MACs", "fast", "why"],
            [[str(f.partition), str(f.op), f.layer, f.shape, _macs(f.macs),
              "yes" if f.fast else "NO", f.why] for f in r.fast_path],
        )
    if r.timings:
        out += ["", "Lowering time: " + ", ".join(f"{k} {v:.2f} s" for k, v in r.timings.items())]
    if r.warnings:
        out += ["", "Warnings"] + [f"  - {w}" for w in r.warnings]
    return "\n".join(out) + "\n"


def _b(n: int) -> str:
    return f"{n:,}"


def _macs(n: int) -> str:
    for unit, div in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= div:
            return f"{n / div:.2f} {unit}"
    return str(n)


def _spec(t: Any) -> str:
    s = f"{t.dtype}{list(t.shape)}"
    if t.scale is not None:
        s += f" (int8 side: scale {t.scale:.6g}, zero point {t.zero_point}, by the {t.quantized_by})"
    return s


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        return "  " + "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    return [line(headers), line(["-" * w for w in widths])] + [line(r) for r in rows]
