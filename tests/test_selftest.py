"""The on-board self-test: lower(..., selftest=N) embeds N inputs with the outputs the Python
reference computes for them, and EspnnModel::self_test() (built here for the host) reports
one line: bit-exact, or the first difference."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from torch import nn

import executorch_espnn as ee
from executorch_espnn import cli
from executorch_espnn.errors import OptionValueError, ValidationDataError
from executorch_espnn.pte import read_program
from executorch_espnn.reference import run_delegate
from executorch_espnn.selftest import MAX_CASES, SelfTest

ROOT = Path(__file__).resolve().parents[1]
COMPONENT = ROOT / "espnn_component"
from executorch_espnn.firmware import __main__ as lower_driver  # noqa: E402
from executorch_espnn.firmware.job import ArtifactJob  # noqa: E402
from executorch_espnn.firmware.options import OptionError, parse_env_options  # noqa: E402


class ConvExpConv(nn.Module):
    """conv -> exp (stays on the CPU, in float) -> conv: two delegates and a CPU island."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Conv2d(3, 8, 3, padding=1)
        self.b = nn.Conv2d(8, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(torch.exp(self.a(x) * 0.1))


class TwoHeads(nn.Module):
    """A delegated output (compared on its int8 grid) and a float output computed on the CPU
    (no quantization: compared bit for bit).  The CPU operator is abs, exact on every machine.
    An ``exp`` there differed in the last bit on CI's CPU and a ``sqrt`` here (PyTorch's kernels
    against the C++ kernels the runner links): a real difference the self-test reports, which
    this test must not depend on."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(6, 5)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = self.fc(x)
        return y, torch.abs(y)


def _batches(n: int, shape: tuple[int, ...], seed: int) -> list[tuple[torch.Tensor]]:
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(shape, generator=g),) for _ in range(n)]


@pytest.fixture(scope="module")
def conv_exp() -> tuple[ee.LoweredModel, list[tuple[torch.Tensor]]]:
    torch.manual_seed(0)
    calib = _batches(6, (1, 3, 8, 8), seed=1)
    return ee.lower(ConvExpConv().eval(), calib[0], calib, selftest=4), calib


def _on_grid(y: np.ndarray, scale: float, zp: int) -> np.ndarray:
    return np.clip(np.rint(y.astype(np.float64) / np.float64(np.float32(scale))) + zp, -128, 127).astype(np.int8)


# --- what the lowering embeds ------------------------------------------------------------------


def test_selftest_embeds_calibration_samples_with_the_reference_outputs(
        conv_exp: tuple[ee.LoweredModel, list[tuple[torch.Tensor]]]) -> None:
    low, calib = conv_exp
    st = low.selftest
    assert st is not None and st.n_cases == 4 and st.source == "calibration"
    (inp,) = st.inputs
    spec_in = low.inputs[0]
    assert inp.dtype == "int8" and inp.values.shape == (4, 1, 3, 8, 8)
    assert inp.scale == pytest.approx(spec_in.scale, rel=1e-7) and inp.zero_point == spec_in.zero_point
    # the stored inputs are the first 4 calibration samples on the input's int8 grid
    for c in range(4):
        want_q = np.clip(np.rint(calib[c][0].numpy() / np.float32(inp.scale)) + inp.zero_point, -128, 127)
        assert np.abs(inp.values[c].astype(np.int32) - want_q).max() <= 1

    # independent computation: the two payloads by the reference executor, exp by numpy
    info = read_program(low.pte)
    assert len(info.payloads) == 2
    (out,) = st.expected
    spec_out = low.outputs[0]
    assert out.dtype == "int8" and out.scale == pytest.approx(spec_out.scale, rel=1e-7)
    for c in range(4):
        x = (inp.values[c].astype(np.float32) - np.float32(inp.zero_point)) * np.float32(inp.scale)
        h = run_delegate(info.payloads[0], [x])[0]
        y = run_delegate(info.payloads[1], [np.exp(h)])[0]
        np.testing.assert_array_equal(out.values[c], _on_grid(y, out.scale, out.zero_point))
        # and the int8 model PyTorch simulates (PT2E's q/dq graph) is within a few LSB of it
        assert low.quantized_program is not None
        torch_y = low.quantized_program.module()(torch.from_numpy(x)).detach().numpy()
        lsb = np.abs(_on_grid(torch_y, out.scale, out.zero_point).astype(np.int32) - out.values[c])
        assert np.mean(lsb <= 1) >= 0.95, lsb.max()


def test_selftest_round_trips_through_npz(conv_exp: tuple[ee.LoweredModel, Any], tmp_path: Path) -> None:
    st = conv_exp[0].selftest
    assert st is not None
    back = SelfTest.load(st.save(tmp_path / "selftest.npz"))
    assert back.source == st.source and back.n_cases == st.n_cases
    for a, b in zip(back.inputs + back.expected, st.inputs + st.expected, strict=True):
        assert (a.name, a.dtype, a.scale, a.zero_point) == (b.name, b.dtype, b.scale, b.zero_point)
        np.testing.assert_array_equal(a.values, b.values)


def test_validation_samples_come_first_and_float_outputs_are_kept_as_float() -> None:
    torch.manual_seed(0)
    calib = _batches(4, (1, 6), seed=2)
    val = _batches(3, (1, 6), seed=3)
    low = ee.lower(TwoHeads().eval(), calib[0], calib, selftest=3, validation=val)
    st = low.selftest
    assert st is not None and st.source == "validation"
    (inp,) = st.inputs
    for c in range(3):
        want_q = np.clip(np.rint(val[c][0].numpy() / np.float32(inp.scale)) + inp.zero_point, -128, 127)
        assert np.abs(inp.values[c].astype(np.int32) - want_q).max() <= 1
    head, tail = st.expected
    assert head.dtype == "int8" and head.scale > 0
    assert tail.dtype == "float32" and tail.scale == 0.0  # abs on the CPU: a float output
    (payload,) = read_program(low.pte).payloads
    for c in range(3):
        x = st.program_inputs(c)[0]
        outs = run_delegate(payload, [x])
        y = outs[0]
        np.testing.assert_array_equal(head.values[c], _on_grid(y, head.scale, head.zero_point))
        np.testing.assert_array_equal(tail.values[c], torch.abs(torch.from_numpy(y)).numpy())


def test_without_data_the_samples_are_seeded_random_inputs() -> None:
    low = ee.lower(TwoHeads().eval(), (torch.randn(1, 6),), None, selftest=2)
    assert low.selftest is not None and low.selftest.source == "random" and low.selftest.n_cases == 2


# --- bad values: one line naming the option and the fix ----------------------------------------


@pytest.mark.parametrize(("value", "problem"), [
    (-1, "selftest=-1: a negative number of samples; give a whole number from 0 (off) to 64"),
    ("4", "selftest=4: not a number of samples; give a whole number from 0 (off) to 64"),
    (MAX_CASES + 1, f"selftest={MAX_CASES + 1}: more than {MAX_CASES} samples; give at most {MAX_CASES}"),
])
def test_bad_selftest_values_name_the_option(value: object, problem: str) -> None:
    with pytest.raises(OptionValueError) as err:
        ee.lower(TwoHeads().eval(), (torch.randn(1, 6),), selftest=value)  # type: ignore[arg-type]
    assert str(err.value).startswith(problem), str(err.value)


def test_more_samples_than_the_data_has_names_the_count_and_the_fix() -> None:
    calib = _batches(3, (1, 6), seed=2)
    with pytest.raises(OptionValueError) as err:
        ee.lower(TwoHeads().eval(), calib[0], calib, selftest=5)
    assert str(err.value) == ("selftest=5: the calibration data has only 3 sample(s); ask for at most 3, "
                              "or give more calibration samples")
    with pytest.raises(OptionValueError, match="the validation data has only 1 sample"):
        ee.lower(TwoHeads().eval(), calib[0], calib, selftest=2, validation=calib[:1])


MODEL_PY = """
import torch

def model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU())

def example_inputs():
    return (torch.randn(1, 4),)

def calibration_data():
    g = torch.Generator().manual_seed(1)
    return [(torch.randn(1, 4, generator=g),) for _ in range(2)]
"""


def test_cli_and_model_step_name_their_own_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = tmp_path / "model.py"
    model.write_text(MODEL_PY)
    rc = cli.main(["build", str(model), "--out", str(tmp_path / "cli"), "--selftest", "9"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 1 and err == ["error: --selftest 9: the calibration data has only 2 sample(s); ask for at "
                               "most 2, or give more calibration samples"]
    rc = cli.main(["build", str(model), "--out", str(tmp_path / "cli"), "--selftest", "many"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 1 and err[-1].startswith("error: --selftest many: not a number of samples; give a whole number")

    # the PlatformIO model step's driver: the same check, spelled as platformio.ini spells it
    job = tmp_path / "job.json"
    ArtifactJob(model=model, kind="py", out=tmp_path / "pio", target="esp32s3", selftest=9).write(job)
    rc = lower_driver.main(["--job", str(job)])
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("Error: ")]
    assert rc == lower_driver.EXIT_FAILED
    assert lines == ["Error: custom_executorch_selftest = 9: the calibration data has only 2 sample(s); ask "
                     "for at most 2, or give more calibration samples"]


@pytest.mark.parametrize(("options", "expected"), [
    ({"custom_executorch_selftest": "-3"},
     "custom_executorch_selftest = -3: a negative number of samples; give a whole number, e.g. "
     "`custom_executorch_selftest = 4` (0 turns the self-test off)"),
    ({"custom_executorch_selftest": "four"},
     "custom_executorch_selftest = four: not a number of samples; give a whole number, e.g. "
     "`custom_executorch_selftest = 4` (0 turns the self-test off)"),
    ({"custom_executorch_selftest": "2.5"}, "custom_executorch_selftest = 2.5: not a number of samples"),
    ({"custom_executorch_validation": "val.csv"},
     "custom_executorch_validation = val.csv: expected a .npz file"),
    ({"custom_executorch_validation": "missing.npz"},
     "custom_executorch_validation = missing.npz: file not found"),
])
def test_platformio_option_errors(tmp_path: Path, options: dict[str, str], expected: str) -> None:
    (tmp_path / "model.py").write_text(MODEL_PY)
    (tmp_path / "val.csv").write_text("1,2")
    with pytest.raises(OptionError) as err:
        parse_env_options({"custom_executorch_model": "model.py", **options}, tmp_path, "esp32s3")
    assert str(err.value).startswith(expected), str(err.value)


def test_platformio_selftest_of_a_ready_pte_is_refused(tmp_path: Path) -> None:
    (tmp_path / "model.pte").write_bytes(b"\0" * 16)
    with pytest.raises(OptionError) as err:
        parse_env_options({"custom_executorch_model": "model.pte", "custom_executorch_selftest": "2"},
                          tmp_path, "esp32s3")
    assert str(err.value).startswith("custom_executorch_selftest = 2: a ready .pte carries no model")


def test_platformio_selftest_option_reaches_the_cache_key(tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text(MODEL_PY)
    np.savez(tmp_path / "val.npz", input0=np.zeros((2, 1, 4), np.float32))
    opts = parse_env_options({"custom_executorch_model": "model.py", "custom_executorch_selftest": "4",
                              "custom_executorch_validation": "val.npz"}, tmp_path, "esp32s3")
    assert opts is not None and opts.selftest == 4 and opts.validation == tmp_path / "val.npz"
    assert opts.cache_fields()["selftest"] == "4"


def test_validation_npz_errors_name_the_file_and_the_layout(tmp_path: Path) -> None:
    from executorch_espnn.modelfile import load_validation_npz

    ex = (torch.zeros(1, 4),)
    np.savez(tmp_path / "v.npz", input0=np.zeros((3, 1, 4), np.float32), labels=np.arange(3))
    data = load_validation_npz(tmp_path / "v.npz", ex)
    assert len(data) == 3 and list(data.labels) == [0, 1, 2]
    np.savez(tmp_path / "bad.npz", input0=np.zeros((3, 4), np.float32))
    with pytest.raises(ValidationDataError, match=r"validation file .*bad.npz: input0 has shape \(3, 4\), "
                                                  r"expected \(n_samples, 1, 4\)"):
        load_validation_npz(tmp_path / "bad.npz", ex)
    np.savez(tmp_path / "lab.npz", input0=np.zeros((3, 1, 4), np.float32), labels=np.arange(2))
    with pytest.raises(ValidationDataError, match="labels has shape \\(2,\\), expected one label per sample"):
        load_validation_npz(tmp_path / "lab.npz", ex)


def test_c_limit_equals_the_python_limit() -> None:
    header = (COMPONENT / "include" / "espnn_pte.h").read_text()
    assert f"#define ESPNN_SELFTEST_MAX_CASES {MAX_CASES}\n" in header


# --- EspnnModel::self_test() on the host -----------------------------------------------------

PASS_LINE = re.compile(r"^selftest: (\d+)/(\d+) bit-exact \(worst 0 LSB\), latency min/median/max "
                       r"(\d+)/(\d+)/(\d+) us$")


def _runner(build: Path, model_dir: Path) -> Path:
    from executorch_espnn import host

    tc = host.find_toolchain()
    subprocess.run(
        [str(tc.cmake), "-S", str(COMPONENT), "-B", str(build), "-G", tc.generator,
         "-DCMAKE_BUILD_TYPE=Release", f"-DCMAKE_PREFIX_PATH={host.executorch_dir()}",
         f"-DESPNN_MODEL_DIR={model_dir}"],
        check=True, capture_output=True, text=True,
    )
    proc = subprocess.run([str(tc.cmake), "--build", str(build), "--target", "espnn_runner", "--parallel", "2"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    return build / "espnn_runner"


def _self_test(build: Path, gen: Path) -> subprocess.CompletedProcess[str]:
    exe = _runner(build, gen)
    return subprocess.run([str(exe), "--selftest"], capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.slow
def test_host_self_test_is_bit_exact_and_reports_a_tampered_value(
        conv_exp: tuple[ee.LoweredModel, Any], tmp_path_factory: pytest.TempPathFactory) -> None:
    from devkit.model_files import render_model

    low = conv_exp[0]
    assert low.selftest is not None
    build = tmp_path_factory.mktemp("selftest-build")
    context = low.selftest.to_context()
    proc = _self_test(build, render_model(low.pte, tmp_path_factory.mktemp("gen"), selftest=context))
    m = PASS_LINE.match(proc.stdout.strip())
    assert proc.returncode == 0 and m, proc.stdout + proc.stderr
    assert m.group(1) == m.group(2) == "4"
    assert int(m.group(3)) <= int(m.group(4)) <= int(m.group(5))

    # the same build with one expected value of sample 1 moved by 2 LSB
    out = context["expected"][0]
    k = 1 * out["numel"] + 17
    true_value = out["data"][k]
    out["data"][k] = true_value + 2 if true_value <= 125 else true_value - 2
    proc = _self_test(build, render_model(low.pte, tmp_path_factory.mktemp("gen"), selftest=context))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout.strip() == (
        f"selftest: 3/4 bit-exact (worst 2 LSB): first difference sample 1 output 0 element 17: "
        f"got {true_value} expected {out['data'][k]}"
    )


@pytest.mark.slow
def test_host_self_test_of_a_float_output_and_of_no_cases(tmp_path_factory: pytest.TempPathFactory) -> None:
    from devkit.model_files import render_model

    torch.manual_seed(0)
    calib = _batches(4, (1, 6), seed=2)
    low = ee.lower(TwoHeads().eval(), calib[0], calib, selftest=3)
    assert low.selftest is not None
    build = tmp_path_factory.mktemp("selftest-build")
    context = low.selftest.to_context()
    proc = _self_test(build, render_model(low.pte, tmp_path_factory.mktemp("gen"), selftest=context))
    assert proc.returncode == 0 and PASS_LINE.match(proc.stdout.strip()), proc.stdout + proc.stderr

    tail = context["expected"][1]  # the float output: a difference is named in float
    tail["data"][2] = float(np.nextafter(np.float32(tail["data"][2]), np.float32(np.inf)))
    proc = _self_test(build, render_model(low.pte, tmp_path_factory.mktemp("gen"), selftest=context))
    assert proc.returncode == 1
    assert re.fullmatch(r"selftest: 2/3 bit-exact \(worst 1 LSB\): first difference sample 0 output 1 "
                        r"element 2: got \S+ expected \S+", proc.stdout.strip()), proc.stdout

    proc = _self_test(build, render_model(low.pte, tmp_path_factory.mktemp("gen")))
    assert proc.returncode == 1
    assert proc.stdout.strip() == (
        "selftest: model_pte.h embeds no cases; set custom_executorch_selftest = N in platformio.ini "
        "(or lower(..., selftest=N)) and rebuild")
