"""``OpcodeTable``: opcode -> one function, filled by a decorator when the family modules are
imported.  The validator's checks (``payload/families/<family>/check.py``) and the
reference kernels (``<family>/reference.py``) are each one such table, mirroring the C engine's table of op families."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Generic, TypeVar

from .format import Opcode

F = TypeVar("F", bound=Callable[..., None])


class OpcodeTable(Generic[F]):
    def __init__(self, what: str) -> None:
        self._what = what  # "reference kernel": named in the errors below
        self._fns: dict[Opcode, F] = {}

    def register(self, *opcodes: Opcode) -> Callable[[F], F]:
        """Decorator: ``fn`` handles ``opcodes`` (each opcode once across the table)."""

        def deco(fn: F) -> F:
            for code in opcodes:
                if code in self._fns:
                    raise RuntimeError(f"two {self._what}s for {code.name}")
                self._fns[code] = fn
            return fn

        return deco

    def get(self, opcode: Opcode) -> F:
        try:
            return self._fns[opcode]
        except KeyError:
            raise NotImplementedError(f"no {self._what} for {opcode.name}") from None

    @property
    def by_opcode(self) -> Mapping[Opcode, F]:
        return MappingProxyType(self._fns)
