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

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ..errors import DelegateInputError
from ..pte import BACKEND_ID
from . import run_delegate

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


def run_program(
    edge_program: ExportedProgram, inputs: Sequence[torch.Tensor | npt.NDArray[np.generic]]
) -> list[npt.NDArray[np.generic]]:
    """The outputs of ``edge_program`` (``EdgeProgramManager.exported_program()``) on the
    program inputs ``inputs``, with every ESP-NN delegate run by the Python reference."""
    import torch

    module = edge_program.module()
    args = [torch.from_numpy(np.ascontiguousarray(x)) if isinstance(x, np.ndarray) else x for x in inputs]

    class _Interpreter(torch.fx.Interpreter):
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
            outs = run_delegate(bytes(lowered.processed_bytes), [_as_array(a) for a in args[1:]])
            return tuple(torch.from_numpy(np.ascontiguousarray(o)) for o in outs)

    with torch.no_grad():
        result = _Interpreter(module).run(*args)
    flat = list(result) if isinstance(result, (tuple, list)) else [result]
    return [_as_array(y).copy() for y in flat]
