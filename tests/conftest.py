"""Shared pytest configuration.  Area-specific fixtures live in tests/<area>_helpers.py."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run from a checkout without an editable install
    sys.path.insert(0, str(ROOT))


# The test files that take longest on two workers (seconds of one worker, measured with
# --durations on a full run), heaviest first.  scripts/test.sh hands files to the workers in
# collection order (--dist loadfile --no-loadscope-reorder), so starting these first lets the
# hundreds of quick tests fill in at the end instead of one long file running alone there.
# A stale or missing entry costs only balance, never a result.
HEAVY_FIRST = (
    "test_platformio_esp.py", "test_recurrent.py", "test_ops_lowering.py", "test_backend_suite.py",
    "test_wheel.py", "test_scratch_guard.py", "test_partitioner.py", "test_model_partition_pio.py",
    "test_host_runtime.py", "test_emulated.py", "test_platformio_examples.py", "test_platformio_model.py",
    "test_fuzz.py", "test_trained_digits.py", "test_models_prelu_seg_decoder.py", "test_benchmarks_smoke.py",
    "test_esp32s3.py", "test_several_models.py", "test_int8_io.py", "test_arch_blocks.py", "test_input_layout.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(HEAVY_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: a file keeps its order
