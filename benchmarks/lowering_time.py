"""Lowering time: our four stages, and the back half against XNNPACK on the same program.

``executorch_espnn.lower()`` reports its stages (export, quantize + calibrate, partition +
preprocess, to_executorch).  The first two are the same work whatever backend follows, so the
comparison lowers *the same quantized program* through ``to_edge_transform_and_lower`` +
``to_executorch`` three ways, alternating, in this process:

* with ``EspNNPartitioner`` (what ``lower()`` does in its stages 3 and 4),
* with ExecuTorch's ``XnnpackPartitioner``,
* with no partitioner at all (every operator on ExecuTorch's CPU kernels): the program that
  the callgrind comparison runs as (b).

Each gets a fresh deep copy of the program; the best of ``rounds`` is kept (the machine is
shared, so the minimum is the least disturbed measurement).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torch.export import ExportedProgram


@dataclass(frozen=True)
class BackHalf:
    """Seconds of to_edge_transform_and_lower and of to_executorch, and the .pte."""

    partition: float
    to_executorch: float
    pte: bytes

    @property
    def total(self) -> float:
        return self.partition + self.to_executorch


def _espnn(target: str) -> list[Any]:
    from executorch_espnn.partitioner import EspNNPartitioner

    return [EspNNPartitioner(target=target, allow_cpu_fallback=True)]


def _xnnpack(_target: str) -> list[Any]:
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner

    return [XnnpackPartitioner()]


def _cpu(_target: str) -> list[Any]:
    return []


FLOWS: dict[str, Callable[[str], list[Any]]] = {"espnn": _espnn, "xnnpack": _xnnpack, "cpu": _cpu}


def back_half(qep: ExportedProgram, flow: str, target: str = "esp32s3") -> BackHalf:
    import executorch.kernels.quantized  # noqa: F401  (q/dq out variants for to_executorch)
    from executorch.exir import to_edge_transform_and_lower

    import executorch_espnn.backend  # noqa: F401  (registers our backend by class name)

    program = copy.deepcopy(qep)
    partitioners = FLOWS[flow](target)
    t0 = time.perf_counter()
    edge = to_edge_transform_and_lower(program, partitioner=partitioners or None)
    t1 = time.perf_counter()
    pte = bytes(edge.to_executorch().buffer)
    t2 = time.perf_counter()
    return BackHalf(t1 - t0, t2 - t1, pte)


def compare(qep: ExportedProgram, target: str, rounds: int = 1) -> dict[str, BackHalf]:
    """The best of ``rounds`` for every flow, run in alternation."""
    best: dict[str, BackHalf] = {}
    for _ in range(max(1, rounds)):
        for flow in FLOWS:
            r = back_half(qep, flow, target)
            if flow not in best or r.total < best[flow].total:
                best[flow] = r
    return best


def warm_up(target: str) -> None:
    """Import and run every flow once on a tiny model, so no measurement pays for imports."""
    import torch

    import executorch_espnn as ee

    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(), torch.nn.Flatten(),
                                torch.nn.Linear(8 * 6 * 6, 4)).eval()
    g = torch.Generator().manual_seed(0)
    x = torch.randn(1, 3, 8, 8, generator=g)
    lm = ee.lower(model, (x,), [(torch.randn(1, 3, 8, 8, generator=g),) for _ in range(2)], target=target)
    assert lm.quantized_program is not None
    compare(lm.quantized_program, target, rounds=1)
