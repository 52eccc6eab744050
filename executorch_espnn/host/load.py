"""Load the host library into this process: after ExecuTorch's Python runtime, with
RTLD_GLOBAL, so EspNNDelegateBackend registers into the registry that runtime uses."""

from __future__ import annotations

import ctypes
import functools
import importlib
from dataclasses import dataclass
from pathlib import Path

from ..errors import HostBuildError, HostRuntimeError
from ..pte import BACKEND_ID
from .build import build_library, executorch_version


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
