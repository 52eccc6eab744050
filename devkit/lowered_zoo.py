"""Zoo models lowered once per test session.

Lowering a whole network is the slowest step of the suite (tens of seconds for MobileNetV2),
and several test files need the same lowered programs; they share them through this cache.
The lowered objects are read-only by convention: tests must not mutate them.
"""

from __future__ import annotations

import functools

import executorch_espnn as ee
from devkit.zoo import ZOO
from executorch_espnn.lowering import LoweredModel


@functools.cache
def lowered_zoo(name: str, target: str = "esp32s3", calibration_batches: int = 8) -> LoweredModel:
    z = ZOO[name]
    return ee.lower(z.model(), z.example_inputs(), calibration=z.calibration_data(calibration_batches),
                    target=target)
