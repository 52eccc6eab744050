"""What a lowering produced: delegated and CPU operators, partitions, memory, fast paths.

Every figure is derived from the bytes of the ``.pte`` (the program's memory plan, its
operator table and instructions) and from decoding each delegate payload with
``executorch_espnn.payload.decode``; the partitioner's decision records only add what the
bytes cannot tell (the reason an operator stayed on the CPU and its source location).
A ready ``.pte`` is reported on the same way, without those records.

Split by job: ``records`` (the dataclasses and their JSON form), ``analysis`` (the figures, from
the program and its payloads), ``text`` (report.txt).
"""

from __future__ import annotations

from .analysis import DW_MAX_SPAN, UNCALIBRATED_WARNING, analyse_payload, arena_peak, build_report
from .records import (
    REPORT_SCHEMA,
    FastPathLayer,
    LoweringReport,
    OpEntry,
    PartitionReport,
    TensorSpec,
)

__all__ = [
    "DW_MAX_SPAN",
    "REPORT_SCHEMA",
    "UNCALIBRATED_WARNING",
    "FastPathLayer",
    "LoweringReport",
    "OpEntry",
    "PartitionReport",
    "TensorSpec",
    "analyse_payload",
    "arena_peak",
    "build_report",
]
