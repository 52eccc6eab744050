"""A whole lowered program on the host without the C engine: the golden values of the self-test.

``run_program(edge_program, inputs)`` interprets the edge program that
``to_edge_transform_and_lower`` produced, node by node: every ``executorch_call_delegate``
of an ``EspNNDelegateBackend`` runs its payload through :func:`run_delegate` (the bit-exact
numpy reference of the device's arithmetic), every other node (the operators left on the
CPU, the quantize/dequantize at the boundary, getitem) runs as PyTorch's eager kernel.

Nothing of the code under test on the board takes part: neither the C engine nor
ExecuTorch's C++ kernels.  The serialized program ``to_executorch()`` makes from the same edge
program has the same operators and the same delegate payloads (it only adds memory planning
and out-variants), so these are the outputs the firmware must produce.  Where a CPU operator
computes in float, PyTorch's kernel and ExecuTorch's portable kernel on the chip may round
the last bit differently (e.g. another libm ``expf``); the self-test reports that as a
difference instead of hiding it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ..errors import DelegateInputError
from ..pte import BACKEND_ID
from . import Executor

if TYPE_CHECKING:
    import torch
    from torch.export import ExportedProgram


def _is_delegate_call(target: object) -> bool:
    return getattr(target, "__name__", "") == "executorch_call_delegate" or (
        "executorch_call_delegate" in str(target)
    )


def _as_array(x: Any) -> npt.NDArray[np.generic]:
    import torch

    if isinstance(x, torch.Tensor):
        return x.detach().contiguous().numpy()
    raise DelegateInputError(
        f"a delegate argument is a {type(x).__name__}, not a tensor; the reference runs "
        "delegates on tensor inputs only"
    )


#: ``after_op(payload, op index, executor)``: called after each op of each delegate run
OpObserver = Callable[[bytes, int, Executor], None]


def run_program(
    edge_program: ExportedProgram,
    inputs: Sequence[torch.Tensor | npt.NDArray[np.generic]],
    after_op: OpObserver | None = None,
) -> list[npt.NDArray[np.generic]]:
    """The outputs of ``edge_program`` (``EdgeProgramManager.exported_program()``) on the
    program inputs ``inputs``, with every ESP-NN delegate run by the Python reference;
    ``after_op`` sees every delegate op's result (the payload's bytes name the delegate)."""
    return ProgramRunner(edge_program)(inputs, after_op)


class ProgramRunner:
    """``run_program`` for many inputs: the program's module is made once (``module()``
    copies and unlifts the graph, which costs more than running a small model)."""

    def __init__(self, edge_program: ExportedProgram) -> None:
        self.module = edge_program.module()

    def __call__(
        self, inputs: Sequence[torch.Tensor | npt.NDArray[np.generic]], after_op: OpObserver | None = None
    ) -> list[npt.NDArray[np.generic]]:
        import torch

        args = [torch.from_numpy(np.ascontiguousarray(x)) if isinstance(x, np.ndarray) else x for x in inputs]

        class _Interpreter(torch.fx.Interpreter):
            def run_node(self, n: Any) -> Any:
                self._node = n
                return super().run_node(n)

            def call_function(self, target: Any, args: Any, kwargs: Any) -> Any:
                if not _is_delegate_call(target):
                    return super().call_function(target, args, kwargs)
                lowered = args[0]
                backend = getattr(lowered, "backend_id", BACKEND_ID)
                if backend != BACKEND_ID:
                    raise DelegateInputError(
                        f"the program delegates to {backend}; the reference runs {BACKEND_ID} "
                        "delegates only (lower the model with executorch_espnn)"
                    )
                payload = bytes(lowered.processed_bytes)
                ex = Executor(payload, [_as_array(a) for a in args[1:]])
                outs = ex.run(None if after_op is None else lambda i, e: after_op(payload, i, e))
                # an io tensor's dims may be the program tensor's with unit dims moved (the same
                # bytes): hand the program its own shapes
                vals = self._node.meta.get("val")
                shapes = [tuple(getattr(x, "shape", o.shape)) for x, o in zip(vals, outs, strict=True)] \
                    if isinstance(vals, (tuple, list)) and len(vals) == len(outs) else [o.shape for o in outs]
                return tuple(torch.from_numpy(np.ascontiguousarray(o).reshape(s)) for o, s in zip(outs, shapes,
                                                                                                 strict=True))

        with torch.no_grad():
            result = _Interpreter(self.module).run(*args)
        flat = list(result) if isinstance(result, (tuple, list)) else [result]
        return [_as_array(y).copy() for y in flat]
