"""Build and run the engine fuzz target (``fuzz/fuzz_engine.c``) in its three forms.

- ``fuzzer``: clang-14 ``-fsanitize=fuzzer,address,undefined`` (x86_64, or i386 with ``m32``);
- ``replay``: gcc ``-fsanitize=address,undefined`` over ``fuzz/replay_main.c``, by default
  ``-m32`` (gcc-multilib: every size and offset check with 32-bit ``size_t``);
- ``coverage``: clang source-based coverage over the replay driver, for ``llvm-cov report``.

All link the engine and host ESP-NN kernels in strict mode (``ESPNN_HOST_STRICT``: a kernel
called outside the engine's promises aborts, which the fuzzer reports).  Binaries are cached
by a hash of every source and flag in ``$ESPNN_FUZZ_CACHE`` or ``<tmp>/executorch_espnn_fuzz``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from executorch_espnn import component_sources

FUZZ = Path(__file__).resolve().parent
ROOT = FUZZ.parent
COMPONENT = ROOT / "espnn_component"
ENGINE = COMPONENT / "engine"
HOST_ESPNN = COMPONENT / "host_espnn"

CLANG = "clang-14"
LLVM_PROFDATA = "llvm-profdata-14"
LLVM_COV = "llvm-cov-14"
PACKAGES = {
    CLANG: "clang-14 libclang-rt-14-dev libfuzzer-14-dev",
    "gcc": "gcc gcc-multilib",
    LLVM_PROFDATA: "llvm-14",
    LLVM_COV: "llvm-14",
}
WARNINGS = ("-std=c11", "-Wall", "-Wextra", "-Werror")
SANITIZE = ("-fsanitize=address,undefined", "-fno-sanitize-recover=all",
            "-fno-omit-frame-pointer")
SANITIZER_ENV = {
    "ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0:exitcode=86",
    "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1:exitcode=87",
}


class ToolMissing(RuntimeError):
    """A compiler or LLVM tool is not installed; the message names the Debian packages."""


def require(tool: str) -> str:
    if shutil.which(tool) is None:
        raise ToolMissing(f"{tool} not found; install the Debian packages "
                          f"{PACKAGES.get(tool, tool)} (.ci/run does)")
    return tool


def engine_sources() -> list[Path]:
    """The engine and the host ESP-NN kernels, from the component's CMake lists."""
    lists = component_sources.load(COMPONENT)
    return sorted([*lists.engine_srcs, *lists.host_kernel_srcs])


def _includes() -> list[str]:
    lists = component_sources.load(COMPONENT)
    return [f"-I{d}" for d in (*lists.engine_include_dirs, *lists.engine_priv_include_dirs,
                               *lists.host_kernel_include_dirs)]


def cache_dir() -> Path:
    env = os.environ.get("ESPNN_FUZZ_CACHE")
    base = Path(env) if env else Path(tempfile.gettempdir()) / "executorch_espnn_fuzz"
    base.mkdir(parents=True, exist_ok=True)
    return base


def _build(name: str, cc: str, flags: Sequence[str], sources: Sequence[Path]) -> Path:
    require(cc)
    headers = sorted({*(ENGINE / "include").glob("*.h"), *(ENGINE / "src").glob("*.h"),
                      *(HOST_ESPNN / "include").glob("*.h"), *(HOST_ESPNN / "src").glob("*.h")})
    h = hashlib.sha256(repr((cc, list(flags))).encode())
    for p in [*sources, *headers]:
        h.update(p.name.encode())
        h.update(p.read_bytes())
    out = cache_dir() / f"{name}-{h.hexdigest()[:16]}"
    if out.exists():
        return out
    with tempfile.TemporaryDirectory(dir=cache_dir()) as tmp:
        exe = Path(tmp) / name
        cmd = [cc, *WARNINGS, *flags, "-DESPNN_HOST_STRICT", *_includes(), *map(str, sources),
               "-o", str(exe)]
        r = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if r.returncode != 0:
            raise RuntimeError(f"build of {name} failed:\n{' '.join(cmd)}\n{r.stdout}{r.stderr}")
        shutil.move(str(exe), out)
    return out


def fuzzer(m32: bool = False) -> Path:
    arch = ["-m32"] if m32 else []
    return _build("fuzz_engine" + ("-i386" if m32 else ""), CLANG,
                  [*arch, "-g", "-O1", "-fsanitize=fuzzer", *SANITIZE],
                  [FUZZ / "fuzz_engine.c", *engine_sources()])


def replay(m32: bool = True) -> Path:
    arch = ["-m32"] if m32 else []
    return _build("fuzz_replay" + ("-m32" if m32 else ""), "gcc",
                  [*arch, "-g", "-O1", "-pedantic", *SANITIZE],
                  [FUZZ / "fuzz_engine.c", FUZZ / "replay_main.c", *engine_sources()])


def coverage_replay() -> Path:
    return _build("fuzz_replay-cov", CLANG,
                  ["-O1", "-fprofile-instr-generate", "-fcoverage-mapping"],
                  [FUZZ / "fuzz_engine.c", FUZZ / "replay_main.c", *engine_sources()])


# ---------------------------------------------------------------------------------- running


@dataclass(frozen=True)
class DepthStats:
    """The harness's own counters (printed at exit by fuzz_engine.c)."""

    inputs: int
    exercises: int
    valid: int
    bound: int
    invoked: int
    too_big: int
    misaligned: int  # odd-address payloads with int32/float32 constants, refused by init


_DEPTH = re.compile(r"fuzz_engine: (\d+) inputs, (\d+) exercises: (\d+) valid payloads, "
                    r"(\d+) bound, (\d+) invoked, (\d+) too big to bind or run, "
                    r"(\d+) refused as misaligned")


def parse_depth(text: str) -> DepthStats | None:
    found = list(_DEPTH.finditer(text))
    return DepthStats(*map(int, found[-1].groups())) if found else None


@dataclass(frozen=True)
class FuzzResult:
    returncode: int
    log: str
    executed: int  # stat::number_of_executed_units
    exec_per_sec: int  # stat::average_exec_per_sec
    new_units: int  # stat::new_units_added
    peak_rss_mb: int
    coverage: int  # libFuzzer's "cov:" (covered edges) at the end
    features: int  # libFuzzer's "ft:"
    corpus_units: int
    depth: DepthStats | None

    def findings(self) -> list[str]:
        """Lines that report a bug: sanitizer reports, oracle failures, crashes, timeouts."""
        keys = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
                "oracle broken", "deadly signal", "ALARM: working on the last Unit",
                "ERROR: libFuzzer", "SUMMARY: ")
        return [ln for ln in self.log.splitlines() if any(k in ln for k in keys)]


def _stat(log: str, key: str) -> int:
    m = re.search(rf"stat::{key}:\s+(\d+)", log)
    return int(m.group(1)) if m else -1


def run_fuzzer(exe: Path, work_corpus: Path, seeds: Path, *, max_total_time: int,
               runs: int | None = None, seed: int = 1, artifacts: Path | None = None,
               extra: Sequence[str] = ()) -> FuzzResult:
    """Fuzz from ``seeds`` into ``work_corpus`` (new units go there) for a bounded time."""
    work_corpus.mkdir(parents=True, exist_ok=True)
    art = artifacts or work_corpus.parent
    cmd = [str(exe), f"-max_total_time={max_total_time}", f"-seed={seed}",
           "-print_final_stats=1", "-timeout=20", "-rss_limit_mb=2560", "-max_len=65536",
           "-use_value_profile=1", f"-artifact_prefix={art}/", *extra]
    if runs is not None:
        cmd.append(f"-runs={runs}")
    cmd += [str(work_corpus), str(seeds)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=max_total_time + 300,
                       env={**os.environ, **SANITIZER_ENV}, check=False)
    log = r.stdout + r.stderr
    # the last status line ("#N  NEW|REDUCE|pulse|INITED|DONE  cov: .. ft: .. corp: ..")
    status = [ln for ln in log.splitlines() if re.match(r"#\d+\s+\w+\s+cov: ", ln)]
    last = status[-1] if status else ""

    def field(name: str) -> int:
        m = re.search(rf"{name}: (\d+)", last)
        return int(m.group(1)) if m else -1

    corp = re.search(r"corp: (\d+)/", last)
    return FuzzResult(r.returncode, log, _stat(log, "number_of_executed_units"),
                      _stat(log, "average_exec_per_sec"), _stat(log, "new_units_added"),
                      _stat(log, "peak_rss_mb"), field("cov"), field("ft"),
                      int(corp.group(1)) if corp else -1, parse_depth(log))


@dataclass(frozen=True)
class ReplayResult:
    returncode: int
    log: str
    depth: DepthStats | None


def run_replay(exe: Path, paths: Sequence[Path], timeout: float = 600,
               verdicts: bool = False) -> ReplayResult:
    """Replay files/directories; with ``verdicts`` the log has espnn_inspect's verdict per file."""
    flag = ["--verdicts"] if verdicts else []
    r = subprocess.run([str(exe), *flag, *map(str, paths)], capture_output=True, text=True,
                       timeout=timeout, env={**os.environ, **SANITIZER_ENV}, check=False)
    log = r.stdout + r.stderr
    return ReplayResult(r.returncode, log, parse_depth(log))


@dataclass(frozen=True)
class CoverageSummary:
    lines_covered: int
    lines_total: int
    branches_covered: int
    branches_total: int
    per_file: dict[str, float]  # engine file -> line coverage %

    @property
    def line_percent(self) -> float:
        return 100.0 * self.lines_covered / max(1, self.lines_total)

    @property
    def branch_percent(self) -> float:
        return 100.0 * self.branches_covered / max(1, self.branches_total)


def coverage(paths: Sequence[Path]) -> CoverageSummary:
    """Source coverage of the engine and host kernels by replaying ``paths``."""
    exe = coverage_replay()
    require(LLVM_PROFDATA)
    require(LLVM_COV)
    with tempfile.TemporaryDirectory() as tmp:
        raw, prof = Path(tmp) / "cov.profraw", Path(tmp) / "cov.profdata"
        subprocess.run([str(exe), *map(str, paths)], capture_output=True, check=False,
                       env={**os.environ, "LLVM_PROFILE_FILE": str(raw)})
        subprocess.run([LLVM_PROFDATA, "merge", "-o", str(prof), str(raw)], check=True)
        srcs = [str(p) for p in engine_sources()]
        r = subprocess.run([LLVM_COV, "export", "--summary-only", str(exe),
                            f"-instr-profile={prof}", *srcs],
                           capture_output=True, text=True, check=True)
    data = json.loads(r.stdout)["data"][0]
    per_file = {}
    for f in data["files"]:
        name = str(Path(f["filename"]).relative_to(COMPONENT))
        per_file[name] = float(f["summary"]["lines"]["percent"])
    t = data["totals"]
    return CoverageSummary(t["lines"]["covered"], t["lines"]["count"],
                           t["branches"]["covered"], t["branches"]["count"], per_file)
