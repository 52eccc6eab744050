"""Which config applies to a node: module name > module type > global.

The owning modules of a node come from the ``nn_module_stack`` metadata torch.export
records (outermost first).  For names, the innermost module whose qualified name was
given to ``set_module_name`` wins (so ``"features.3"`` overrides ``"features"``); for
types, the innermost module whose exact class was given to ``set_module_type``.
A ``None`` config means "leave float".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from torch import nn
from torch.fx import Node

from .config import EspNNQuantizationConfig


def _normalize_path(path: str) -> str:
    # Older capture paths spell the root as L['self'] / L__self__.
    for prefix in ("L['self'].", "L__self___"):
        if path.startswith(prefix):
            return path[len(prefix):]
    return "" if path in ("L['self']", "L__self__") else path


def _type_name(tp: object) -> str:
    if isinstance(tp, type):
        return f"{tp.__module__}.{tp.__qualname__}"
    return str(tp)


def module_stack(node: Node) -> list[tuple[str, str]]:
    """(qualified module name, fully qualified class name), outermost first."""
    stack = node.meta.get("nn_module_stack") or {}
    return [(_normalize_path(str(path)), _type_name(tp)) for path, tp in stack.values()]


@dataclass(frozen=True)
class ConfigScope:
    """An immutable snapshot of the quantizer's global/type/name settings."""

    global_config: EspNNQuantizationConfig | None
    by_type: Mapping[type[nn.Module], EspNNQuantizationConfig | None] = field(default_factory=dict)
    by_name: Mapping[str, EspNNQuantizationConfig | None] = field(default_factory=dict)

    def config_for(self, node: Node) -> EspNNQuantizationConfig | None:
        stack = module_stack(node)
        for path, _ in reversed(stack):
            if path in self.by_name:
                return self.by_name[path]
        type_names = {_type_name(tp): cfg for tp, cfg in self.by_type.items()}
        for _, tp_name in reversed(stack):
            if tp_name in type_names:
                return type_names[tp_name]
        return self.global_config
