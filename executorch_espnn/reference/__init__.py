"""Bit-exact numpy executor of a delegate payload: the device's arithmetic, on the host.

``run_delegate`` decodes the same bytes the device parses (with the same validation),
simulates the device memory literally (see :mod:`.memory`) and runs each op through the
kernel registered for its opcode (one module per op family).  The C engine must produce
exactly these bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from ..payload import decode

# importing the op families registers their kernels
from ..payload.families.conv import reference as _conv  # noqa: F401
from ..payload.families.conv_transpose import reference as _conv_transpose  # noqa: F401
from ..payload.families.elementwise import reference as _elementwise  # noqa: F401
from ..payload.families.fully_connected import reference as _fully_connected  # noqa: F401
from ..payload.families.kernel_registry import KERNELS, OpContext
from ..payload.families.lut import reference as _lut  # noqa: F401
from ..payload.families.matmul import reference as _matmul  # noqa: F401
from ..payload.families.mean import reference as _mean  # noqa: F401
from ..payload.families.movement import reference as _movement  # noqa: F401
from ..payload.families.norm import reference as _norm  # noqa: F401
from ..payload.families.pool import reference as _pool  # noqa: F401
from ..payload.families.prelu import reference as _prelu  # noqa: F401
from ..payload.families.quantize import reference as _quantize  # noqa: F401
from ..payload.families.resize import reference as _resize  # noqa: F401
from ..payload.families.softmax import reference as _softmax  # noqa: F401
from .memory import DeviceMemory

__all__ = ["KERNELS", "Executor", "run_delegate"]


class Executor:
    """One execution of a payload, op by op, over simulated device memory.

    ``run_delegate`` is ``Executor(payload, inputs).run()``.  Stepping with ``run_op`` and
    reading ``tensor(tid)`` (a live view: arena bytes as they are now) lets tests and the
    engine's golden tests look at intermediate tensors.
    """

    def __init__(self, payload: bytes, inputs: Sequence[npt.NDArray[np.generic]]) -> None:
        self.payload = decode(payload)
        self.memory = DeviceMemory(self.payload, list(inputs))
        self.next_op = 0

    def tensor(self, tid: int) -> npt.NDArray[np.generic]:
        return self.memory.views[tid]

    def run_op(self, index: int) -> None:
        p, mem = self.payload, self.memory
        op = p.ops[index]
        if op.scratch_size:
            mem.poison(op.scratch_offset, op.scratch_size)
        ctx = OpContext(
            index=index,
            op=op,
            inputs=tuple(None if t is None else mem.views[t] for t in op.inputs),
            input_recs=tuple(None if t is None else p.tensors[t] for t in op.inputs),
            output=mem.views[op.output],
            output_rec=p.tensors[op.output],
        )
        KERNELS.get(op.opcode)(ctx)

    def run(self, after_op: Callable[[int, Executor], None] | None = None) -> list[npt.NDArray[np.generic]]:
        """Run the remaining ops; ``after_op(index, self)`` sees each op's result before a
        later op may reuse its arena bytes (the accuracy report reads layer outputs so)."""
        while self.next_op < len(self.payload.ops):
            self.run_op(self.next_op)
            if after_op is not None:
                after_op(self.next_op, self)
            self.next_op += 1
        return self.memory.outputs


def run_delegate(payload: bytes, inputs: Sequence[npt.NDArray[np.generic]]) -> list[npt.NDArray[np.generic]]:
    """Execute ``payload`` on ``inputs`` (int8/float32 arrays in the delegate's logical dims).

    Raises ``PayloadError`` for a payload the device would reject and ``DelegateInputError``
    (a ``ValueError``) naming the input whose dtype or shape does not match.
    """
    return Executor(payload, inputs).run()
