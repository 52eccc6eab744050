"""Kernel registry of the reference executor: one kernel per opcode, registered by decorator.

A kernel receives an :class:`OpContext` whose arrays are views into the simulated device
memory (arena, constants, delegate inputs/outputs) and writes its result into
``ctx.output``.  Kernels compute the whole result before they assign it, so an op whose
output shares its input's bytes (the in-place ops of the format) behaves as on the device.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
import numpy.typing as npt

from ..payload import Opcode, OpRec, PayloadError, TensorRec


@dataclass(frozen=True)
class OpContext:
    """One op bound to the simulated memory."""

    index: int  # position in the op list, for error messages
    op: OpRec
    inputs: tuple[npt.NDArray[np.generic] | None, ...]  # physical dims, None: absent optional
    input_recs: tuple[TensorRec | None, ...]
    output: npt.NDArray[np.generic]
    output_rec: TensorRec

    def param(self, name: str) -> int:
        return self.op.params[name]

    def x(self, slot: int) -> npt.NDArray[np.generic]:
        """The array of a required input slot."""
        arr = self.inputs[slot]
        if arr is None:  # the validator rejects this; guard the type anyway
            raise self.error(f"inputs[{slot}]", "required input is absent")
        return arr

    def rec(self, slot: int) -> TensorRec:
        r = self.input_recs[slot]
        if r is None:
            raise self.error(f"inputs[{slot}]", "required input is absent")
        return r

    def perm(self, rank: int) -> tuple[int, ...]:
        return tuple(self.param(f"perm{i}") for i in range(rank))

    def error(self, field: str, message: str) -> PayloadError:
        return PayloadError(field, message, op=self.index)


Kernel = Callable[[OpContext], None]


class KernelRegistry:
    """Opcode -> kernel.  Filled once, at import of the op-family modules."""

    def __init__(self) -> None:
        self._kernels: dict[Opcode, Kernel] = {}

    def register(self, *opcodes: Opcode) -> Callable[[Kernel], Kernel]:
        def deco(fn: Kernel) -> Kernel:
            for code in opcodes:
                if code in self._kernels:
                    raise RuntimeError(f"two reference kernels for {code.name}")
                self._kernels[code] = fn
            return fn

        return deco

    def get(self, opcode: Opcode) -> Kernel:
        try:
            return self._kernels[opcode]
        except KeyError:
            raise NotImplementedError(f"no reference kernel for {opcode.name}") from None

    @property
    def kernels(self) -> Mapping[Opcode, Kernel]:
        return MappingProxyType(self._kernels)


KERNELS = KernelRegistry()
kernel = KERNELS.register
