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
    return rendering.render("report/summary.txt.j2", r=r, b=number).removesuffix("\n")


def report_text(r: Report) -> str:
    tables: dict[str, Table] = {
        "partitions": (
            ["#", "ops", "tensors", "arena", "peak live", "scratch", "weights", "in -> out"],
            [[str(p["index"]), str(len(p["ops"])), str(p["n_tensors"]), number(p["arena_bytes"]),
              number(p["arena_lower_bound"]), number(p["scratch_bytes"]), number(p["weights_bytes"]),
              f"{len(p['inputs'])} -> {len(p['outputs'])}"] for p in r["partitions"]],
        ),
        "cpu_ops": (
            ["operator", "location", "reason"],
            [[e["operator"], e["location"] or "-", e["reason"]] for e in r["cpu_ops"]],
        ),
        "memory": (
            ["what", "bytes", "notes"],
            [
                ["delegate arena", number(r["arena_bytes"]), "activations + kernel scratch"],
                ["ExecuTorch planned", number(r["planned_bytes"]),
                 "mem ids " + (", ".join(number(b) for b in r["planned_buffers"]) or "-")],
                ["weights", number(r["weights_bytes"]),
                 f"delegate {number(r['delegate_weights_bytes'])} + CPU {number(r['cpu_weights_bytes'])}"],
                ["delegate state", "n/a" if r["state_bytes"] is None else number(r["state_bytes"]),
                 "decoded engine tables"],
                [".pte", number(r["pte_bytes"]), ""],
            ],
        ),
        "ram": ram_table(r["ram"]),
        "fast_path": (
            ["part", "op", "layer", "shape", "MACs", "fast", "why"],
            [[str(f["partition"]), str(f["op"]), f["layer"], f["shape"], macs(f["macs"]),
              "yes" if f["fast"] else "NO", f["why"]] for f in r["fast_path"]["layers"]],
        ),
        "float_averages": (
            ["part", "op", "layer", "shape", "float adds", "why"],
            [[str(a["partition"]), str(a["op"]), a["layer"], a["shape"], number(a["adds"]), a["why"]]
             for a in r["float_averages"]],
        ),
    }
    acc = r.get("accuracy")
    if acc is not None:
        tables["accuracy_layers"] = accuracy_layer_table(acc)
    return rendering.render("report/report.txt.j2", r=r, summary=summary(r), tables=tables,
                            macs=macs, spec=_spec, ram_ratios=ram_ratios, acc=acc, titles=MODEL_TITLES, lsb=lsb_line,
                            accuracy_outputs=[accuracy_output_table(o) for o in acc["outputs"]] if acc else [])


def _bytes_or(n: int | None, missing: str) -> str:
    return missing if n is None else number(n)


def ram_table(ram: dict[str, Any]) -> Table:
    """The whole RAM bill (report.json's ``ram``) beside its lower bound."""
    unmeasured = "measured by the build"
    b = ram["bound"]
    rows = [
        ["delegate arena", number(ram["arena_bytes"]), "activations + kernel scratch, as planned"],
        ["ExecuTorch planned", number(ram["planned_bytes"]), "program inputs/outputs, CPU operators' tensors"],
        ["delegate state", _bytes_or(ram["state_bytes"], "n/a"),
         "handles + decoded tables" if ram["measured"] else "decoded tables"],
        ["method allocator", _bytes_or(ram["method_allocator_bytes"], unmeasured), "ExecuTorch's Method"],
        ["temp allocator", _bytes_or(ram["temp_allocator_bytes"], unmeasured), "peak of one execute()"],
        ["whole RAM", _bytes_or(ram["total_bytes"], unmeasured), "what EspnnModel::begin() allocates"],
        ["I/O views", number(ram["io_view_bytes"]), "only if the sketch asks for the other dtype"],
        ["lower bound", number(b["bytes"]),
         f"activations {number(b['activation_bytes'])} + scratch {number(b['scratch_bytes'])} "
         f"+ planned I/O {number(b['io_bytes'])} ({b['io_held']})"],
    ]
    return ["what", "bytes", "notes"], rows


def ram_ratios(ram: dict[str, Any]) -> str:
    """``whole RAM / bound 1.23x, arena / (activations + scratch) 1.00x``."""
    def x(v: float | None) -> str:
        return "n/a" if v is None else f"{v:.2f}x"
    return f"whole RAM / bound {x(ram['ratio'])}, arena / (activations + scratch) {x(ram['arena_ratio'])}"


MODEL_TITLES = {"float": "float", "pt2e": "PT2E", "delegate": "ESP-NN"}


def db(value: float | str | None) -> str:
    """A dB figure of the JSON form: "exact" for no error (JSON's "inf")."""
    if value is None:
        return "-"
    if value == "inf":
        return "exact"
    if value == "-inf":
        return "-inf dB"
    return f"{float(value):.1f} dB"


def percent(share: float) -> str:
    if 0 < share < 0.00005:
        return "<0.01%"  # a few elements of many: not "0.00%", which reads as none
    return f"{100 * share:.2f}%"


def accuracy_summary(acc: dict[str, Any]) -> str:
    """One line per output for the build's console: top-1 and the chip's SQNR against float."""
    lines = []
    for o in acc["outputs"]:
        parts = []
        if o["top1_accuracy"]:
            parts.append("top-1 " + ", ".join(f"{MODEL_TITLES[m]} {percent(a)}" for m, a in o["top1_accuracy"].items()))
        for c in o["comparisons"]:
            if c["test"] == "delegate":
                parts.append(f"ESP-NN vs {MODEL_TITLES[c['reference']]}: agreement {percent(c['top1_agreement'])}, "
                             f"SQNR {db(c['sqnr_db'])}")
        lines.append(f"accuracy of {o['name']} on {acc['n_samples']} validation samples: " + "; ".join(parts))
    return "\n".join(lines)


def accuracy_output_table(o: dict[str, Any]) -> Table:
    """One output's comparisons: model vs model, top-1 agreement and SQNR."""
    return (
        ["comparison", "top-1 agreement", "SQNR"],
        [[f"{MODEL_TITLES[c['test']]} vs {MODEL_TITLES[c['reference']]}", percent(c["top1_agreement"]),
          db(c["sqnr_db"])] for c in o["comparisons"]],
    )


def lsb_line(hist: dict[str, int] | None) -> str:
    """``0: 998 (99.80%), +1: 1, -1: 1``: elements per signed LSB difference, 0 first."""
    if hist is None:
        return "n/a (the output has no int8 grid)"
    total = sum(hist.values()) or 1
    keys = sorted(hist, key=lambda k: (abs(int(k)), int(k)))
    parts = []
    for k in keys:
        n = hist[k]
        label = "0" if int(k) == 0 else f"{int(k):+d}"
        parts.append(f"{label}: {n:,}" + (f" ({percent(n / total)})" if int(k) == 0 else ""))
    return ", ".join(parts)


def accuracy_layer_table(acc: dict[str, Any]) -> Table:
    return (
        ["part", "op", "layer", "value", "shape", "ESP-NN SQNR", "PT2E SQNR", "max LSB vs PT2E", "off",
         "location"],
        [[str(la["partition"]), str(la["op"]), la["opcode"].lower(), la["node"],
          "x".join(map(str, la["shape"])), db(la["sqnr_db"]), db(la["pt2e_sqnr_db"]), str(la["max_lsb"]),
          percent(la["off_share"]), la["location"] or "-"] for la in acc["layers"]],
    )


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """One text table as report.txt lays them out (templates/text/table.j2), without the
    final newline."""
    template = rendering.environment().from_string(
        '{% import "text/table.j2" as t %}{{ t.table(headers, rows) }}'
    )
    return template.render(headers=list(headers), rows=[list(r) for r in rows]).removesuffix("\n")


def number(n: int) -> str:
    return f"{n:,}"


def macs(n: int) -> str:
    for unit, div in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= div:
            return f"{n / div:.2f} {unit}"
    return str(n)


def _spec(t: dict[str, Any]) -> str:
    s = f"{t['dtype']}{list(t['shape'])}"
    if t["scale"] is not None and t["quantized_by"] == "program":
        s += f" (int8 program I/O: scale {t['scale']:.6g}, zero point {t['zero_point']})"
    elif t["scale"] is not None:
        s += f" (int8 side: scale {t['scale']:.6g}, zero point {t['zero_point']}, by the {t['quantized_by']})"
    if t.get("access"):
        s += f", {t.get('layout')}, delegate: {t['access']}"
    return s
