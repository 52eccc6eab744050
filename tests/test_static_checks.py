"""The package stays lint-clean (ruff) and fully typed (mypy --strict), as the style asks;
run here so a regression fails CI instead of waiting for someone to run the tools."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600, check=False)


def test_ruff_clean() -> None:
    proc = _run(["ruff", "check", "--no-cache", "executorch_espnn", "devkit", "benchmarks", "tests"], ROOT)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]


@pytest.mark.slow
def test_mypy_strict_clean(tmp_path: Path) -> None:
    # pyproject's [tool.mypy] names the package and strict mode; the cache goes to tmp_path so
    # the checkout stays clean
    proc = _run(["mypy", "--cache-dir", str(tmp_path / "mypy-cache")], ROOT)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    assert "Success" in proc.stdout
