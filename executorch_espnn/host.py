"""Run lowered programs on this computer: the C engine, the ESP-NN host kernels and the
EspNNDelegateBackend adapter, built as a shared library against the executorch wheel and
loaded into this process, so ExecuTorch's Python runtime executes delegated programs with it
and the CPU-fallback parts on its own kernels.

    from executorch_espnn import host
    outputs = host.run(pte_bytes, [x])          # list of numpy arrays

The library is built on first use with the pip ``cmake`` and the system C++ compiler, and
cached under ``$ESPNN_CACHE_DIR`` (default ``~/.cache/executorch-espnn``) by a hash of the
sources, the toolchain and the executorch version.  Concurrent builds are safe (a lock file
and an atomic rename).  See docs/runtime.md.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import functools
import hashlib
import importlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import HostBuildError, HostRuntimeError, PteError
from .pte import BACKEND_ID, ProgramInfo, TensorDecl, read_program
from .version import __version__

if TYPE_CHECKING:
    import torch

LIBRARY_FILE = "libexecutorch_espnn_host.so"
LIBRARY_TARGET = "executorch_espnn_host"
CACHE_ENV = "ESPNN_CACHE_DIR"
COMPONENT_ENV = "ESPNN_COMPONENT_DIR"
MIN_CMAKE = (3, 28)
# what the library's sources are: every file under these component folders
_SOURCE_DIRS = ("adapter", "runtime", "engine", "host_espnn", "memory", "include", "cmake", "pal")
_SOURCE_SUFFIXES = (".c", ".cc", ".cpp", ".h", ".hpp", ".S", ".cmake", ".in", ".txt")


@dataclass(frozen=True)
class Toolchain:
    cmake: Path
    cmake_version: str
    cxx: Path
    cxx_version: str
    cc: Path | None
    generator: str


@dataclass(frozen=True)
class PteSizes:
    """Memory one method of a program needs under EspnnModel, measured on this host
    (pointer_bytes says which pointer size the method allocator figure is for)."""

    planned_bytes: int
    method_allocator_bytes: int
    temp_allocator_bytes: int
    delegate_handle_bytes: int
    delegate_state_bytes: int
    delegate_arena_bytes: int
    delegate_weights_bytes: int
    n_planned_buffers: int
    n_delegates: int
    pointer_bytes: int

    def header_sizes(self) -> dict[str, int]:
        """The byte counts of the generated model header (espnn_pte_desc_t) that EspnnModel
        sizes its pools with; ``state_bytes`` includes the delegate handles."""
        return {
            "arena_bytes": self.delegate_arena_bytes,
            "state_bytes": self.delegate_state_bytes + self.delegate_handle_bytes,
            "planned_bytes": self.planned_bytes,
            "method_allocator_bytes": self.method_allocator_bytes,
            "temp_allocator_bytes": self.temp_allocator_bytes,
        }


class _CSizes(ctypes.Structure):
    # mirrors executorch_espnn_pte_sizes_t
    _fields_ = [
        ("planned_bytes", ctypes.c_uint64),
        ("method_allocator_bytes", ctypes.c_uint64),
        ("temp_allocator_bytes", ctypes.c_uint64),
        ("delegate_handle_bytes", ctypes.c_uint64),
        ("delegate_state_bytes", ctypes.c_uint64),
        ("delegate_arena_bytes", ctypes.c_uint64),
        ("delegate_weights_bytes", ctypes.c_uint64),
        ("n_planned_buffers", ctypes.c_uint32),
        ("n_delegates", ctypes.c_uint32),
        ("pointer_bytes", ctypes.c_uint32),
    ]


# --- building ---------------------------------------------------------------------------------


def component_dir() -> Path:
    """The ``espnn_component`` sources ($ESPNN_COMPONENT_DIR, else the checkout's)."""
    env = os.environ.get(COMPONENT_ENV)
    path = Path(env) if env else Path(__file__).resolve().parents[1] / "espnn_component"
    if not (path / "CMakeLists.txt").is_file():
        raise HostBuildError(
            f"the espnn_component sources are not at {path}; set {COMPONENT_ENV} to the "
            "espnn_component folder of an executorch-espnn checkout"
        )
    return path


def cache_dir() -> Path:
    env = os.environ.get(CACHE_ENV)
    return Path(env) if env else Path.home() / ".cache" / "executorch-espnn"


def executorch_dir() -> Path:
    import executorch.version  # the package is a namespace package: no executorch.__file__

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


def find_toolchain() -> Toolchain:
    """The pip cmake and the C/C++ compilers; HostBuildError with the fix when one is missing."""
    try:
        import cmake as cmake_pkg

        cmake = Path(cmake_pkg.CMAKE_BIN_DIR) / "cmake"
    except ImportError:
        found = shutil.which("cmake")
        if found is None:
            raise HostBuildError(
                "cmake is not installed: run `python -m pip install 'cmake>=3.28'` in this "
                "environment (the executorch CMake package needs CMake 3.28 or newer)"
            ) from None
        cmake = Path(found)
    cmake_version = _version_of([str(cmake), "--version"])
    match = re.search(r"(\d+)\.(\d+)", cmake_version)
    if match is None or (int(match[1]), int(match[2])) < MIN_CMAKE:
        raise HostBuildError(
            f"{cmake} reports {cmake_version!r}; the executorch CMake package needs CMake "
            f"{MIN_CMAKE[0]}.{MIN_CMAKE[1]} or newer: `python -m pip install 'cmake>=3.28'`"
        )
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
    if shutil.which("ninja"):
        generator = "Ninja"
    elif shutil.which("make"):
        generator = "Unix Makefiles"
    else:
        raise HostBuildError(
            "neither ninja nor make is installed: `python -m pip install ninja` or "
            "`sudo apt-get install make`"
        )
    return Toolchain(
        cmake=cmake,
        cmake_version=cmake_version,
        cxx=Path(cxx),
        cxx_version=_version_of([cxx, "--version"]),
        cc=Path(cc),
        generator=generator,
    )


def source_files(component: Path) -> list[Path]:
    files = [component / "CMakeLists.txt"]
    for sub in _SOURCE_DIRS:
        root = component / sub
        if root.is_dir():
            files += sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in _SOURCE_SUFFIXES)
    return files


def build_key(toolchain: Toolchain, component: Path) -> str:
    """Hash of everything the library depends on: sources, toolchain, wheel, this package."""
    h = hashlib.sha256()
    for path in source_files(component):
        h.update(path.relative_to(component).as_posix().encode())
        h.update(b"\0")
        h.update(hashlib.sha256(path.read_bytes()).digest())
    for part in (
        toolchain.cmake_version,
        toolchain.cxx_version,
        str(toolchain.cxx),
        str(toolchain.cc),
        toolchain.generator,
        executorch_version(),
        str(executorch_dir()),
        __version__,
        sys.platform,
    ):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:20]


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _run_logged(cmd: Sequence[str], log: Path, what: str, env: dict[str, str]) -> None:
    with log.open("a") as out:
        out.write("$ " + " ".join(cmd) + "\n")
        out.flush()
        proc = subprocess.run(list(cmd), stdout=out, stderr=subprocess.STDOUT, env=env, check=False)
    if proc.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-30:])
        raise HostBuildError(f"{what} failed (exit {proc.returncode}); full log: {log}\n{tail}")


def _build_into(work: Path, toolchain: Toolchain, component: Path, log: Path) -> Path:
    """Configure and build the library in ``work``, logging to ``log``; returns the built file."""
    env = dict(os.environ, CXX=str(toolchain.cxx))
    if toolchain.cc is not None:
        env["CC"] = str(toolchain.cc)
    _run_logged(
        [
            str(toolchain.cmake),
            "-S", str(component),
            "-B", str(work / "build"),
            "-G", toolchain.generator,
            "-DCMAKE_BUILD_TYPE=Release",
            f"-DCMAKE_PREFIX_PATH={executorch_dir()}",
        ],
        log, "configuring the host library (cmake)", env,
    )
    _run_logged(
        [str(toolchain.cmake), "--build", str(work / "build"), "--target", LIBRARY_TARGET, "--parallel", "2"],
        log, "building the host library", env,
    )
    built = next((work / "build").rglob(LIBRARY_FILE), None)
    if built is None:
        raise HostBuildError(f"the build finished without producing {LIBRARY_FILE}; log: {log}")
    return built


def build_library(*, force: bool = False) -> Path:
    """Build (or find in the cache) the host library and return its path."""
    toolchain = find_toolchain()
    component = component_dir()
    key = build_key(toolchain, component)
    root = cache_dir() / "host-lib"
    final = root / key
    library = final / LIBRARY_FILE
    if library.is_file() and not force:
        return library
    with _file_lock(root / f"{key}.lock"):
        if library.is_file() and not force:  # another process built it while we waited
            return library
        root.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f"{key}.tmp-", dir=root))
        log = root / f"{key}.build.log"  # outside `work`, so a failed build's log survives
        log.write_text("")
        try:
            built = _build_into(work, toolchain, component, log)
            staged = work / "out"
            staged.mkdir()
            shutil.copy2(built, staged / LIBRARY_FILE)
            shutil.move(log, staged / "build.log")
            if final.exists():  # a stale or forced entry: we hold the lock
                shutil.rmtree(final)
            os.replace(staged, final)  # atomic: readers see no library or a whole one
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return library


# --- loading ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class HostLibrary:
    path: Path
    cdll: ctypes.CDLL

    def last_error(self) -> str:
        buf = ctypes.create_string_buffer(1024)
        self.cdll.executorch_espnn_last_error(buf, ctypes.c_size_t(len(buf)))
        return buf.value.decode("ascii", errors="replace")

    def clear_last_error(self) -> None:
        self.cdll.executorch_espnn_clear_last_error()


def _declare(cdll: ctypes.CDLL) -> None:
    cdll.executorch_espnn_register_backend.restype = ctypes.c_int
    cdll.executorch_espnn_register_backend.argtypes = []
    cdll.executorch_espnn_last_error.restype = ctypes.c_size_t
    cdll.executorch_espnn_last_error.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    cdll.executorch_espnn_clear_last_error.restype = None
    cdll.executorch_espnn_clear_last_error.argtypes = []
    cdll.executorch_espnn_measure_pte.restype = ctypes.c_int
    cdll.executorch_espnn_measure_pte.argtypes = [
        ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.POINTER(_CSizes),
        ctypes.c_char_p, ctypes.c_size_t,
    ]
    cdll.executorch_espnn_package_version.restype = ctypes.c_char_p
    cdll.executorch_espnn_executorch_version.restype = ctypes.c_char_p


@functools.lru_cache(maxsize=1)
def load_library() -> HostLibrary:
    """Build if needed, then load the library into this process (once) with RTLD_GLOBAL, after
    ExecuTorch's Python runtime, so the backend registers into the registry it uses.  Also
    loads ExecuTorch's quantized CPU kernels (quantize/dequantize outside delegates)."""
    # libexecutorch.so first, then the quantized_decomposed::* CPU kernels
    importlib.import_module("executorch.extension.pybindings.portable_lib")
    importlib.import_module("executorch.kernels.quantized")

    path = build_library()
    try:
        cdll = ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
    except OSError as exc:
        raise HostBuildError(
            f"cannot load {path}: {exc}; delete {path.parent} to rebuild it"
        ) from exc
    _declare(cdll)
    built_for = cdll.executorch_espnn_executorch_version().decode()
    if built_for.split("+")[0] != executorch_version().split("+")[0]:
        raise HostBuildError(
            f"{path} was built for ExecuTorch {built_for}, this process has {executorch_version()}; "
            f"delete {path.parent} to rebuild it"
        )
    status = cdll.executorch_espnn_register_backend()
    lib = HostLibrary(path, cdll)
    if status != 0:
        raise HostRuntimeError(f"registering {BACKEND_ID} failed (error 0x{status:x}): {lib.last_error()}")
    return lib


# --- running ----------------------------------------------------------------------------------

def _prepare_input(index: int, value: Any, decl: TensorDecl | None) -> torch.Tensor:
    import torch

    if decl is None:
        raise HostRuntimeError(f"input {index} of the program is not a tensor; host.run passes tensors only")
    if isinstance(value, np.ndarray):
        tensor = torch.from_numpy(np.ascontiguousarray(value))
    elif isinstance(value, torch.Tensor):
        tensor = value.detach()
    else:
        raise HostRuntimeError(
            f"input {index} is a {type(value).__name__}; pass a numpy array or a torch tensor"
        )
    got_dtype = str(tensor.dtype).removeprefix("torch.")
    if got_dtype != decl.dtype:
        raise HostRuntimeError(
            f"input {index} is {got_dtype}, the program expects {decl.dtype}: convert it "
            f"(e.g. x.astype(np.{decl.dtype}) / x.to(torch.{decl.dtype}))"
        )
    if tuple(tensor.shape) != decl.sizes:
        raise HostRuntimeError(
            f"input {index} has shape {tuple(tensor.shape)}, the program expects {decl.sizes}"
        )
    # ExecuTorch's Python runtime copies the raw bytes of the tensor into the planned input,
    # whatever its strides: lay the values out in the program's dim order first, so a
    # channels-last or transposed tensor is converted, never misread.
    order = list(decl.dim_order)
    inverse = [order.index(i) for i in range(len(order))]
    return tensor.permute(order).contiguous().permute(inverse)


def _check_backends(info: ProgramInfo) -> None:
    from executorch.runtime import Runtime

    registered = set(Runtime.get().backend_registry.registered_backend_names)
    missing = [b for b in info.used_backends if b not in registered]
    if missing:
        raise HostRuntimeError(
            f"the program delegates to {missing}, which no library in this process registers "
            f"(registered: {sorted(registered)}); executorch_espnn.host runs programs lowered "
            f"for {BACKEND_ID}: lower the model with executorch_espnn, or load that backend's "
            "runtime library first"
        )


def _runtime_failure(lib: HostLibrary, what: str, exc: Exception) -> HostRuntimeError:
    detail = lib.last_error()
    text = str(exc).strip() or type(exc).__name__
    if detail:
        return HostRuntimeError(f"{what} failed: {text}; {BACKEND_ID}: {detail}")
    return HostRuntimeError(f"{what} failed: {text} (the ExecuTorch log above has the details)")


def run(
    pte: bytes,
    inputs: Sequence[np.ndarray | torch.Tensor],
    *,
    method: str = "forward",
) -> list[np.ndarray]:
    """Execute ``method`` of the program ``pte`` on ``inputs``; returns the outputs as numpy
    arrays.  Raises HostBuildError when the library cannot be built and HostRuntimeError when
    the program cannot be loaded or run (with the backend's reason)."""
    from executorch.runtime import Runtime

    lib = load_library()
    try:
        info = read_program(pte, method)
    except PteError as exc:
        raise HostRuntimeError(str(exc)) from exc
    _check_backends(info)
    if len(inputs) != len(info.inputs):
        raise HostRuntimeError(f"the program takes {len(info.inputs)} inputs, got {len(inputs)}")
    prepared = [_prepare_input(i, x, d) for i, (x, d) in enumerate(zip(inputs, info.inputs, strict=True))]

    lib.clear_last_error()
    try:
        program = Runtime.get().load_program(bytes(pte))
        loaded = program.load_method(method)
    except RuntimeError as exc:
        raise _runtime_failure(lib, f"loading method {method!r}", exc) from exc
    if loaded is None:
        raise HostRuntimeError(f"the program has no method {method!r}")
    try:
        outputs = loaded.execute(prepared)
    except RuntimeError as exc:
        raise _runtime_failure(lib, f"executing method {method!r}", exc) from exc
    results: list[np.ndarray] = []
    for out in outputs:
        if hasattr(out, "detach"):
            results.append(out.detach().contiguous().numpy().copy())
        else:
            results.append(np.asarray(out))
    return results


def measure(pte: bytes, *, method: str = "forward") -> PteSizes:
    """The exact pool sizes EspnnModel needs for ``method`` (see :class:`PteSizes`)."""
    lib = load_library()
    try:
        info = read_program(pte, method)
    except PteError as exc:
        raise HostRuntimeError(str(exc)) from exc
    _check_backends(info)
    data = bytes(pte)
    buf = ctypes.create_string_buffer(data, len(data))
    out = _CSizes()
    msg = ctypes.create_string_buffer(1024)
    status = lib.cdll.executorch_espnn_measure_pte(
        ctypes.cast(buf, ctypes.c_void_p), len(data), method.encode(), ctypes.byref(out), msg, len(msg)
    )
    if status != 0:
        raise HostRuntimeError(
            f"measuring method {method!r} failed (0x{status & 0xFFFFFFFF:x}): "
            f"{msg.value.decode('ascii', errors='replace')}"
        )
    return PteSizes(**{f.name: int(getattr(out, f.name)) for f in fields(PteSizes)})
