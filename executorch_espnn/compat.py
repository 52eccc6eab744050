"""Which ExecuTorch, torch and torchao releases this package works with, and the check at import.

The lowering writes ExecuTorch programs and a delegate payload whose meaning depends on the
exact ExecuTorch release: its exporter, its quantized-ops library, its schema (the runtime the
firmware compiles comes from the same release's sources).  A different release may lower
without an error and still give a program the runtime refuses, or different numbers, so the
package refuses to be imported beside one (docs/compatibility.md).

This module is the Python home of the supported releases; ``pyproject.toml``'s dependencies,
the builder's copies (it runs in PlatformIO's Python, which need not have this package) and
the component's CMake default are checked against it by tests/test_compat.py.

The check reads installed distributions' metadata only (no torch import), so ``import
executorch_espnn`` stays cheap.  ``EXECUTORCH_ESPNN_SKIP_VERSION_CHECK=1`` turns the error
into a warning, for someone trying a new ExecuTorch release on purpose.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata

from .version import __version__

SKIP_ENV = "EXECUTORCH_ESPNN_SKIP_VERSION_CHECK"


@dataclass(frozen=True)
class Supported:
    """One dependency's supported releases: ``lowest`` <= version < ``below``, by release
    numbers (local tags such as ``+cpu`` are ignored)."""

    distribution: str
    lowest: str
    below: str
    requirement: str  # as pip takes it, and as pyproject.toml lists it

    def accepts(self, version: str) -> bool:
        v = release(version)
        return release(self.lowest) <= v < release(self.below)


# One line each; pyproject.toml's [project] dependencies say the same (checked by a test).
EXECUTORCH = Supported("executorch", "1.5.1", "1.5.2", "executorch==1.5.1")
TORCH = Supported("torch", "2.13.0", "2.13.1", "torch==2.13.0")
TORCHAO = Supported("torchao", "0.18", "0.19", "torchao>=0.18,<0.19")
SUPPORTED = (EXECUTORCH, TORCH, TORCHAO)


class IncompatibleVersionError(ImportError):
    """An installed dependency is a release this package does not support."""


def release(version: str) -> tuple[int, ...]:
    """The leading numeric release of a version string: "1.5.1+cpu" -> (1, 5, 1),
    "0.18.0.dev20260101" -> (0, 18, 0), "2.13" -> (2, 13, 0)."""
    parts: list[int] = []
    for piece in version.split("+", 1)[0].split("."):
        digits = ""
        for ch in piece:
            if not ch.isdigit():
                break
            digits += ch
        if not digits:
            break
        parts.append(int(digits))
        if len(digits) != len(piece):  # "0rc1": the release ends inside this piece
            break
    while len(parts) < 3:
        parts.append(0)
    return tuple(parts)


def mismatch_message(dep: Supported, found: str) -> str:
    """The one message for a dependency of the wrong release: both versions and the fix."""
    return (
        f"executorch-espnn {__version__} supports {dep.distribution} {dep.requirement[len(dep.distribution):]}"
        f", but {dep.distribution} {found} is installed. Install the supported release "
        f'(pip install "{dep.requirement}") or an executorch-espnn release made for '
        f"{dep.distribution} {found} (docs/compatibility.md lists which goes with which); "
        f"{SKIP_ENV}=1 imports anyway, with a warning"
    )


VersionLookup = Callable[[str], str]


def check(lookup: VersionLookup = metadata.version, env: dict[str, str] | None = None) -> list[str]:
    """Compare the installed releases with SUPPORTED.  A dependency that is not installed is
    not this check's business (the payload tools need none of them; the lowering says what to
    install when it imports them).  Raises IncompatibleVersionError for the first mismatch
    unless SKIP_ENV is set, in which case it warns; returns the mismatch messages."""
    environ = os.environ if env is None else env
    problems: list[str] = []
    for dep in SUPPORTED:
        try:
            found = lookup(dep.distribution)
        except metadata.PackageNotFoundError:
            continue
        if not dep.accepts(found):
            problems.append(mismatch_message(dep, found))
    if problems and environ.get(SKIP_ENV, "") not in ("", "0"):
        for text in problems:
            warnings.warn(text, RuntimeWarning, stacklevel=2)
    elif problems:
        raise IncompatibleVersionError("\n".join(problems))
    return problems
