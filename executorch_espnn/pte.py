"""Read delegate payloads back out of a ``.pte`` with ExecuTorch's own deserialiser."""

from __future__ import annotations

from typing import Any

from .errors import PteError

BACKEND_ID = "EspNNDelegateBackend"


def _program(pte: bytes) -> Any:
    data = bytes(pte)
    # A .pte is a flatbuffer whose file identifier (bytes 4..8) is "ET" + a 2-digit version.
    if len(data) < 8 or data[4:6] != b"ET":
        raise PteError(
            f"not an ExecuTorch program: {len(data)} bytes without the 'ET..' file identifier at offset 4 "
            "(expected a .pte written by to_executorch().buffer)"
        )
    from executorch.exir._serialize._program import deserialize_pte_binary

    try:
        program = deserialize_pte_binary(data).program
    except Exception as e:
        raise PteError(f"the .pte could not be parsed ({type(e).__name__}: {e}); is it truncated or corrupt?") from None
    if not program.execution_plan:
        raise PteError("the .pte contains no methods; is it truncated or corrupt?")
    return program


def backend_ids(pte: bytes) -> list[str]:
    """The backend id of every delegate of every method, in program order."""
    program = _program(pte)
    return [d.id for plan in program.execution_plan or [] for d in plan.delegates or []]


def delegate_payloads(pte: bytes) -> list[bytes]:
    """The payload of every ``EspNNDelegateBackend`` delegate, in program order."""
    program = _program(pte)
    out: list[bytes] = []
    for plan in program.execution_plan or []:
        for d in plan.delegates or []:
            if d.id != BACKEND_ID:
                continue
            ref = d.processed
            if int(ref.location) != 0:  # deserialize_pte_binary inlines segment data
                raise PteError(f"delegate payload of {plan.name} is not inline after deserialisation")
            if not 0 <= ref.index < len(program.backend_delegate_data):
                raise PteError(f"delegate of {plan.name} points at missing data {ref.index}")
            out.append(bytes(program.backend_delegate_data[ref.index].data))
    if not out:
        ids = sorted(set(backend_ids(pte)))
        found = f"its delegates are {ids}" if ids else "it has no delegates at all"
        raise PteError(
            f"the .pte contains no {BACKEND_ID} delegate ({found}); lower the model with "
            "EspNNPartitioner (executorch_espnn.lower) to get one"
        )
    return out
