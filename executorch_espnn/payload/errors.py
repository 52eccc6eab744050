"""Errors raised while encoding or decoding a payload."""

from __future__ import annotations


class PayloadError(ValueError):
    """A payload field violates the format.  ``field`` names it, as the C engine's log does."""

    def __init__(self, field: str, message: str, *, op: int | None = None, tensor: int | None = None) -> None:
        self.field = field
        self.op = op
        self.tensor = tensor
        where = []
        if op is not None:
            where.append(f"op {op}")
        if tensor is not None:
            where.append(f"tensor {tensor}")
        prefix = f"{' '.join(where)}: " if where else ""
        super().__init__(f"payload invalid: {prefix}field '{field}': {message}")
