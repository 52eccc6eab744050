"""Build tests/hardening/cpp (the concurrency and failure-injection programs) with a sanitizer.

The CMake project adds the component's own sources (add_subdirectory), so the adapter,
engine and memory policy are instrumented along with the test programs, and links the
executorch wheel.  One build per sanitizer, cached by a hash of every source it compiles, the
toolchain and the executorch version, under ``$ESPNN_HARDENING_CACHE`` or
``<tmp>/executorch_espnn_hardening``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from executorch_espnn import host

ROOT = Path(__file__).resolve().parents[2]
COMPONENT = ROOT / "espnn_component"
PROJECT = Path(__file__).resolve().parent / "cpp"
_SUFFIXES = (".c", ".cc", ".cpp", ".h", ".hpp", ".cmake", ".in", ".txt")

TARGETS = {
    "thread": ("concurrency", "concurrency_unserialized"),
    "address": ("failure_injection", "failure_injection_policy"),
}
TSAN_ENV = {"TSAN_OPTIONS": "halt_on_error=1:exitcode=66:second_deadlock_stack=1"}
ASAN_ENV = {
    "ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0:exitcode=86",
    "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1:exitcode=87",
}


def cache_dir() -> Path:
    env = os.environ.get("ESPNN_HARDENING_CACHE")
    base = Path(env) if env else Path(tempfile.gettempdir()) / "executorch_espnn_hardening"
    base.mkdir(parents=True, exist_ok=True)
    return base


def _key(sanitizer: str, tc: host.Toolchain) -> str:
    h = hashlib.sha256(repr((sanitizer, tc.cmake_version, tc.cxx_version,
                             host.executorch_version())).encode())
    files = [p for d in (COMPONENT, PROJECT) for p in d.rglob("*")
             if p.is_file() and p.suffix in _SUFFIXES]
    for p in sorted(files):
        h.update(str(p.relative_to(ROOT)).encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


def build(sanitizer: str) -> Path:
    """The build directory holding the programs of ``sanitizer`` (thread|address)."""
    targets = TARGETS[sanitizer]
    tc = host.find_toolchain()
    out = cache_dir() / f"{sanitizer}-{_key(sanitizer, tc)}"
    if all((out / t).exists() for t in targets):
        return out
    work = Path(tempfile.mkdtemp(prefix=f"{sanitizer}-", dir=cache_dir()))
    try:
        cmds = [
            [str(tc.cmake), "-S", str(PROJECT), "-B", str(work), "-G", tc.generator,
             f"-DESPNN_COMPONENT={COMPONENT}", f"-DESPNN_SANITIZER={sanitizer}",
             f"-DCMAKE_PREFIX_PATH={host.executorch_dir()}", "-DCMAKE_BUILD_TYPE=Debug"],
            [str(tc.cmake), "--build", str(work), "--parallel", "2", "--target", *targets],
        ]
        for cmd in cmds:
            r = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if r.returncode != 0:
                raise RuntimeError(f"{' '.join(cmd)}\n{r.stdout[-6000:]}\n{r.stderr[-3000:]}")
        if out.exists():
            shutil.rmtree(out, ignore_errors=True)
        work.rename(out)  # same filesystem: a concurrent session sees all or nothing
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)
    return out


def run(exe: Path, args: list[str], env: dict[str, str], timeout: float = 600
        ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **env}, check=False)
