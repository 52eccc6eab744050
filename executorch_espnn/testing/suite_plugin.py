"""pytest plugin: run ExecuTorch's backend test suite (from the installed wheel, unmodified)
against ``EspNNDelegateBackend``.

    python -m pytest -p executorch_espnn.testing.suite_plugin --rootdir "$PWD" \\
        -m flow_espnn --espnn-suite-json results.jsonl \\
        "$(python -c 'import executorch.backends.test.suite as s, os; print(os.path.dirname(s.__file__))')/operators/test_conv2d.py"

How it hooks in (the suite's documented extension point is its list of flows):
``executorch.backends.test.suite.flow.all_flows`` returns a fixed dict, and the suite's
``conftest.py`` reads it when it is imported, to parametrize every test over the flows and
to register a ``flow_<name>`` marker per flow.  This plugin is loaded with ``-p``, before any
conftest, and wraps that function so the result also contains the ``espnn`` flow.
``--rootdir`` must lie outside the suite's folder or pytest ignores its conftest.

Each test's outcome and, for the espnn flow, the partitioner's decisions and the output
verdicts of every model it lowered are collected; ``--espnn-suite-json PATH`` writes them.
"""

from __future__ import annotations

import json
import random
import time
from collections import Counter
from collections.abc import Callable, Generator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pytest

from .flow import FLOW_NAME, KNOWN_FAILURES, make_flow
from .tester import DEFAULT_TARGET, EspNNTester, SubtestRecord

JSON_OPTION = "--espnn-suite-json"
TARGET_OPTION = "--espnn-target"
SEED_OPTION = "--espnn-seed"
RESULTS_VERSION = 1

#: test categories, best first
PASS_CATEGORIES = ("delegated", "partial", "fallback")
CATEGORIES = (*PASS_CATEGORIES, "known-failure", "skipped", "failed", "xpassed", "unverified")


@dataclass
class TestRecord:
    """One pytest item of the suite: its outcome and what the flow saw."""

    __test__ = False

    nodeid: str
    file: str
    name: str
    flow: str
    outcome: str  # passed / failed / skipped / xfailed / xpassed
    category: str
    message: str
    duration_s: float
    subtests: list[dict[str, Any]] = field(default_factory=list)


def _subtest_json(rec: SubtestRecord) -> dict[str, Any]:
    return {
        "delegation": rec.delegation,
        "target": rec.target,
        "delegated_ops": sorted(set(rec.delegated_ops)),
        "cpu_ops": [{"node": d.node, "op": d.op, "reason": d.reason} for d in rec.cpu_ops],
        "cpu_qdq": [{"node": d.node, "op": d.op, "reason": d.reason} for d in rec.cpu_qdq],
        "compared": rec.compared,
        "missing_kernels": rec.missing_kernels,
        "outputs": [asdict(c) for c in rec.checks],
    }


def _suite_summaries(item: pytest.Item) -> list[dict[str, Any]]:
    """The suite's own per-model summaries (result, delegated op counts) of any flow."""
    runner = (getattr(item, "funcargs", None) or {}).get("test_runner")
    out: list[dict[str, Any]] = []
    for summary in getattr(runner, "_results", []) or []:
        result = getattr(summary, "result", None)
        out.append({
            "result": getattr(result, "name", str(result)),
            "delegated": bool(summary.is_delegated()) if hasattr(summary, "is_delegated") else None,
            "error": _error_text(getattr(summary, "error", None)),
        })
    return out


def _error_text(error: object) -> str:
    if error is None:
        return ""
    text = f"{type(error).__name__}: {error}".strip()
    return text[:1500]


def _category(outcome: str, testers: list[EspNNTester], is_espnn: bool, summaries: list[dict[str, Any]]) -> str:
    if outcome == "xfailed":
        return "known-failure"
    if outcome in ("failed", "skipped", "xpassed"):
        return outcome
    if not is_espnn:  # another flow: the suite's own verdict, delegated or not
        if summaries and not any(s["delegated"] for s in summaries):
            return "fallback"
        return "delegated"
    records = [t.record for t in testers]
    if not records or not all(r.matched for r in records):
        return "unverified"  # passed without our comparison having run: never counts as a pass
    if any(not d.reason for r in records for d in r.cpu_ops):
        return "unverified"
    kinds = {r.delegation for r in records}
    if kinds == {"delegated"}:
        return "delegated"
    if kinds == {"fallback"}:
        return "fallback"
    return "partial"


class SuiteRecorder:
    """Collects one TestRecord per test; registered as a plugin object for the session."""

    def __init__(self, target: str = DEFAULT_TARGET) -> None:
        self.target = target
        self.seed = 0
        self.records: list[TestRecord] = []
        self._testers: list[EspNNTester] = []
        self._started = 0.0
        self._outcomes: dict[str, tuple[str, str]] = {}
        self._summaries: list[dict[str, Any]] = []
        self.json_path: Path | None = None

    def make_tester(self, module: Any, inputs: Any, **kwargs: Any) -> EspNNTester:
        tester = EspNNTester(module, inputs, target=self.target, **kwargs)
        self._testers.append(tester)
        return tester

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, None, None]:
        self._testers = []
        self._started = time.perf_counter()
        self._outcomes.pop(item.nodeid, None)
        self._summaries = []
        self._write({"kind": "start", "nodeid": _test_id(item)})
        # The suite seeds each test from its name plus a run seed, which its pytest route
        # draws from `random` (there is no test session): fix that draw to --espnn-seed, so
        # runs repeat and every flow sees the same inputs for the same test.
        random.seed(self.seed)
        yield
        outcome, message = self._outcomes.get(item.nodeid, ("skipped", "not run"))
        callspec = getattr(item, "callspec", None)
        flow = str(callspec.params.get("test_runner", "")) if callspec is not None else ""
        summaries = self._summaries
        if outcome in ("failed", "xfailed"):  # the suite's own verdict says more than the traceback
            bad = [x for x in summaries if x["result"] not in ("SUCCESS", "SUCCESS_UNDELEGATED")]
            if bad:
                message = f"{bad[-1]['result']}: {_squash(bad[-1]['error'])}"
        testers = list(self._testers)
        category = _category(outcome, testers, flow == FLOW_NAME, summaries)
        subtests = [_subtest_json(t.record) for t in testers] if flow == FLOW_NAME else summaries
        record = TestRecord(
            nodeid=_test_id(item), file=_file(item), name=item.name, flow=flow, outcome=outcome,
            category=category, message=message, duration_s=round(time.perf_counter() - self._started, 3),
            subtests=subtests,
        )
        self.records.append(record)
        self._write({"kind": "test", **asdict(record)})
        self._testers = []

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
        report = (yield).get_result()
        if report.when == "call":  # the fixtures are gone after teardown
            self._summaries = _suite_summaries(item)
        previous = self._outcomes.get(item.nodeid)
        if report.when == "call" or (report.outcome != "passed" and previous is None):
            outcome = report.outcome
            if hasattr(report, "wasxfail"):
                outcome = "xfailed" if report.skipped else "xpassed"
            message = ""
            if report.skipped and isinstance(report.longrepr, tuple):
                message = str(report.longrepr[2])
            elif report.failed:
                message = _short(report.longreprtext)
            self._outcomes[item.nodeid] = (outcome, message)

    def _write(self, doc: dict[str, Any]) -> None:
        # one JSON document per line, flushed as it happens, so a run that dies (a native
        # crash takes the whole process) still says which test was running
        if self.json_path is None:
            return
        with self.json_path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(doc, default=str) + "\n")

    def start_session(self, path: Path | None) -> None:
        self.json_path = path
        if path is None:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("", encoding="utf-8")
        self._write({
            "kind": "session", "version": RESULTS_VERSION, "target": self.target, "seed": self.seed,
            "known_failures": KNOWN_FAILURES,
        })

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        self._write({"kind": "end", "exitstatus": int(exitstatus)})

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.records:
            return
        tr = terminalreporter
        tr.section("ExecuTorch backend suite")
        by_flow: dict[str, Counter[str]] = {}
        for r in self.records:
            by_flow.setdefault(r.flow, Counter())[r.category] += 1
        for flow, counts in sorted(by_flow.items()):
            total = sum(counts.values())
            parts = ", ".join(f"{counts[c]} {c}" for c in CATEGORIES if counts[c])
            tr.write_line(f"{flow}: {total} tests: {parts}")
        if self.json_path is not None:
            tr.write_line(f"results: {self.json_path}")


def _file(item: pytest.Item) -> str:
    return Path(str(getattr(item, "path", "") or item.nodeid.split("::")[0])).name


def _test_id(item: pytest.Item) -> str:
    """``test_conv2d.py::test_conv2d_basic[espnn]`` (the suite lives outside the rootdir, so
    pytest's own node ids lack the file)."""
    return f"{_file(item)}::{item.name}"


def _squash(text: str, limit: int = 400) -> str:
    return " ".join(ln.strip() for ln in text.splitlines() if ln.strip())[:limit]


def _short(text: str, limit: int = 600) -> str:
    """The most telling line of a failure: the last 'Error' line, else the tail."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in reversed(lines):
        if ln.startswith("E ") or "Error" in ln:
            return ln.removeprefix("E").strip()[:limit]
    return (lines[-1] if lines else "")[:limit]


# --------------------------------------------------------------------------- hooks


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("espnn-suite", "ExecuTorch backend suite against EspNNDelegateBackend")
    group.addoption(JSON_OPTION, default=None, metavar="PATH",
                    help="write every test's outcome and the espnn flow's decisions to PATH (JSON lines)")
    group.addoption(TARGET_OPTION, default=DEFAULT_TARGET,
                    help=f"target chip the espnn flow lowers for (default {DEFAULT_TARGET})")
    group.addoption(SEED_OPTION, type=int, default=0,
                    help="seed of the random test inputs (default 0; each test derives its own)")


_RECORDER_KEY = pytest.StashKey[SuiteRecorder]()
_RESTORE_KEY = pytest.StashKey[Callable[[], None]]()


def _install(config: pytest.Config, target: str) -> SuiteRecorder:
    import executorch.backends.test.suite.flow as suite_flow

    recorder = SuiteRecorder(target)
    original: Callable[[], dict[str, Any]] = suite_flow.all_flows
    flow = make_flow(recorder.make_tester, target=target)

    def all_flows() -> dict[str, Any]:
        flows = dict(original())
        flows[flow.name] = flow
        return flows

    suite_flow.all_flows = all_flows

    def restore() -> None:
        suite_flow.all_flows = original

    config.stash[_RECORDER_KEY] = recorder
    config.stash[_RESTORE_KEY] = restore
    config.pluginmanager.register(recorder, "espnn-suite-recorder")
    return recorder


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]) -> None:
    # runs before the suite's conftest is imported (it reads all_flows() at import time)
    target = DEFAULT_TARGET
    for i, a in enumerate(args):
        if a == TARGET_OPTION and i + 1 < len(args):
            target = args[i + 1]
        elif a.startswith(TARGET_OPTION + "="):
            target = a.split("=", 1)[1]
    _install(early_config, target)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "timeout(seconds): per-test time limit the suite sets (needs pytest-timeout)")
    recorder = config.stash.get(_RECORDER_KEY, None)
    if recorder is None:  # not loaded early (e.g. listed in a conftest): too late for the suite
        raise pytest.UsageError(
            "executorch_espnn.testing.suite_plugin must be loaded with -p on the command line, "
            "so that it registers the espnn flow before the suite's conftest.py is imported"
        )
    path = config.getoption(JSON_OPTION)
    recorder.seed = int(config.getoption(SEED_OPTION))
    recorder.start_session(Path(path).resolve() if path else None)
    # build and load the delegate library now, so a missing compiler is one clear error
    # instead of a failure in every test
    from .. import host

    host.load_library()


def pytest_unconfigure(config: pytest.Config) -> None:
    restore = config.stash.get(_RESTORE_KEY, None)
    if restore is not None:
        restore()
