"""The host board's build: system compiler, the Arduino/ESP-IDF compatibility layer, and, when
the env names a model, the component (EspnnModel + delegate + engine + host ESP-NN kernels +
host memory policy) linked with the ExecuTorch runtime and kernels of the executorch wheel.

The component is compiled by its own CMake project (espnn_component/cmake/host.cmake, target
`espnn_model`), so its source lists have one home.  The static library is cached per content
key (component sources, the env's CONFIG_ESPNN_ET_* macros, compiler, ExecuTorch), under
$ESPNN_CACHE_DIR/host-runtime/ (default ~/.cache/executorch-espnn/host-runtime/, next to
executorch_espnn.host's library), and shared by every project with the same configuration: a
second project or a no-op build costs a few file hashes, not a compile.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

COMPAT_DIR = ("espnn_component", "arduino_host")
LIB_TARGET = "espnn_model"
LIB_FILE = "libespnn_model.a"
_SOURCE_DIRS = ("adapter", "cmake", "engine", "host_espnn", "include", "memory", "runtime", "pal")
_SOURCE_SUFFIXES = {".c", ".cc", ".cpp", ".h", ".hpp", ".cmake", ".in", ".txt", ".S"}
_ET_LIBS = ("executorch", "executorch_kernels_optimized", "executorch_kernels_quantized")


class HostBuildFailure(Exception):
    """One line (plus the log path) for the build to print."""


def _fail(env: Any, message: str) -> None:
    sys.stderr.write(f"Error: {message}\n")
    env.Exit(1)


@dataclass(frozen=True)
class RuntimeBuild:
    component: Path
    config_header: Path | None  # the env's espnn_sdkconfig.h
    cache_root: Path
    executorch_dir: Path
    cc: str
    cxx: str

    def source_files(self) -> list[Path]:
        files = [self.component / "CMakeLists.txt"]
        for sub in _SOURCE_DIRS:
            root = self.component / sub
            if root.is_dir():
                files += sorted(
                    p for p in root.rglob("*") if p.is_file() and p.suffix in _SOURCE_SUFFIXES
                )
        return files

    def key(self) -> str:
        h = hashlib.sha256()
        for path in self.source_files():
            h.update(path.relative_to(self.component).as_posix().encode() + b"\0")
            h.update(hashlib.sha256(path.read_bytes()).digest())
        if self.config_header is not None:
            # the macros only: the header's comment names the project's sdkconfig files, and
            # two projects with the same configuration share one library
            lines = self.config_header.read_text(encoding="utf8").splitlines()
            h.update("\n".join(ln for ln in lines if ln.startswith("#define")).encode())
        for part in (self.cc, self.cxx, str(self.executorch_dir), _et_version(self.executorch_dir)):
            h.update(part.encode() + b"\0")
        return h.hexdigest()[:20]


def _et_version(et_dir: Path) -> str:
    vfile = et_dir / "version.py"
    return vfile.read_text(encoding="utf8") if vfile.is_file() else "unknown"


def executorch_dir() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("executorch")
    if spec is None or not spec.submodule_search_locations:
        raise HostBuildFailure(
            "the executorch wheel is not installed in PlatformIO's Python; install with: "
            f'"{sys.executable}" -m pip install "executorch==1.5.1"'
        )
    return Path(next(iter(spec.submodule_search_locations)))


def _cmake() -> str:
    try:
        import cmake as cmake_pkg  # the pip cmake: the wheel's CMake package needs >= 3.28

        return str(Path(cmake_pkg.CMAKE_BIN_DIR) / "cmake")
    except ImportError:
        found = shutil.which("cmake")
        if found is None:
            raise HostBuildFailure(
                "cmake is not installed in PlatformIO's Python; install with: "
                f'"{sys.executable}" -m pip install "cmake>=3.28"'
            ) from None
        return found


@contextlib.contextmanager
def _lock(path: Path) -> Iterator[None]:
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _run(cmd: list[str], log: Path, what: str, env: dict[str, str]) -> None:
    with log.open("a") as out:
        out.write("$ " + " ".join(cmd) + "\n")
        out.flush()
        rc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, check=False).returncode
    if rc != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-25:])
        raise HostBuildFailure(f"{what} failed (exit {rc}); full log: {log}\n{tail}")


def build_runtime(rb: RuntimeBuild) -> Path:
    """The cached libespnn_model.a for this configuration, building it when missing."""
    key = rb.key()
    final = rb.cache_root / key
    lib = final / LIB_FILE
    if lib.is_file():
        return lib
    with _lock(rb.cache_root / f"{key}.lock"):
        if lib.is_file():
            return lib
        print("Building the executorch-espnn host runtime (once per configuration)...", flush=True)
        work = Path(tempfile.mkdtemp(prefix=f"{key}.tmp-", dir=rb.cache_root))
        log = work / "build.log"
        env = dict(os.environ, CC=rb.cc, CXX=rb.cxx)
        flags = f"-I{rb.config_header.parent}" if rb.config_header is not None else ""
        cmake = _cmake()
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        try:
            _run(
                [cmake, "-S", str(rb.component), "-B", str(work / "build"), *generator,
                 "-DCMAKE_BUILD_TYPE=Release", f"-DCMAKE_PREFIX_PATH={rb.executorch_dir}",
                 f"-DCMAKE_C_FLAGS={flags}", f"-DCMAKE_CXX_FLAGS={flags}"],
                log, "configuring the host runtime (cmake)", env,
            )
            _run(
                [cmake, "--build", str(work / "build"), "--target", LIB_TARGET,
                 "--parallel", str(os.cpu_count() or 2)],
                log, "building the host runtime", env,
            )
            built = next((work / "build").rglob(LIB_FILE), None)
            if built is None:
                raise HostBuildFailure(f"the runtime build produced no {LIB_FILE}; log: {log}")
            staged = work / "out"
            staged.mkdir()
            shutil.copy2(built, staged / LIB_FILE)
            shutil.copy2(log, staged / "build.log")
            if final.exists():
                shutil.rmtree(final)
            os.replace(staged, final)  # atomic: other builds see no library or a whole one
        except HostBuildFailure:
            kept = rb.cache_root / f"{key}.failed.log"
            shutil.copy2(log, kept)
            raise
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return lib


def _link_runtime(env: Any, root: Path) -> None:
    kconf = env.get("ESPNN_KCONFIG")
    header = (kconf.out_dir / "espnn_sdkconfig.h") if kconf is not None else None
    et = executorch_dir()
    rb = RuntimeBuild(
        component=root / "espnn_component",
        config_header=header if header is not None and header.is_file() else None,
        cache_root=cache_root(),
        executorch_dir=et,
        cc=shutil.which("gcc") or "cc",
        cxx=shutil.which("g++") or "c++",
    )
    lib = build_runtime(rb)
    if env.get("ESPNN_KERNELS") is not None:  # custom_executorch_runtime = source
        from executorch_espnn.errors import RuntimeSourcesError

        from . import host_source, runtime_build

        try:
            host_source.link(env, root / "espnn_component", lib, pal_symbols(root / "espnn_component"))
        except RuntimeSourcesError as exc:
            raise HostBuildFailure(f"{exc}; {runtime_build.TREE_HINT}") from exc
        return
    libdir = et / "lib"
    env.Append(
        LIBPATH=[str(libdir)],
        # the kernel libraries register operators from static constructors: keep them even
        # though nothing references a symbol in them
        LINKFLAGS=["-Wl,--no-as-needed", f"-Wl,-rpath,{libdir}", "-pthread"]
        # the host PAL is an archive member nothing references; libexecutorch.so only has
        # weak defaults, so -u is what makes ours (stderr logging, the memory policy) win
        + [f"-Wl,-u,{sym}" for sym in pal_symbols(root / "espnn_component")],
    )
    env.Prepend(LIBS=[env.File(str(lib))])
    env.Append(LIBS=[*_ET_LIBS, "m", "dl"])


def pal_symbols(component: Path) -> list[str]:
    """ESPNN_PAL_SYMBOLS of pal/sources.cmake, the one list of the PAL's functions."""
    text = (component / "pal" / "sources.cmake").read_text(encoding="utf8")
    m = re.search(r"set\(ESPNN_PAL_SYMBOLS\s+([^)]*)\)", text)
    if m is None:
        raise HostBuildFailure(f"{component / 'pal' / 'sources.cmake'} defines no ESPNN_PAL_SYMBOLS")
    return m.group(1).split()


def cache_root() -> Path:
    """Where runtime libraries are kept: next to executorch_espnn.host's library, in
    $ESPNN_CACHE_DIR or ~/.cache/executorch-espnn (host.cache_dir(), not imported here: it
    pulls in numpy, and a no-op build should not)."""
    shared = os.environ.get("ESPNN_CACHE_DIR")
    base = Path(shared) if shared else Path.home() / ".cache" / "executorch-espnn"
    return base / "host-runtime"


def configure(env: Any) -> None:
    platform = env.PioPlatform()
    root = Path(platform.get_dir())
    compat = root.joinpath(*COMPAT_DIR)
    component = root / "espnn_component"

    env.Append(
        CPPPATH=[str(compat), str(component / "include")],
        CFLAGS=["-std=gnu11"],
        CXXFLAGS=["-std=gnu++17"],
        CPPDEFINES=["ESPNN_HOST"],
    )
    frameworks = [f.strip().lower() for f in env.get("PIOFRAMEWORK", []) or []]
    if frameworks:
        env.BuildSources(str(Path(env.subst("$BUILD_DIR")) / "espnn_host"), str(compat))
    if env.get("ESPNN_MODEL_INFO") is None:
        return  # no model in this env: a plain sketch needs no runtime
    try:
        _link_runtime(env, root)
    except HostBuildFailure as exc:
        _fail(env, str(exc))
