"""Package and format versions, stamped into payloads and generated headers."""

from __future__ import annotations

__version__ = "0.1.0"


def version_tuple() -> tuple[int, int, int]:
    major, minor, patch = (int(p) for p in __version__.split(".")[:3])
    return major, minor, patch
