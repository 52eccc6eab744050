"""executorch-espnn: lower PyTorch models to ExecuTorch with an ESP-NN delegate for ESP32.

The public names are imported lazily so that ``import executorch_espnn`` stays cheap
(the payload tools and the CLI's argument parsing do not need torch).  Importing it beside an
ExecuTorch, torch or torchao release it does not support is an error (compat.py,
docs/compatibility.md).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from . import compat
from .version import __version__

compat.check()

if TYPE_CHECKING:
    from .backend import EspNNDelegateBackend
    from .lowering import LoweredModel, lower
    from .partitioner import EspNNPartitioner
    from .quantizer import EspNNQuantizer
    from .report import LoweringReport

_LAZY = {
    "EspNNQuantizer": "quantizer",
    "EspNNPartitioner": "partitioner",
    "EspNNDelegateBackend": "backend",
    "lower": "lowering",
    "LoweredModel": "lowering",
    "LoweringReport": "report",
}

__all__ = [
    "EspNNDelegateBackend",
    "EspNNPartitioner",
    "EspNNQuantizer",
    "LoweredModel",
    "LoweringReport",
    "__version__",
    "lower",
]


def __getattr__(name: str) -> Any:
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'executorch_espnn' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{mod}", __name__), name)
    globals()[name] = value
    return value
