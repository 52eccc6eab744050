"""The device's memory, simulated literally.

One ``bytearray`` of ``arena_size`` bytes is the activation arena; every arena tensor is a
numpy view at its offset, so tensors the plan places on shared bytes really share them, an
in-place op really overwrites its input, and a wrong plan corrupts data exactly as it would
on the chip.  Constants are read-only views of the payload's constants section; delegate
inputs are read-only views of the caller's arrays, delegate outputs fresh arrays.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from ..errors import DelegateInputError
from ..payload import DType, Payload, Storage, TensorRec

# Fill for the arena and for each op's scratch before the op runs.  A valid plan never reads
# these bytes; a plan that lets scratch or a later tensor clobber a live one reads garbage.
POISON = 0xA5


def numpy_dtype(dtype: DType) -> np.dtype[np.generic]:
    return np.dtype(dtype.numpy_name).newbyteorder("<")


def _non_unit(dims: Sequence[int]) -> list[int]:
    return [d for d in dims if d != 1]


def _check_input(k: int, t: TensorRec, arr: object) -> npt.NDArray[np.generic]:
    want_dtype = numpy_dtype(t.dtype)
    if not isinstance(arr, np.ndarray):
        raise DelegateInputError(
            f"input {k}: expected a numpy array of {want_dtype.name} with shape {t.dims}, "
            f"got {type(arr).__name__}"
        )
    if arr.dtype == want_dtype and arr.shape != t.dims and _non_unit(arr.shape) == _non_unit(t.dims):
        # an io tensor may list the program tensor's sizes with unit dims moved (the same
        # bytes: the engine reads the program's storage in place, docs/payload-format.md)
        arr = arr.reshape(t.dims)
    if arr.dtype != want_dtype or arr.shape != t.dims:
        raise DelegateInputError(
            f"input {k}: expected {want_dtype.name} with shape {t.dims}, "
            f"got {arr.dtype.name} with shape {arr.shape}; "
            "pass the array in the delegate's dtype and logical (contiguous) dims"
        )
    # (np.ascontiguousarray would turn a rank-0 array into shape (1,))
    view = (arr if arr.flags.c_contiguous else arr.copy(order="C")).view()
    view.flags.writeable = False
    return view


class DeviceMemory:
    """Views of every tensor of one payload over simulated arena, constants and IO."""

    def __init__(self, p: Payload, inputs: Sequence[object]) -> None:
        if len(inputs) != len(p.inputs):
            raise DelegateInputError(
                f"the delegate takes {len(p.inputs)} input(s), got {len(inputs)}"
            )
        self.arena = bytearray([POISON]) * p.arena_size
        self.outputs: list[npt.NDArray[np.generic]] = []
        io_in = [_check_input(k, p.tensors[tid], inputs[k]) for k, tid in enumerate(p.inputs)]
        io_out: list[npt.NDArray[np.generic]] = []
        for tid in p.outputs:
            t = p.tensors[tid]
            io_out.append(np.zeros(t.dims, dtype=numpy_dtype(t.dtype)))
        self.outputs = io_out
        self.views: list[npt.NDArray[np.generic]] = []
        for t in p.tensors:
            self.views.append(self._view(t, p.constants, io_in, io_out))

    def _view(
        self,
        t: TensorRec,
        constants: bytes,
        io_in: list[npt.NDArray[np.generic]],
        io_out: list[npt.NDArray[np.generic]],
    ) -> npt.NDArray[np.generic]:
        dt = numpy_dtype(t.dtype)
        if t.storage == Storage.ARENA:
            return np.frombuffer(self.arena, dtype=dt, count=t.numel, offset=t.offset).reshape(t.dims)
        if t.storage == Storage.CONST:
            return np.frombuffer(constants, dtype=dt, count=t.numel, offset=t.offset).reshape(t.dims)
        if t.storage == Storage.INPUT:
            return io_in[t.offset]
        return io_out[t.offset]

    def poison(self, offset: int, size: int) -> None:
        self.arena[offset : offset + size] = bytes([POISON]) * size
