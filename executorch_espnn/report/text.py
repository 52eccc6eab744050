"""report.txt: the lowering report as text (``str(LoweringReport)``) and its two-line summary,
rendered from templates/report/ out of the report's JSON form (``LoweringReport.to_dict()``,
what report.json holds), so the two files carry the same facts; this module formats the cells.

It reads the JSON form rather than the records because ``records`` imports this module to
render itself: nothing here imports ``records`` back (the package's import graph has no cycle).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import rendering

Report = dict[str, Any]  # LoweringReport.to_dict()
Table = tuple[list[str], list[list[str]]]  # headers, rows


def summary(r: Report) -> str:
    return rendering.render("report/summary.txt.j2", r=r, b=_b).removesuffix("\n")


def report_text(r: Report) -> str:
    tables: dict[str, Table] = {
        "partitions": (
            ["#", "ops", "tensors", "arena", "peak live", "scratch", "weights", "in -> out"],
            [[str(p["index"]), str(len(p["ops"])), str(p["n_tensors"]), _b(p["arena_bytes"]),
              _b(p["arena_lower_bound"]), _b(p["scratch_bytes"]), _b(p["weights_bytes"]),
              f"{len(p['inputs'])} -> {len(p['outputs'])}"] for p in r["partitions"]],
        ),
        "cpu_ops": (
            ["operator", "location", "reason"],
            [[e["operator"], e["location"] or "-", e["reason"]] for e in r["cpu_ops"]],
        ),
        "memory": (
            ["what", "bytes", "notes"],
            [
                ["delegate arena", _b(r["arena_bytes"]), "activations + kernel scratch"],
                ["ExecuTorch planned", _b(r["planned_bytes"]),
                 "mem ids " + (", ".join(_b(b) for b in r["planned_buffers"]) or "-")],
                ["weights", _b(r["weights_bytes"]),
                 f"delegate {_b(r['delegate_weights_bytes'])} + CPU {_b(r['cpu_weights_bytes'])}"],
                ["delegate state", "n/a" if r["state_bytes"] is None else _b(r["state_bytes"]),
                 "decoded engine tables"],
                [".pte", _b(r["pte_bytes"]), ""],
            ],
        ),
        "fast_path": (
            ["part", "op", "layer", "shape", "MACs", "fast", "why"],
            [[str(f["partition"]), str(f["op"]), f["layer"], f["shape"], _macs(f["macs"]),
              "yes" if f["fast"] else "NO", f["why"]] for f in r["fast_path"]["layers"]],
        ),
    }
    return rendering.render("report/report.txt.j2", r=r, summary=summary(r), tables=tables,
                            macs=_macs, spec=_spec)


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """One text table as report.txt lays them out (templates/text/table.j2), without the
    final newline."""
    template = rendering.environment().from_string(
        '{% import "text/table.j2" as t %}{{ t.table(headers, rows) }}'
    )
    return template.render(headers=list(headers), rows=[list(r) for r in rows]).removesuffix("\n")


def _b(n: int) -> str:
    return f"{n:,}"


def _macs(n: int) -> str:
    for unit, div in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= div:
            return f"{n / div:.2f} {unit}"
    return str(n)


def _spec(t: dict[str, Any]) -> str:
    s = f"{t['dtype']}{list(t['shape'])}"
    if t["scale"] is not None:
        s += f" (int8 side: scale {t['scale']:.6g}, zero point {t['zero_point']}, by the {t['quantized_by']})"
    return s
