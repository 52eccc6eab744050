"""What the partitioner decided for each operator, and why: data for the report."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class OpDecision:
    node: str  # FX node name in the edge program
    op: str  # e.g. "aten.convolution.default"
    delegated: bool
    reason: str  # why it stays on the CPU ("" when delegated)
    location: str | None = None  # "model.py:42 in forward" when the node carries a stack trace
    partition: int | None = None  # partition index when delegated
    # the decided operators (node names) and program inputs ("input:x") whose values it reads,
    # past quantize/dequantize and getitem: the edges of the report's graph
    inputs: tuple[str, ...] = ()
