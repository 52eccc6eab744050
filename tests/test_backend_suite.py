"""ExecuTorch's own backend operator suite (from the executorch wheel, unmodified) against
EspNNDelegateBackend: a bounded selection that covers every operator family we delegate,
run in a subprocess exactly as docs/backend-suite.md describes; plus fast unit tests of the
pass criterion and of the results reader.  scripts/run_backend_suite.sh runs everything."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
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
    rendered = (tmp_path / "r.md").read_text()
    assert "| espnn | 4 |" in rendered
    # the committed results page is this rendering: both say so before anything else
    committed = (Path(__file__).resolve().parents[1] / "docs" / "backend-suite-results.md").read_text()
    for text in (rendered, committed):
        assert text.splitlines()[2].startswith("_Generated file: do not edit.")


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


# --------------------------------------------------------------------------- the bounded selection

#: The CI selection: (operator file, test function) -> expected category.  It covers every
#: operator family EspNNDelegateBackend delegates, with the parameterisations that reach the
#: engine's corners (strides, padding, dilation, groups/depthwise, odd channel counts, batch > 1,
#: broadcasting, ceil mode, pad counting, rank-5 refusals, value-dependent refusals), plus
#: one test per kind of expected CPU fallback.  docs/backend-suite.md has the full-suite table.
SELECTION: dict[tuple[str, str], str] = {
    # conv
    ("test_conv2d.py", "test_conv2d_stride"): "delegated",
    ("test_conv2d.py", "test_conv2d_padding"): "delegated",
    ("test_conv2d.py", "test_conv2d_dilation"): "delegated",
    ("test_conv2d.py", "test_conv2d_groups"): "delegated",
    ("test_conv2d.py", "test_conv2d_depthwise"): "delegated",
    ("test_conv2d.py", "test_conv2d_channels"): "delegated",
    ("test_conv2d.py", "test_conv2d_kernel_size"): "delegated",
    ("test_conv2d.py", "test_conv2d_no_bias"): "delegated",
    ("test_conv2d.py", "test_conv2d_different_spatial_dims"): "delegated",
    ("test_conv1d.py", "test_conv1d_basic"): "delegated",  # the conv2d of the [N, C, 1, L] view
    # fully connected
    ("test_linear.py", "test_linear_unbatched"): "delegated",
    ("test_linear.py", "test_linear_feature_sizes"): "partial",  # a bias beyond 2^24 accumulator units
    # add / mul
    ("test_add.py", "test_add_f32_bcast_first"): "delegated",
    ("test_add.py", "test_add_f32_bcast_second"): "delegated",
    ("test_add.py", "test_add_f32_alpha"): "delegated",
    ("test_mul.py", "test_multiply_f32_bcast_first"): "delegated",
    ("test_mul.py", "test_multiply_f32_bcast_second"): "delegated",
    # pooling
    ("test_avgpool2d.py", "test_avgpool2d_ceil_mode"): "delegated",
    ("test_avgpool2d.py", "test_avgpool2d_count_include_pad"): "delegated",
    ("test_avgpool2d.py", "test_avgpool2d_stride"): "delegated",
    ("test_maxpool2d.py", "test_maxpool2d_ceil_mode"): "delegated",
    ("test_maxpool2d.py", "test_maxpool2d_return_indices"): "delegated",
    ("test_maxpool2d.py", "test_maxpool2d_combinations"): "partial",  # dilation: no ESP-NN pooling
    ("test_adaptive_avgpool2d.py", "test_adaptive_avgpool2d_output_size"): "delegated",
    ("test_mean.py", "test_mean_basic"): "delegated",  # the mean over every dim: MEAN_HW of [1, 1, R, 1]
    # data movement
    ("test_cat.py", "test_cat_negative_dim"): "delegated",
    ("test_cat.py", "test_cat_different_shapes"): "delegated",
    ("test_permute.py", "test_permute_4d"): "delegated",
    ("test_permute.py", "test_permute_different_shapes"): "partial",  # rank 5
    ("test_transpose.py", "test_transpose_4d"): "delegated",
    ("test_slice.py", "test_slice_multi_dimensions"): "delegated",
    ("test_select.py", "test_select_dimensions"): "delegated",
    ("test_view.py", "test_view_inferred_dimension"): "delegated",
    ("test_reshape.py", "test_reshape_dimensions"): "delegated",
    ("test_squeeze.py", "test_squeeze_specific_dimension"): "delegated",
    ("test_unsqueeze.py", "test_unsqueeze_positions"): "delegated",
    ("test_upsample_nearest2d.py", "test_upsample_nearest2d_scale_factors"): "delegated",
    # clamp-like and lookup-table activations
    ("test_relu.py", "test_relu_f32_multi_dim"): "delegated",
    ("test_hardtanh.py", "test_hardtanh_f32_custom_range"): "delegated",
    ("test_clamp.py", "test_clamp_min_only"): "delegated",
    ("test_clamp.py", "test_clamp_max_only"): "delegated",
    ("test_hardswish.py", "test_hardswish_f32_boundary_values"): "delegated",
    ("test_hardsigmoid.py", "test_hardsigmoid_f32_boundary_values"): "delegated",
    ("test_sigmoid.py", "test_sigmoid_f32_boundary_values"): "delegated",
    ("test_tanh.py", "test_tanh_f32_boundary_values"): "delegated",
    ("test_silu.py", "test_silu_f32_boundary_values"): "delegated",
    ("test_gelu.py", "test_gelu_f32_tanh_approximation"): "delegated",
    ("test_leaky_relu.py", "test_leaky_relu_f32_custom_slope"): "delegated",
    # operators we do not delegate: the CPU runs them and must still match
    ("test_abs.py", "test_abs_dtype"): "fallback",
    ("test_sub.py", "test_subtract_f32_bcast_first"): "fallback",
    ("test_maxpool3d.py", "test_maxpool3d_stride"): "skipped",  # no portable kernel for the CPU part
}


def _suite_dir() -> Path:
    import executorch.backends.test.suite as suite

    return Path(suite.__file__).resolve().parent


@pytest.mark.slow
@pytest.mark.suite
def test_backend_suite_selection(tmp_path: Path) -> None:
    """The selection, run as docs/backend-suite.md says: every test in its expected category
    (delegated / partial / fallback with reasons, outputs compared), no crash, no failure."""
    ops = _suite_dir() / "operators"
    ids = [f"{ops / file}::{func}" for file, func in SELECTION]
    results = tmp_path / "espnn.jsonl"
    cmd = [
        sys.executable, "-P", "-m", "pytest", "-p", "executorch_espnn.testing.suite_plugin",
        "-p", "no:cacheprovider", "--rootdir", str(tmp_path), "--basetemp", str(tmp_path / "bt"),
        "-q", "-m", f"flow_{FLOW}", "--espnn-suite-json", str(results), *ids,
    ]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=SELECTION_TIMEOUT_S, check=False)
    elapsed = time.perf_counter() - start
    tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-40:])
    print(f"backend suite selection: {len(SELECTION)} tests in {elapsed:.0f} s")
    assert results.is_file(), f"the suite wrote no results (exit {proc.returncode}):\n{tail}"
    run = report.load(results)
    assert run.finished, f"the suite run did not finish (crash?):\n{tail}"

    got = {(t.file, t.name.split("[")[0]): t for t in run.tests if t.flow == FLOW}
    missing = sorted(set(SELECTION) - set(got))
    assert not missing, f"not collected: {missing}\n{tail}"
    wrong = [
        f"{file}::{func}: expected {want}, got {got[file, func].category} {got[file, func].message[:300]}"
        for (file, func), want in SELECTION.items() if got[file, func].category != want
    ]
    assert not wrong, "\n".join(wrong) + (
        "\n(an operator that is now delegated is progress: update SELECTION and docs/backend-suite.md)"
    )
    assert proc.returncode == 0, tail

    for t in got.values():
        for sub in t.subtests:
            if t.category == "skipped":
                continue
            assert sub["compared"], t.nodeid
            for cpu in sub["cpu_ops"]:  # a fallback counts only with the partitioner's reason
                assert cpu["reason"], (t.nodeid, cpu)
            for out in sub["outputs"]:
                if out["kind"] == "int8":
                    assert out["max_lsb"] <= 1, (t.nodeid, out)
                assert out["problem"] == "", (t.nodeid, out)
    assert elapsed < SELECTION_TIMEOUT_S


@pytest.mark.slow
def test_plugin_loaded_too_late_is_a_clear_usage_error(tmp_path: Path) -> None:
    """Loaded from a conftest, the plugin cannot register the flow before the suite's
    conftest reads all_flows(): it says so instead of silently running no espnn test."""
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["executorch_espnn.testing.suite_plugin"]\n')
    (tmp_path / "test_nothing.py").write_text("def test_nothing():\n    pass\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    proc = subprocess.run(
        [sys.executable, "-P", "-m", "pytest", "-p", "no:cacheprovider", "--rootdir", str(tmp_path), "-q",
         str(tmp_path)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False,
    )
    assert proc.returncode != 0
    assert "must be loaded with -p on the command line" in proc.stdout + proc.stderr
