"""The accuracy report's records and their JSON form (``report.json``'s ``accuracy`` key).

Three models are compared on the validation samples: ``float`` (the exported float program),
``pt2e`` (the quantized program convert_pt2e made: PyTorch's simulation of int8) and
``delegate`` (the lowered program with every ESP-NN delegate run by the bit-exact Python
reference, executorch_espnn.reference: the chip's int8 result).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

MODELS = ("float", "pt2e", "delegate")
TITLES = {"float": "float", "pt2e": "PT2E", "delegate": "ESP-NN"}


def json_db(db: float | None) -> float | str | None:
    """A dB figure for JSON, which has no infinity: ``"inf"`` for no error at all."""
    if db is None or math.isfinite(db):
        return None if db is None else round(db, 3)
    return "inf" if db > 0 else "-inf"


@dataclass(frozen=True)
class Comparison:
    """One model against another on one output, over every sample."""

    test: str  # one of MODELS
    reference: str
    top1_agreement: float  # share of samples whose arg-max is the same
    sqnr_db: float  # inf: identical

    def to_dict(self) -> dict[str, Any]:
        return {"test": self.test, "reference": self.reference,
                "top1_agreement": self.top1_agreement, "sqnr_db": json_db(self.sqnr_db)}


@dataclass(frozen=True)
class OutputAccuracy:
    name: str
    shape: tuple[int, ...]
    scale: float | None  # the int8 grid the LSB histogram is counted on (None: no grid)
    zero_point: int | None
    top1_accuracy: dict[str, float]  # model -> share of samples whose arg-max is the label; {} without labels
    comparisons: tuple[Comparison, ...]
    lsb_histogram: dict[int, int] | None  # ESP-NN - PT2E in LSB -> elements; None without a grid

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "shape": list(self.shape), "scale": self.scale,
                "zero_point": self.zero_point, "top1_accuracy": dict(self.top1_accuracy),
                "comparisons": [c.to_dict() for c in self.comparisons],
                "lsb_histogram": (None if self.lsb_histogram is None
                                  else {str(k): v for k, v in self.lsb_histogram.items()})}


@dataclass(frozen=True)
class LayerError:
    """One delegated layer's int8 output (the chip's bits) against the same value in the float
    model and in the PT2E model, over every sample."""

    partition: int
    op: int  # op index in the payload
    opcode: str  # "CONV2D"
    node: str  # the float model's node whose value the layer computes ("relu", "linear_1")
    location: str | None  # "model.py:42 in forward"
    shape: tuple[int, ...]
    sqnr_db: float | None  # ESP-NN vs float; None without a float model
    pt2e_sqnr_db: float | None  # PT2E vs float at the same value: what quantization alone costs
    max_lsb: int  # largest |ESP-NN - PT2E| on the layer's int8 grid
    off_share: float  # share of elements where ESP-NN and PT2E differ

    def to_dict(self) -> dict[str, Any]:
        return {"partition": self.partition, "op": self.op, "opcode": self.opcode, "node": self.node,
                "location": self.location, "shape": list(self.shape), "sqnr_db": json_db(self.sqnr_db),
                "pt2e_sqnr_db": json_db(self.pt2e_sqnr_db), "max_lsb": self.max_lsb,
                "off_share": self.off_share}


@dataclass(frozen=True)
class AccuracyReport:
    source: str  # "validation file val.npz", "validation data"
    n_samples: int
    labelled: bool
    has_float: bool  # False for an already quantized model (no float model to compare with)
    outputs: tuple[OutputAccuracy, ...]
    layers: tuple[LayerError, ...]  # worst first
    notes: tuple[str, ...] = ()  # what could not be measured, and why
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "n_samples": self.n_samples, "labelled": self.labelled,
                "has_float": self.has_float, "outputs": [o.to_dict() for o in self.outputs],
                "layers": [la.to_dict() for la in self.layers], "notes": list(self.notes),
                "seconds": self.seconds}
