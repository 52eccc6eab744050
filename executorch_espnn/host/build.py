"""The host builds of espnn_component, one mechanism for both: executorch_espnn.host's shared
library (``build_library``) and the PlatformIO host board's static runtime
(builder/espnn_pio/host_build.py).

Both compile the component's own CMake project against the executorch wheel with the pip
``cmake``, keyed by a hash of the same source files, cached under ``$ESPNN_CACHE_DIR``
(default ``~/.cache/executorch-espnn``) in ``<kind>/<key>/``, and built under a file lock into a
temporary folder renamed into place, so concurrent builds are safe and readers see no artifact
or a whole one.  A failed build keeps its log at ``<kind>/<key>.build.log`` and says where.

Only the standard library is imported here: the builder imports this module in SCons.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from .. import compat, resources
from ..errors import HostBuildError
from ..version import __version__

if TYPE_CHECKING:
    from hashlib import _Hash

LIBRARY_FILE = "libexecutorch_espnn_host.so"
LIBRARY_TARGET = "executorch_espnn_host"
CACHE_ENV = "ESPNN_CACHE_DIR"
COMPONENT_ENV = "ESPNN_COMPONENT_DIR"
MIN_CMAKE = (3, 28)
# what a build's sources are: every file under these component folders
_SOURCE_DIRS = ("adapter", "runtime", "engine", "host_espnn", "memory", "include", "cmake", "pal")
_SOURCE_SUFFIXES = (".c", ".cc", ".cpp", ".h", ".hpp", ".S", ".cmake", ".in", ".txt")
_LOG_TAIL = 30  # lines of a failed step's log quoted in the error


@dataclass(frozen=True)
class Toolchain:
    cmake: Path
    cmake_version: str
    cxx: Path
    cxx_version: str
    cc: Path | None
    generator: str


def component_dir() -> Path:
    """The ``espnn_component`` sources ($ESPNN_COMPONENT_DIR, else the package's)."""
    env = os.environ.get(COMPONENT_ENV)
    path = Path(env) if env else resources.component_dir()
    if not (path / "CMakeLists.txt").is_file():
        raise HostBuildError(
            f"the espnn_component sources are not at {path}; unset {COMPONENT_ENV} to use the "
            "package's own, or set it to the espnn_component folder of an executorch-espnn checkout"
        )
    return path


def cache_dir() -> Path:
    env = os.environ.get(CACHE_ENV)
    return Path(env) if env else Path.home() / ".cache" / "executorch-espnn"


def executorch_dir() -> Path:
    """The installed executorch wheel's folder (its CMake package, headers and libraries)."""
    try:
        import executorch.version  # the package is a namespace package: no executorch.__file__
    except ImportError:
        raise HostBuildError(
            "the executorch wheel is not installed in this Python; install with: "
            f'"{sys.executable}" -m pip install "{compat.EXECUTORCH.requirement}"'
        ) from None
    return Path(executorch.version.__file__).resolve().parent


def executorch_version() -> str:
    from executorch.version import __version__ as et_version

    return str(et_version)


def _version_of(cmd: Sequence[str]) -> str:
    try:
        out = subprocess.run(list(cmd), capture_output=True, text=True, timeout=60, check=False)
    except OSError as exc:
        return f"unavailable ({exc})"
    return (out.stdout or out.stderr).strip().splitlines()[0] if (out.stdout or out.stderr) else ""


def find_cmake() -> tuple[Path, str]:
    """The pip cmake (else the one on PATH) and its version line; HostBuildError with the fix
    when it is missing or older than the executorch CMake package needs."""
    try:
        import cmake as cmake_pkg

        cmake = Path(cmake_pkg.CMAKE_BIN_DIR) / "cmake"
    except ImportError:
        found = shutil.which("cmake")
        if found is None:
            raise HostBuildError(
                f"cmake is not installed: run `{sys.executable} -m pip install 'cmake>=3.28'` "
                "(the executorch CMake package needs CMake 3.28 or newer)"
            ) from None
        cmake = Path(found)
    version = _version_of([str(cmake), "--version"])
    match = re.search(r"(\d+)\.(\d+)", version)
    if match is None or (int(match[1]), int(match[2])) < MIN_CMAKE:
        raise HostBuildError(
            f"{cmake} reports {version!r}; the executorch CMake package needs CMake "
            f"{MIN_CMAKE[0]}.{MIN_CMAKE[1]} or newer: `{sys.executable} -m pip install 'cmake>=3.28'`"
        )
    return cmake, version


def find_toolchain() -> Toolchain:
    """The pip cmake and the C/C++ compilers; HostBuildError with the fix when one is missing."""
    cmake, cmake_version = find_cmake()
    cxx_name = os.environ.get("CXX") or next(
        (c for c in ("c++", "g++", "clang++") if shutil.which(c)), None
    )
    cxx = shutil.which(cxx_name) if cxx_name else None
    if cxx is None:
        raise HostBuildError(
            "no C++17 compiler found (looked for $CXX, c++, g++, clang++): install one, e.g. "
            "`sudo apt-get install g++` (Debian/Ubuntu) or `xcode-select --install` (macOS), "
            "or set CXX to its path"
        )
    cc_name = os.environ.get("CC") or next((c for c in ("cc", "gcc", "clang") if shutil.which(c)), None)
    cc = shutil.which(cc_name) if cc_name else None
    if cc is None:
        raise HostBuildError(
            "no C compiler found (looked for $CC, cc, gcc, clang): install one, e.g. "
            "`sudo apt-get install gcc`, or set CC to its path"
        )
    return Toolchain(
        cmake=cmake,
        cmake_version=cmake_version,
        cxx=Path(cxx),
        cxx_version=_version_of([cxx, "--version"]),
        cc=Path(cc),
        generator=generator(),
    )


def generator() -> str:
    """CMake's generator: Ninja when installed, else make."""
    if shutil.which("ninja"):
        return "Ninja"
    if shutil.which("make"):
        return "Unix Makefiles"
    raise HostBuildError(
        "neither ninja nor make is installed: `python -m pip install ninja` or "
        "`sudo apt-get install make`"
    )


def source_files(component: Path) -> list[Path]:
    files = [component / "CMakeLists.txt"]
    for sub in _SOURCE_DIRS:
        root = component / sub
        if root.is_dir():
            files += sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in _SOURCE_SUFFIXES)
    return files


def hash_sources(h: _Hash, component: Path) -> None:
    """Feed ``h`` every source file's path (relative to ``component``) and content hash."""
    for path in source_files(component):
        h.update(path.relative_to(component).as_posix().encode())
        h.update(b"\0")
        h.update(hashlib.sha256(path.read_bytes()).digest())


def hash_parts(h: _Hash, parts: Sequence[str]) -> str:
    """Feed ``h`` the other things a build depends on; returns the cache key."""
    for part in parts:
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:20]


def build_key(toolchain: Toolchain, component: Path) -> str:
    """Hash of everything the library depends on: sources, toolchain, wheel, this package."""
    h = hashlib.sha256()
    hash_sources(h, component)
    return hash_parts(h, (
        toolchain.cmake_version,
        toolchain.cxx_version,
        str(toolchain.cxx),
        str(toolchain.cc),
        toolchain.generator,
        executorch_version(),
        str(executorch_dir()),
        __version__,
        sys.platform,
    ))


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def run_logged(cmd: Sequence[str], log: Path, what: str, env: dict[str, str]) -> None:
    """Run ``cmd`` with its output appended to ``log``; HostBuildError quoting the log's tail
    when it fails."""
    with log.open("a") as out:
        out.write("$ " + " ".join(cmd) + "\n")
        out.flush()
        proc = subprocess.run(list(cmd), stdout=out, stderr=subprocess.STDOUT, env=env, check=False)
    if proc.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-_LOG_TAIL:])
        raise HostBuildError(f"{what} failed (exit {proc.returncode}); full log: {log}\n{tail}")


@dataclass(frozen=True)
class CMakeBuild:
    """One target of the component's CMake project, built into ``<root>/<key>/<artifact>``."""

    source: Path  # the CMake project (espnn_component)
    target: str
    artifact: str  # the file the target produces
    what: str  # "host library", "host runtime": named in errors
    configure_args: tuple[str, ...] = ()  # after -S/-B/-G (build type, prefix path, flags)
    env: dict[str, str] = field(default_factory=dict)  # added to this process's environment
    parallel: int = 2
    cmake: Path | None = None  # None: find_cmake()
    generator: str | None = None  # None: generator()
    announce: str | None = None  # printed once when a build starts


def _build_into(b: CMakeBuild, work: Path, log: Path) -> Path:
    """Configure and build ``b`` in ``work``, logging to ``log``; returns the built file."""
    env = dict(os.environ, **b.env)
    cmake = str(b.cmake or find_cmake()[0])
    run_logged(
        [cmake, "-S", str(b.source), "-B", str(work / "build"), "-G", b.generator or generator(),
         *b.configure_args],
        log, f"configuring the {b.what} (cmake)", env,
    )
    run_logged(
        [cmake, "--build", str(work / "build"), "--target", b.target, "--parallel", str(b.parallel)],
        log, f"building the {b.what}", env,
    )
    built = next((work / "build").rglob(b.artifact), None)
    if built is None:
        raise HostBuildError(f"the build finished without producing {b.artifact}; log: {log}")
    return built


def build_cached(b: CMakeBuild, root: Path, key: str, *, force: bool = False) -> Path:
    """``<root>/<key>/<artifact>``, built first when missing (or when ``force``)."""
    final = root / key
    artifact = final / b.artifact
    if artifact.is_file() and not force:
        return artifact
    with file_lock(root / f"{key}.lock"):
        if artifact.is_file() and not force:  # another process built it while we waited
            return artifact
        if b.announce:
            print(b.announce, flush=True)
        root.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f"{key}.tmp-", dir=root))
        log = root / f"{key}.build.log"  # outside `work`, so a failed build's log survives
        log.write_text("")
        try:
            built = _build_into(b, work, log)
            staged = work / "out"
            staged.mkdir()
            shutil.copy2(built, staged / b.artifact)
            shutil.move(log, staged / "build.log")
            if final.exists():  # a stale or forced entry: we hold the lock
                shutil.rmtree(final)
            os.replace(staged, final)  # atomic: readers see no artifact or a whole one
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return artifact


def build_library(*, force: bool = False) -> Path:
    """Build (or find in the cache) the host library and return its path."""
    toolchain = find_toolchain()
    component = component_dir()
    env = {"CXX": str(toolchain.cxx)}
    if toolchain.cc is not None:
        env["CC"] = str(toolchain.cc)
    b = CMakeBuild(
        source=component,
        target=LIBRARY_TARGET,
        artifact=LIBRARY_FILE,
        what="host library",
        configure_args=("-DCMAKE_BUILD_TYPE=Release", f"-DCMAKE_PREFIX_PATH={executorch_dir()}"),
        env=env,
        cmake=toolchain.cmake,
        generator=toolchain.generator,
    )
    return build_cached(b, cache_dir() / "host-lib", build_key(toolchain, component), force=force)
