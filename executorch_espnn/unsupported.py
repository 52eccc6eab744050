"""``Unsupported``: why a node (group) stays on the CPU.

Raised by every layer of the lowering (reading the graph, building a payload, an operator's
lowering) and caught by the partitioner, which records the reason; a leaf module, so that
each of those layers can raise it without importing the others.
"""

from __future__ import annotations


class Unsupported(Exception):
    """The node (group) stays on the CPU; ``reason`` says why, in words a user can act on."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
