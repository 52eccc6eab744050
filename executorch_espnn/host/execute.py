"""Run and measure programs on this computer with the loaded host library: ExecuTorch's Python
runtime executes them, the delegated parts on EspNNDelegateBackend, the rest on its CPU
kernels.  numpy and torch are imported when a program runs, not with this module."""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from ..errors import HostRuntimeError, PteError
from ..pte import BACKEND_ID, ProgramInfo, TensorDecl, read_program
from .load import HostLibrary, _CSizes, load_library

if TYPE_CHECKING:
    import numpy as np
    import torch


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


def _prepare_input(index: int, value: Any, decl: TensorDecl | None) -> torch.Tensor:
    import numpy as np
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


def _loaded_and_read(pte: bytes, method: str) -> tuple[HostLibrary, ProgramInfo]:
    """The loaded library and the program's description, every backend it uses registered."""
    lib = load_library()
    try:
        info = read_program(pte, method)
    except PteError as exc:
        raise HostRuntimeError(str(exc)) from exc
    _check_backends(info)
    return lib, info


def run(
    pte: bytes,
    inputs: Sequence[np.ndarray | torch.Tensor],
    *,
    method: str = "forward",
) -> list[np.ndarray]:
    """Execute ``method`` of the program ``pte`` on ``inputs``; returns the outputs as numpy
    arrays.  Raises HostBuildError when the library cannot be built and HostRuntimeError when
    the program cannot be loaded or run (with the backend's reason)."""
    import numpy as np
    from executorch.runtime import Runtime

    lib, info = _loaded_and_read(pte, method)
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
    lib, _ = _loaded_and_read(pte, method)
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
