"""Summaries of backend-suite runs: per flow, per operator file, and the comparison of flows.

    python -m executorch_espnn.testing.report build/backend-suite/*.jsonl \\
        --markdown results.md --json summary.json --check espnn

reads the JSON-lines files ``suite_plugin`` writes (one per pytest run), prints a summary,
writes the markdown table (from ``templates/backend_suite_results.md.j2``) and a JSON
summary, and with ``--check FLOW`` exits 1 when that flow has a test that failed, crashed,
passed without being compared, or passed although listed as a known failure.

This module reads JSON only; it does not import ExecuTorch's test harness.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

PASS = ("delegated", "partial", "fallback")
BAD = ("failed", "xpassed", "unverified", "crashed")
ORDER = (*PASS, "known-failure", "skipped", *BAD)
TEMPLATE = "backend_suite_results.md.j2"

#: The operator files of ExecuTorch's suite that exercise an operator family
#: EspNNDelegateBackend delegates (the rest test operators we leave to the CPU).
DELEGATED_FAMILY_FILES: dict[str, str] = {
    "test_conv1d.py": "conv",
    "test_conv2d.py": "conv",
    "test_linear.py": "fully connected",
    "test_add.py": "add",
    "test_mul.py": "mul",
    "test_maxpool2d.py": "pooling",
    "test_avgpool2d.py": "pooling",
    "test_adaptive_avgpool2d.py": "pooling",
    "test_mean.py": "pooling",
    "test_cat.py": "movement",
    "test_permute.py": "movement",
    "test_transpose.py": "movement",
    "test_slice.py": "movement",
    "test_select.py": "movement",
    "test_split.py": "movement",
    "test_view.py": "movement",
    "test_reshape.py": "movement",
    "test_squeeze.py": "movement",
    "test_unsqueeze.py": "movement",
    "test_stack.py": "movement",
    "test_upsample_nearest2d.py": "movement",
    "test_relu.py": "clamp",
    "test_hardtanh.py": "clamp",
    "test_clamp.py": "clamp",
    "test_hardswish.py": "lookup table",
    "test_hardsigmoid.py": "lookup table",
    "test_sigmoid.py": "lookup table",
    "test_tanh.py": "lookup table",
    "test_silu.py": "lookup table",
    "test_gelu.py": "lookup table",
    "test_leaky_relu.py": "lookup table",
}


class ResultsError(Exception):
    """A results file cannot be read."""


@dataclass
class Test:
    nodeid: str
    file: str
    name: str
    flow: str
    category: str
    message: str
    duration_s: float
    subtests: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Run:
    path: Path
    target: str | None
    seed: int | None
    finished: bool
    tests: list[Test]


def load(path: Path) -> Run:
    """One JSON-lines file; a test that started and never ended is "crashed"."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ResultsError(f"cannot read {path}: {exc}") from exc
    tests: list[Test] = []
    header: dict[str, Any] = {}
    started: str | None = None
    finished = False
    flow = ""
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ResultsError(f"{path}:{i}: not JSON ({exc}); was it written by suite_plugin?") from exc
        kind = doc.get("kind")
        if kind == "session":
            header = doc
        elif kind == "start":
            started = str(doc["nodeid"])
        elif kind == "test":
            started = None
            flow = str(doc["flow"])
            tests.append(Test(
                nodeid=doc["nodeid"], file=doc["file"], name=doc["name"], flow=flow,
                category=doc["category"], message=doc.get("message", ""),
                duration_s=float(doc.get("duration_s", 0.0)), subtests=list(doc.get("subtests", [])),
            ))
        elif kind == "end":
            finished = True
    if started is not None:
        file, _, name = started.partition("::")
        tests.append(Test(started, file, name, flow, "crashed",
                          "the test process died while running this test (see the pytest log)", 0.0))
    return Run(path, header.get("target"), header.get("seed"), finished, tests)


@dataclass(frozen=True)
class Counts:
    total: int
    by_category: dict[str, int]

    @property
    def passed(self) -> int:
        return sum(self.by_category.get(c, 0) for c in PASS)

    @property
    def bad(self) -> int:
        return sum(self.by_category.get(c, 0) for c in BAD)

    @property
    def ran(self) -> int:
        """Tests that count for the pass rate: all but the suite's skips."""
        return self.total - self.by_category.get("skipped", 0)

    @property
    def pass_rate(self) -> float | None:
        return self.passed / self.ran if self.ran else None

    @property
    def delegating(self) -> int:
        """Passing tests in which the backend ran at least one operator."""
        return self.by_category.get("delegated", 0) + self.by_category.get("partial", 0)


def count(tests: Iterable[Test]) -> Counts:
    c = Counter(t.category for t in tests)
    return Counts(sum(c.values()), {k: c[k] for k in ORDER if c[k]})


@dataclass(frozen=True)
class FileRow:
    file: str
    family: str
    flows: dict[str, Counts]


@dataclass(frozen=True)
class Finding:
    nodeid: str
    flow: str
    category: str
    message: str


@dataclass(frozen=True)
class Fallback:
    file: str
    op: str
    reason: str
    tests: int


@dataclass(frozen=True)
class Summary:
    flows: list[str]
    totals: dict[str, Counts]
    family_totals: dict[str, Counts]  # restricted to DELEGATED_FAMILY_FILES
    files: list[FileRow]
    findings: list[Finding]  # failed / crashed / unverified / xpassed / known failures
    fallbacks: list[Fallback]  # our flow's CPU operators and their reasons
    runs: list[dict[str, Any]]

    def as_json(self) -> dict[str, Any]:
        def counts(c: Counts) -> dict[str, Any]:
            return {"total": c.total, "passed": c.passed, "ran": c.ran, "pass_rate": c.pass_rate,
                    "delegating": c.delegating, **c.by_category}

        return {
            "flows": self.flows,
            "totals": {f: counts(c) for f, c in self.totals.items()},
            "delegated_family_totals": {f: counts(c) for f, c in self.family_totals.items()},
            "files": [{"file": r.file, "family": r.family, **{f: counts(c) for f, c in r.flows.items()}}
                      for r in self.files],
            "findings": [asdict(x) for x in self.findings],
            "fallbacks": [asdict(x) for x in self.fallbacks],
            "runs": self.runs,
        }


def summarize(runs: Sequence[Run], our_flow: str = "espnn") -> Summary:
    tests = [t for r in runs for t in r.tests]
    flows = sorted({t.flow for t in tests if t.flow}, key=lambda f: (f != our_flow, f))
    totals = {f: count(t for t in tests if t.flow == f) for f in flows}
    family = {f: count(t for t in tests if t.flow == f and t.file in DELEGATED_FAMILY_FILES) for f in flows}
    files = sorted({t.file for t in tests})
    rows = [
        FileRow(name, DELEGATED_FAMILY_FILES.get(name, ""),
                {f: count(t for t in tests if t.flow == f and t.file == name) for f in flows})
        for name in files
    ]
    findings = [Finding(t.nodeid, t.flow, t.category, t.message)
                for t in tests if t.category in (*BAD, "known-failure")]
    fallback_tests: dict[tuple[str, str, str], set[str]] = {}
    for t in tests:
        if t.flow != our_flow or t.category not in PASS:
            continue
        for sub in t.subtests:
            for op in sub.get("cpu_ops", []):
                key = (t.file, str(op["op"]), str(op["reason"]))
                fallback_tests.setdefault(key, set()).add(t.nodeid)
    fallbacks = [Fallback(f, op, reason, len(ids)) for (f, op, reason), ids in sorted(fallback_tests.items())]
    meta = [{"path": str(r.path), "flows": sorted({t.flow for t in r.tests if t.flow}),
             "target": r.target, "seed": r.seed, "finished": r.finished,
             "tests": len(r.tests), "seconds": round(sum(t.duration_s for t in r.tests), 1)} for r in runs]
    return Summary(flows, totals, family, rows, findings, fallbacks, meta)


def render_markdown(summary: Summary) -> str:
    from .. import rendering

    path = rendering.templates_dir() / TEMPLATE
    if not path.is_file():
        raise ResultsError(f"the template {path} is missing; run from a complete checkout")
    return rendering.render(TEMPLATE, s=summary, PASS=PASS, ORDER=ORDER, pct=_pct)


def _pct(counts: Counts | None) -> str:
    if counts is None or counts.pass_rate is None:
        return "n/a"
    return f"{100.0 * counts.pass_rate:.1f}%"


def print_summary(summary: Summary, out: Any = sys.stdout) -> None:
    for flow in summary.flows:
        c = summary.totals[flow]
        fam = summary.family_totals[flow]
        parts = ", ".join(f"{n} {k}" for k, n in c.by_category.items())
        out.write(f"{flow}: {c.total} tests ({parts}); pass rate {_pct(c)} of {c.ran} run; "
                  f"on the delegated families {fam.passed}/{fam.ran} = {_pct(fam)}, "
                  f"{fam.delegating} of them delegating\n")
    for f in summary.findings:
        out.write(f"  {f.category}: [{f.flow}] {f.nodeid}: {f.message[:200]}\n")


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m executorch_espnn.testing.report", description=__doc__.splitlines()[0])
    p.add_argument("results", nargs="+", type=Path, help="JSON-lines files written with --espnn-suite-json")
    p.add_argument("--markdown", type=Path, help="write the results table here")
    p.add_argument("--json", type=Path, help="write the summary here")
    p.add_argument("--check", metavar="FLOW", help="exit 1 if FLOW has a failed/crashed/unverified/xpassed test")
    args = p.parse_args(argv)
    try:
        runs = [load(path) for path in args.results]
        summary = summarize(runs)
        if args.markdown:
            args.markdown.write_text(render_markdown(summary), encoding="utf-8")
    except ResultsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        args.json.write_text(json.dumps(summary.as_json(), indent=1) + "\n", encoding="utf-8")
    print_summary(summary)
    if args.check:
        if args.check not in summary.totals:
            print(f"error: no results for flow {args.check!r} (have {summary.flows})", file=sys.stderr)
            return 1
        unfinished = [str(r["path"]) for r in summary.runs
                      if not r["finished"] and (args.check in r["flows"] or not r["flows"])]
        bad = summary.totals[args.check].bad
        if bad or unfinished:
            print(f"{args.check}: {bad} test(s) failed, crashed, were not compared or passed unexpectedly"
                  + (f"; unfinished runs: {unfinished}" if unfinished else ""), file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
