"""Accuracy on the user's validation data at build time (``lower(..., validation=...)``,
``--validation``, ``custom_executorch_validation``): per output, the float model vs the PT2E
quantized model vs the delegate's exact int8 result (top-1 accuracy with labels, top-1
agreement, SQNR, LSB histogram), and each delegated layer's error, worst first.

Split by job: ``metrics`` (the figures, numpy), ``layers`` (which value each delegated layer
computes in each model), ``evaluate`` (running the three models), ``records`` (the results and
their JSON form).
"""

from __future__ import annotations

from .evaluate import evaluate
from .records import AccuracyReport, Comparison, LayerError, OutputAccuracy

__all__ = ["AccuracyReport", "Comparison", "LayerError", "OutputAccuracy", "evaluate"]
