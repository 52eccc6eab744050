"""Where a node comes from in the user's code ("model.py:42 in forward"), for the report."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from torch.fx import Node


def _package_dirs() -> tuple[str, ...]:
    dirs = []
    for mod in ("torch", "torchao", "executorch"):
        try:
            m = __import__(mod)
        except ImportError:  # pragma: no cover - all three are dependencies
            continue
        f = getattr(m, "__file__", None)
        if f:
            dirs.append(str(Path(f).resolve().parent) + "/")
    return tuple(dirs)


_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')


def source_location(node: Node, skip_dirs: Iterable[str] | None = None) -> str | None:
    """"model.py:42 in forward" for the innermost user frame of the node's stack trace."""
    trace = node.meta.get("stack_trace")
    if not isinstance(trace, str) or not trace:
        return None
    frames = _FRAME.findall(trace)
    if not frames:
        return None
    skips = tuple(skip_dirs) if skip_dirs is not None else _package_dirs()
    for f in reversed(frames):
        try:
            resolved = str(Path(f[0]).resolve())
        except OSError:  # pragma: no cover
            resolved = f[0]
        if not resolved.startswith(skips):
            return f"{Path(f[0]).name}:{f[1]} in {f[2]}"
    # only library frames (an nn.Sequential of stock modules): name the module too
    chosen = frames[-1]
    where = f"{Path(chosen[0]).name}:{chosen[1]} in {chosen[2]}"
    stack = node.meta.get("nn_module_stack")
    if isinstance(stack, dict) and stack:
        path, kind = list(stack.values())[-1]
        kind_name = getattr(kind, "__name__", None) or str(kind).rsplit(".", 1)[-1].strip("'>")
        if path:
            where += f" (module {path}: {kind_name})"
    return where
