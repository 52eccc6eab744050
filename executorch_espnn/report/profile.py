"""A profile log (what ``EspnnModel::profile()`` printed, saved from the serial monitor) read
back, checked against the build's report, and merged into report.html and a text table:
``executorch-espnn profile LOG --report <build dir | report.html>``.

The lines (docs/runtime.md, "Profiling") may carry whatever the console adds in front of them
(an ESP_LOG prefix, a timestamp): everything before ``espnn-profile`` is ignored.  The log must
hold one whole profile: a ``begin`` line, one ``layer`` line per delegated op, one ``delegate``
line per delegate call, one ``cpu`` line per stretch of CPU operators, and the ``total`` line;
the last whole profile of the log is the one read (a firmware may print one per invoke).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import EspNNError

MARKER = "espnn-profile "
_KV = re.compile(r'(\w+)=("[^"]*"|\S+)')
_LAYER = re.compile(r'^layer (\d+) ticks=(\d+) share=(\d+\.\d\d)% part=(\d+) op=(\d+) family=(\w+) '
                    r'name="([^"]*)" at="([^"]*)"$')
_DELEGATE = re.compile(r"^delegate (\d+) ticks=(\d+) share=(\d+\.\d\d)% ops=(\d+)$")
_CPU = re.compile(r'^cpu (\d+) ticks=(\d+) share=(\d+\.\d\d)% ops="([^"]*)"$')
_BEGIN = re.compile(r"^begin layers=(\d+) partitions=(\d+) unit=(\w+)$")
_TOTAL = re.compile(r"^total ticks=(\d+) layers=(\d+) delegates=(\d+) cpu=(\d+) unit=(\w+) end$")
_ERROR = re.compile(r"^error: (.*)$")


class ProfileLogError(EspNNError):
    """A profile log that cannot be read or does not belong to the report."""


@dataclass(frozen=True)
class LayerTime:
    index: int
    partition: int
    op: int
    family: str
    name: str
    location: str
    ticks: int
    share: float  # percent of the whole method execution


@dataclass(frozen=True)
class StretchTime:
    index: int  # delegate call (delegate lines) or stretch (cpu lines)
    ticks: int
    share: float
    detail: str  # the delegate's op count, or the CPU operators of the stretch


@dataclass(frozen=True)
class Profile:
    unit: str
    total: int
    layers: tuple[LayerTime, ...]
    delegates: tuple[StretchTime, ...]  # each delegate call's time outside its ops
    cpu: tuple[StretchTime, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "unit": self.unit, "total": self.total,
            "layers": [{"index": x.index, "partition": x.partition, "op": x.op, "family": x.family,
                        "name": x.name, "location": x.location, "ticks": x.ticks, "share": x.share}
                       for x in self.layers],
            "delegates": [{"index": x.index, "ticks": x.ticks, "share": x.share, "ops": int(x.detail)}
                          for x in self.delegates],
            "cpu": [{"index": x.index, "ticks": x.ticks, "share": x.share, "ops": x.detail} for x in self.cpu],
        }


def _payload(line: str) -> str | None:
    at = line.find(MARKER)
    return None if at < 0 else line[at + len(MARKER):].rstrip("\r\n").rstrip()


def parse_log(text: str, where: str = "the log") -> Profile:
    """The last whole profile of ``text``; ProfileLogError naming the line when a profile line
    is cut short or malformed, or when the log holds none."""
    blocks: list[list[tuple[int, str]]] = []
    current: list[tuple[int, str]] | None = None
    errors: list[str] = []
    for no, line in enumerate(text.splitlines(), 1):
        body = _payload(line)
        if body is None:
            continue
        m = _ERROR.match(body)
        if m:
            errors.append(m.group(1))
            continue
        if body.startswith("begin"):
            current = [(no, body)]
            continue
        if current is None:
            raise ProfileLogError(f"{where} line {no}: an espnn-profile line before any `espnn-profile begin` line: "
                                  "save the whole output of EspnnModel::profile(), from its begin line")
        current.append((no, body))
        if body.startswith("total"):
            blocks.append(current)
            current = None
    if current is not None:
        last_no, last = current[-1]
        raise ProfileLogError(
            f"{where} line {last_no}: the profile is cut short after `espnn-profile {last[:60]}` (no "
            "`espnn-profile total ... end` line): save the log again after the whole profile was printed")
    if not blocks:
        extra = f"; the firmware said: {errors[-1]}" if errors else ""
        raise ProfileLogError(
            f"{where} holds no espnn-profile lines{extra}; build the firmware with custom_executorch_profile = yes, "
            "call model.profile() after model.invoke() and save the serial monitor's output "
            "(e.g. pio device monitor | tee profile.log)")
    return _read_block(blocks[-1], where)


def _read_block(block: list[tuple[int, str]], where: str) -> Profile:
    def bad(no: int, body: str, what: str) -> ProfileLogError:
        return ProfileLogError(f"{where} line {no}: `espnn-profile {body[:80]}` is {what}: a line cut short or "
                               "mixed with other output; save the log again (docs/runtime.md has the line format)")

    no, body = block[0]
    m = _BEGIN.match(body)
    if not m:
        raise bad(no, body, "not a whole begin line")
    n_layers, n_parts, unit = int(m.group(1)), int(m.group(2)), m.group(3)
    layers: list[LayerTime] = []
    delegates: list[StretchTime] = []
    cpu: list[StretchTime] = []
    total = None
    for no, body in block[1:]:
        kind = body.split(" ", 1)[0]
        pattern = {"layer": _LAYER, "delegate": _DELEGATE, "cpu": _CPU, "total": _TOTAL}.get(kind)
        m = pattern.match(body) if pattern is not None else None
        if m is None:
            raise bad(no, body, f"not a whole {kind} line" if pattern is not None else "of no known kind")
        g = m.groups()
        if kind == "layer":
            layers.append(LayerTime(int(g[0]), int(g[3]), int(g[4]), g[5], g[6], g[7], int(g[1]), float(g[2])))
        elif kind == "delegate":
            delegates.append(StretchTime(int(g[0]), int(g[1]), float(g[2]), g[3]))
        elif kind == "cpu":
            cpu.append(StretchTime(int(g[0]), int(g[1]), float(g[2]), g[3]))
        else:
            total = int(g[0])
            if g[4] != unit:
                raise bad(no, body, f"in unit {g[4]} where its begin line says {unit}")
    assert total is not None  # a block ends with its total line
    if len(layers) != n_layers or len(cpu) != n_parts + 1 or len(delegates) != n_parts:
        raise ProfileLogError(
            f"{where}: the profile's begin line announces {n_layers} layers and {n_parts} delegates, the log "
            f"holds {len(layers)} layer, {len(delegates)} delegate and {len(cpu)} cpu lines: lines are missing; "
            "save the log again")
    return Profile(unit, total, tuple(layers), tuple(delegates), tuple(cpu))


def report_json_path(report: Path) -> Path:
    """report.json of ``--report``: a report.html/report.json path, an output folder of
    ``executorch-espnn build``, or a PlatformIO build folder (.pio/build/<env>)."""
    candidates = ([report.with_name("report.json")] if report.suffix in (".html", ".json")
                  else [report / "report.json", report / "executorch" / "report.json"])
    for c in candidates:
        if c.is_file():
            return c
    raise ProfileLogError(
        f"--report {report}: no report.json there (looked for {', '.join(str(c) for c in candidates)}); give the "
        "folder `executorch-espnn build --out` wrote, the PlatformIO build folder (.pio/build/<env>) or its report.html")


def check_against(profile: Profile, report: dict[str, Any], where: str = "the log") -> None:
    """The profile must be of the report's build: same layers (partition, op, family, name) in
    the same order."""
    table = report.get("profile")
    if not table:
        raise ProfileLogError(
            "the report has no layer table (report.json's profile is null): it comes from a build without "
            "custom_executorch_profile = yes (--profile); give the report of the profiling build")
    rows = table["layers"]
    if len(rows) != len(profile.layers):
        raise ProfileLogError(
            f"{where} profiles {len(profile.layers)} layers, the report lists {len(rows)}: the log and the report "
            "come from different builds; give the report of the firmware that printed the log")
    for got, want in zip(profile.layers, rows, strict=True):
        if (got.partition, got.op, got.family, got.name) != (want["partition"], want["op"], want["family"],
                                                              want["name"]):
            raise ProfileLogError(
                f"{where}: layer {got.index} is {got.family} {got.name!r} (partition {got.partition} op {got.op}), "
                f"the report's is {want['family']} {want['name']!r} (partition {want['partition']} op {want['op']}): "
                "the log and the report come from different builds")


def text_table(profile: Profile) -> str:
    """The profile as a table, slowest layer first, then the delegate and CPU stretches."""
    from .text import table

    rows = [[str(x.index), str(x.partition), str(x.op), x.family, x.name, f"{x.ticks:,}", f"{x.share:.2f}%",
             x.location] for x in sorted(profile.layers, key=lambda x: -x.ticks)]
    rows += [["", str(d.index), "", "(delegate call)", f"{d.detail} ops", f"{d.ticks:,}", f"{d.share:.2f}%", ""]
             for d in profile.delegates]
    rows += [["", "", "", "(CPU operators)", c.detail or "-", f"{c.ticks:,}", f"{c.share:.2f}%",
              f"before delegate {c.index}" if c.index < len(profile.delegates) else "after the last delegate"]
             for c in profile.cpu]
    head = ["layer", "part", "op", "family", "name", profile.unit, "share", "location"]
    return f"Profile: {profile.total:,} {profile.unit} per inference\n{table(head, rows)}"
