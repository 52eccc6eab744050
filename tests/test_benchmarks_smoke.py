"""`python benchmarks/run.py --quick` produces every figure, and the figures are sane.

No timing thresholds (the machine is shared): only that each figure was measured and is
consistent with the others (an arena never below its lower bound, instruction counts that
are positive and deterministic enough to compare, ...)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str]:
    work = tmp_path_factory.mktemp("bench")
    out = work / "figures.json"
    md = work / "table.md"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # run.py finds the checkout
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--quick", "--work", str(work / "w"),
         "--json", str(out), "--markdown", str(md)],
        capture_output=True, text=True, timeout=900, env=env, check=False, cwd=str(work),
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert md.read_text().startswith("| model |")
    return json.loads(out.read_text()), proc.stdout


def test_prints_the_summary_and_targets(quick: tuple[dict[str, Any], str]) -> None:
    _, stdout = quick
    assert "Summary" in stdout and "Targets" in stdout
    assert "DS-CNN KWS 49x10" in stdout
    assert "ESP32-S3 fast paths" in stdout  # the per-layer table


def test_ops_memory_and_size_figures(quick: tuple[dict[str, Any], str]) -> None:
    data, _ = quick
    (m,) = data["models"]
    assert m["key"] == "ds_cnn_kws" and not m["errors"], m["errors"]
    assert 0 < m["ops_delegated"] <= m["ops_total"] and m["partitions"] >= 1
    # the arena can never be smaller than the peak of simultaneously live bytes
    assert 0 < m["peak_live_bytes"] <= m["arena_bytes"]
    assert m["arena_ratio_worst"] >= 1.0
    # DS-CNN is one delegate: its program I/O lives in the arena (io_arena), ExecuTorch plans none
    assert m["planned_bytes"] == 0 and m["method_allocator_bytes"] > 0
    assert m["header_ram_bytes"] >= m["arena_bytes"] + m["planned_bytes"]
    cb = m["const_bound"]
    assert cb["layers"] == 10  # 5 convolutions, 4 depthwise, 1 linear
    assert cb["weights"] == 64 * 10 * 4 + 4 * (64 * 9 + 64 * 64) + 12 * 64  # counted from the model
    assert m["const_bound_bytes"] == cb["weights"] + cb["biases"] + cb["requant"] + cb["other"]
    assert m["pte_bytes"] == sum(m["pte_parts"].values())
    assert m["pte_ratio"] > 0.9


def test_instruction_figures(quick: tuple[dict[str, Any], str]) -> None:
    data, _ = quick
    (m,) = data["models"]
    if shutil.which("valgrind") is None:
        assert "valgrind is not installed" in m["errors"].get("callgrind", "")
        pytest.skip("valgrind is not installed")
    assert m["instr_delegate"] > 0 and m["instr_cpu"] > 0
    assert m["instr_ratio"] == pytest.approx(m["instr_delegate"] / m["instr_cpu"])
    assert 0.0 <= m["outside_share"] < 1.0
    assert m["cpu_op_instructions"] == 0  # fully delegated: no CPU operator runs
    assert m["overhead_share"] == pytest.approx(m["outside_share"])
    # the breakdown accounts for every instruction outside the kernels
    assert sum(m["overhead"].values()) == pytest.approx(m["outside_share"] * m["instr_delegate"], abs=2)
    assert m["overhead"]["engine dispatch"] > 0


def test_lowering_and_fast_path_figures(quick: tuple[dict[str, Any], str]) -> None:
    data, _ = quick
    (m,) = data["models"]
    assert set(m["stages"]) == {"export", "quantize", "partition", "to_executorch"}
    assert all(v > 0 for v in m["stages"].values())
    assert set(m["back_half"]) == {"espnn", "xnnpack", "cpu"}
    assert m["lowering_ratio"] > 0
    assert m["fast_share"] == m["fast_share_report"] == 1.0  # every DS-CNN layer qualifies
    assert m["fast_mismatch"] == []


def test_pio_figures(quick: tuple[dict[str, Any], str]) -> None:
    data, _ = quick
    pio = data["pio"]
    assert "error" not in pio, pio.get("error")
    assert pio["example"] == "hello_world"
    assert pio["clean"] > pio["noop"] > 0 and pio["plain_clean"] > pio["plain_noop"] > 0
    assert pio["noop_ratio"] == pytest.approx(pio["noop"] / pio["plain_noop"])


def test_every_target_has_a_verdict(quick: tuple[dict[str, Any], str]) -> None:
    data, _ = quick
    verdicts = {(t["figure"], t["model"]): t["verdict"] for t in data["targets"]}
    assert verdicts[("arena <= 1.01x peak live", "DS-CNN KWS 49x10")].startswith(("met", "MISSED"))
    assert verdicts[(".pte <= 1.05x constants", "DS-CNN KWS 49x10")].startswith(("met", "MISSED"))
    assert data["machine"]["cores"] and data["machine"]["cpu"]
