"""ExecuTorch's own backend operator suite (from the executorch wheel, unmodified) against
EspNNDelegateBackend: a bounded selection that covers every operator family we delegate,
run in a subprocess exactly as docs/backend-suite.md describes; plus fast unit tests of the
pass criterion and of the results reader.  scripts/run_backend_suite.sh runs everything."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from executorch_espnn.testing import report
from executorch_espnn.testing.compare import OutputQuant, check_output, check_outputs

ROOT = Path(__file__).resolve().parents[1]
FLOW = "espnn"
SELECTION_TIMEOUT_S = 900

# --------------------------------------------------------------------------- the criterion


def _grid(q: list[int], scale: float, zp: int) -> torch.Tensor:
    """Float32 values of int8 codes, as a dequantize produces them."""
    return ((torch.tensor(q, dtype=torch.float32) - zp) * torch.tensor(scale, dtype=torch.float32)).float()


def test_int8_output_within_one_lsb_passes() -> None:
    ref = _grid([-128, -3, 0, 5, 127], 0.037, -2)
    act = _grid([-127, -3, 1, 4, 127], 0.037, -2)
    c = check_output(0, act, ref, OutputQuant(0.037, -2))
    assert c.ok, c.problem
    assert (c.kind, c.max_lsb, c.beyond) == ("int8", 1, 0)


def test_int8_output_two_lsb_off_fails_naming_the_element() -> None:
    ref = _grid([10, 20, 30, 40], 0.5, 0)
    act = _grid([10, 22, 30, 39], 0.5, 0)
    c = check_output(3, act, ref, OutputQuant(0.5, 0))
    assert not c.ok
    assert c.max_lsb == 2 and c.beyond == 1
    assert "output 3" in c.problem and "flat index 1" in c.problem and "2 LSB" in c.problem


def test_int8_output_off_the_grid_fails() -> None:
    ref = _grid([1, 2, 3], 0.25, 0)
    act = ref + 0.1  # not a whole number of steps: not what a dequantize can produce
    c = check_output(0, act, ref, OutputQuant(0.25, 0))
    assert not c.ok and "not on the int8 grid" in c.problem


def test_top1_checked_only_where_the_reference_has_a_clear_winner() -> None:
    scale, zp = 0.1, 0
    # row 0: winner leads by 5 steps, delegate moves it by 1 and the runner-up by 1: same top-1
    # row 1: lead of 1 step: a 1-LSB swap is legitimate and not checked
    ref = _grid([50, 45, 0, 30, 29, 0], scale, zp).reshape(2, 3)
    act = _grid([49, 46, 0, 29, 30, 0], scale, zp).reshape(2, 3)
    c = check_output(0, act, ref, OutputQuant(scale, zp))
    assert c.ok, c.problem
    assert (c.top1_rows, c.top1_mismatches) == (1, 0)


def test_top1_mismatch_with_a_clear_winner_fails() -> None:
    ref = _grid([50, 40, 0], 0.1, 0).reshape(1, 3)
    act = _grid([50, 40, 0], 0.1, 0).reshape(1, 3)
    act[0, 2] = 60 * 0.1  # also beyond 1 LSB; the top-1 verdict is reported separately
    c = check_output(0, act, ref, OutputQuant(0.1, 0))
    assert not c.ok and "top-1 differs in 1 of 1 rows" in c.problem


def test_softmax_output_top1_along_its_axis() -> None:
    ref = _grid([-128, 100, 50, 0, -128, -128], 1 / 256, -128).reshape(3, 2)
    c = check_output(0, ref.clone(), ref, OutputQuant(1 / 256, -128, softmax_dim=0))
    assert c.ok and c.top1_rows == 2  # along dim 0 there are two columns of three rows


def test_float_output_tolerance_is_float32_rounding_not_quantization() -> None:
    ref = torch.tensor([1.0, -2.0, 1000.0])
    assert check_output(0, ref * (1 + 2e-7), ref, OutputQuant(None, None)).ok
    c = check_output(0, ref + torch.tensor([0.0, 0.0, 0.5]), ref, OutputQuant(None, None))
    assert not c.ok and "1 of 3" in c.problem


def test_integer_outputs_compare_exactly() -> None:
    ref = torch.tensor([3, 1, 2])
    assert check_output(0, ref.clone(), ref, OutputQuant(None, None)).ok
    c = check_output(0, torch.tensor([3, 1, 0]), ref, OutputQuant(None, None))
    assert not c.ok and c.kind == "exact"


def test_shape_and_count_mismatches_are_failures() -> None:
    c = check_output(0, torch.zeros(2, 3), torch.zeros(3, 2), OutputQuant(0.1, 0))
    assert not c.ok and "shape" in c.problem
    with pytest.raises(AssertionError, match="2 outputs, the reference 1"):
        check_outputs([torch.zeros(1), torch.zeros(1)], [torch.zeros(1)], [OutputQuant(None, None)])


# --------------------------------------------------------------------------- the results reader


def _write_jsonl(path: Path, docs: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    return path


def _test_doc(name: str, category: str, file: str = "test_conv2d.py") -> dict[str, object]:
    return {"kind": "test", "nodeid": f"{file}::{name}", "file": file, "name": name, "flow": FLOW,
            "outcome": "passed", "category": category, "message": "", "duration_s": 1.0, "subtests": []}


def test_results_reader_reports_a_crashed_test(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "r.jsonl", [
        {"kind": "session", "version": 1, "target": "esp32s3", "seed": 0},
        {"kind": "start", "nodeid": "test_conv2d.py::test_a[espnn]"},
        _test_doc("test_a[espnn]", "delegated"),
        {"kind": "start", "nodeid": "test_conv2d.py::test_b[espnn]"},
    ])
    run = report.load(path)
    assert not run.finished
    assert [(t.name, t.category) for t in run.tests] == [("test_a[espnn]", "delegated"), ("test_b[espnn]", "crashed")]
    assert report.main([str(path), "--check", FLOW]) == 1


def test_results_reader_pass_rate_and_check(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "r.jsonl", [
        {"kind": "session", "version": 1, "target": "esp32s3", "seed": 0},
        _test_doc("test_a[espnn]", "delegated"),
        _test_doc("test_b[espnn]", "fallback", "test_abs.py"),
        _test_doc("test_c[espnn]", "skipped"),
        _test_doc("test_d[espnn]", "known-failure"),
        {"kind": "end", "exitstatus": 0},
    ])
    s = report.summarize([report.load(path)])
    c = s.totals[FLOW]
    assert (c.total, c.ran, c.passed) == (4, 3, 2)
    assert s.family_totals[FLOW].passed == 1  # test_abs.py is not a delegated family
    assert report.main([str(path), "--check", FLOW, "--markdown", str(tmp_path / "r.md")]) == 0
    assert "| espnn | 4 |" in (tmp_path / "r.md").read_text()


def test_results_reader_rejects_a_file_that_is_not_results(tmp_path: Path) -> None:
    bad = tmp_path / "r.jsonl"
    bad.write_text("this is not json\n")
    with pytest.raises(report.ResultsError, match=r"r\.jsonl:1: not JSON"):
        report.load(bad)


def test_chains_of_requantizations_use_the_whole_model_criterion() -> None:
    ref = _grid(list(range(-100, 100)), 0.01, 0)
    act = ref.clone()
    act[0] += 3 * 0.01  # one element 3 steps off: 0.5% of 200 elements
    chain = OutputQuant(0.01, 0, requantizations=5)
    c = check_output(0, act, ref, chain)
    assert c.ok and c.kind == "int8-chain" and c.max_lsb == 3
    act[1:3] += 2 * 0.01  # 1.5% beyond 1 LSB
    c = check_output(0, act, ref, chain)
    assert not c.ok and "3 of 200" in c.problem
    single = check_output(0, ref + 0.02, ref, OutputQuant(0.01, 0))  # a single op: every element
    assert not single.ok
