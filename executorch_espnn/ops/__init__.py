"""Per-operator lowering registry.

Each operator family lives in one module of this package and registers one
``OpLowering`` subclass (``ops.base``) per group of edge targets with ``@register``.  A
lowering knows three things about its operator:

* which arguments are quantized activations and which are constants
  (``activation_args`` / ``weight_nodes``), so the generic matcher
  ``executorch_espnn.units.match_unit`` can collect the dequantize/quantize nodes around it
  into one ``Unit``;
* whether a clamp-like activation after it folds into its output range
  (``fuses_activation``);
* how to write the unit into a payload (``lower``), raising ``Unsupported`` with a
  reason whenever a value or shape is outside what the engine executes.

The partitioner decides with the very same code: it lowers each candidate unit on
its own and validates the ops it produced with the payload validator, so a node
that would fail preprocess is refused with a reason instead.

A new operator that lowers onto existing payload ops is one class in a family module (a
new family module is also imported below), plus its quantizer annotation, tests and the
operator table.  A new payload opcode touches more: the payload spec, the generated C tables,
a C op family, its state size, a reference kernel, a validator check, golden cases, tests and
docs.  ``docs/adding-an-operator.md`` lists every file, in order.
"""

from __future__ import annotations

from ..unsupported import Unsupported

# importing the family modules registers their lowerings (``@register``)
from . import (  # noqa: F401
    activation,
    conv,
    elementwise,
    linear,
    matmul,
    movement,
    norm,
    pool,
    prelu,
    resize,
    softmax,
)
from .base import _CLASSES, OpLowering, Registry, Unit, register

__all__ = ["OpLowering", "Registry", "Unit", "Unsupported", "build_registry", "register"]


def build_registry() -> Registry:
    """One instance of every registered lowering, by target (two claiming one target is a bug)."""
    table: dict[str, OpLowering] = {}
    for cls in _CLASSES:
        inst = cls()
        for t in cls.targets:
            if t in table:
                raise RuntimeError(f"two lowerings claim {t}: {type(table[t]).__name__} and {cls.__name__}")
            table[t] = inst
    return Registry(table)
