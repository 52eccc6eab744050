"""Kernel registry of the reference executor: one kernel per opcode, registered by decorator
(``@kernel``, an ``OpcodeTable`` like the validator's checks).

A kernel receives an :class:`OpContext` whose arrays are views into the simulated device
memory (arena, constants, delegate inputs/outputs) and writes its result into
``ctx.output``.  Kernels compute the whole result before they assign it, so an op whose
output shares its input's bytes (the in-place ops of the format) behaves as on the device.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ..errors import PayloadError
from ..model import OpRec, TensorRec
from ..opcode_table import OpcodeTable


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


KERNELS: OpcodeTable[Kernel] = OpcodeTable("reference kernel")
kernel = KERNELS.register
