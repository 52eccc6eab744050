"""Fixtures shared by the hardening tests: real programs lowered once per session."""

from __future__ import annotations

from pathlib import Path

import pytest


def _lower(name: str, out: Path) -> Path:
    from devkit.lowered_zoo import lowered_zoo

    low = lowered_zoo(name)
    return low.save(out / f"{name}.pte")


@pytest.fixture(scope="session")
def island_pte(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """IslandNet: two delegates (convolutions with ESP-NN scratch) around a CPU island."""
    return _lower("island_net", tmp_path_factory.mktemp("lowered"))


@pytest.fixture(scope="session")
def cumsum_pte(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """CumsumNet: fully connected delegates around a CPU cumsum."""
    return _lower("cumsum_net", tmp_path_factory.mktemp("lowered"))
