"""The standalone host runner: a program embedded through the generated model_pte.h, run by
EspnnModel in a C++ executable linking the wheel's runtime and kernels.  Its outputs must
equal executorch_espnn.host.run's on the same inputs, bit for bit."""

from __future__ import annotations

import hashlib
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from devkit.model_files import render_model
from executorch_espnn import host
from executorch_espnn.payload import DType
from executorch_espnn.payload.format import FORMAT_MAJOR, FORMAT_MINOR
from executorch_espnn.version import __version__
from tests.host_helpers import delegated_pte, fc_payload, make_fc_model

ROOT = Path(__file__).resolve().parents[1]
COMPONENT = ROOT / "espnn_component"
pytestmark = pytest.mark.slow

_LINE = re.compile(r"^output (\d+) (float32|int8) \[([0-9, ]*)\]:(.*)$")


_render = render_model


@pytest.fixture(scope="module")
def build_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("runner-build")


def _build_runner(build: Path, model_dir: Path) -> Path:
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
    exe = build / "espnn_runner"
    assert exe.is_file()
    return exe


def _parse(stdout: str) -> list[np.ndarray]:
    outputs: list[np.ndarray] = []
    for line in stdout.splitlines():
        m = _LINE.match(line)
        if m is None:
            continue
        assert int(m.group(1)) == len(outputs)
        dims = tuple(int(d) for d in m.group(3).split(",") if d.strip())
        dtype = np.float32 if m.group(2) == "float32" else np.int8
        values = np.array([float(v) for v in m.group(4).split()], dtype=np.float64).astype(dtype)
        outputs.append(values.reshape(dims))
    assert re.search(r"^latency_us \d+$", stdout, re.M), stdout
    return outputs


def _run(exe: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=300, check=False)


def _xorshift_inputs(shape: tuple[int, ...], dtype: str, seed: int, index: int) -> np.ndarray:
    """The runner's deterministic data (fill_deterministic in host_runner.cpp)."""
    state = (seed + 7919 * index) & 0xFFFFFFFF or 1
    n = int(np.prod(shape))
    out = np.empty(n, dtype=np.float32 if dtype == "float32" else np.int8)
    for i in range(n):
        state ^= (state << 13) & 0xFFFFFFFF
        state ^= state >> 17
        state ^= (state << 5) & 0xFFFFFFFF
        if dtype == "float32":
            out[i] = np.float32(state >> 8) / np.float32(8388608.0) - np.float32(1.0)
        else:
            out[i] = (state >> 24) - 128
    return out.reshape(shape)


@pytest.fixture(scope="module")
def fc_pte() -> bytes:
    import torch

    return delegated_pte(fc_payload(make_fc_model()), [torch.zeros(1, 8)], lambda x: x[:, :4] * 1.0,
                         after=lambda y: torch.relu(y) + 0.25)


def test_runner_output_equals_host_run(fc_pte: bytes, build_dir: Path, tmp_path: Path) -> None:
    exe = _build_runner(build_dir, _render(fc_pte, tmp_path / "gen"))
    for seed in range(3):
        x = np.random.default_rng(seed).uniform(-2, 2, (1, 8)).astype(np.float32)
        (tmp_path / "x.bin").write_bytes(x.tobytes())
        proc = _run(exe, "--input", f"0={tmp_path / 'x.bin'}")
        assert proc.returncode == 0, proc.stderr
        got = _parse(proc.stdout)
        want = host.run(fc_pte, [x])
        assert len(got) == len(want) == 1
        np.testing.assert_array_equal(got[0], want[0])


def test_runner_deterministic_inputs(fc_pte: bytes, build_dir: Path, tmp_path: Path) -> None:
    exe = _build_runner(build_dir, _render(fc_pte, tmp_path / "gen"))
    proc = _run(exe, "--seed", "5", "--repeat", "3")
    assert proc.returncode == 0, proc.stderr
    x = _xorshift_inputs((1, 8), "float32", 5, 0)
    np.testing.assert_array_equal(_parse(proc.stdout)[0], host.run(fc_pte, [x])[0])


def test_float_view_of_int8_program(build_dir: Path, tmp_path: Path) -> None:
    """EspnnModel's float convenience on an int8 program: quantize in, dequantize out, with
    the description's quantization."""
    import torch

    m = make_fc_model(seed=9)
    pte = delegated_pte(fc_payload(m, io_dtype=DType.INT8), [torch.zeros(1, 8, dtype=torch.int8)],
                        lambda x: x[:, :4] * 1)
    gen = _render(pte, tmp_path / "gen", edit={
        "inputs.0.scale": m.in_scale, "inputs.0.zero_point": m.in_zp,
        "outputs.0.scale": m.out_scale, "outputs.0.zero_point": m.out_zp,
    })
    exe = _build_runner(build_dir, gen)
    x = np.random.default_rng(3).uniform(-2, 2, (1, 8)).astype(np.float32)
    (tmp_path / "x.bin").write_bytes(x.tobytes())
    proc = _run(exe, "--view", "float", "--input", f"0={tmp_path / 'x.bin'}")
    assert proc.returncode == 0, proc.stderr
    (y,) = _parse(proc.stdout)
    assert y.dtype == np.float32
    np.testing.assert_array_equal(y, m.reference(x))
    # raw int8 through the native view equals the int8 program run on the quantized input
    (tmp_path / "xq.bin").write_bytes(m.quantize_input(x).tobytes())
    proc = _run(exe, "--input", f"0={tmp_path / 'xq.bin'}")
    (yq,) = _parse(proc.stdout)
    np.testing.assert_array_equal(yq, m.reference_int8(x))


def test_int8_view_without_quantization_is_a_clear_error(fc_pte: bytes, build_dir: Path,
                                                         tmp_path: Path) -> None:
    exe = _build_runner(build_dir, _render(fc_pte, tmp_path / "gen"))
    proc = _run(exe, "--view", "int8")
    assert proc.returncode == 1
    assert "input 0 is float32 and model_pte.h gives it no quantization (scale 0): use input<float>()" in proc.stderr


def test_version_mismatch_names_both_sides(fc_pte: bytes, build_dir: Path, tmp_path: Path) -> None:
    gen = _render(fc_pte, tmp_path / "gen", edit={"versions.package": "0.9.0", "versions.executorch": "1.7.0"})
    exe = _build_runner(build_dir, gen)
    proc = _run(exe)
    assert proc.returncode == 1
    assert ("begin() failed: model header built by executorch-espnn 0.9.0 for ExecuTorch 1.7.0 (payload "
            f"format {FORMAT_MAJOR}.{FORMAT_MINOR}); this runtime is executorch-espnn {__version__} with ExecuTorch "
            f"{host.executorch_version().split('+')[0]}") in proc.stderr


def test_too_small_method_allocator_is_named(fc_pte: bytes, build_dir: Path, tmp_path: Path) -> None:
    gen = _render(fc_pte, tmp_path / "gen", edit={"sizes.method_allocator_bytes": 64})
    exe = _build_runner(build_dir, gen)
    proc = _run(exe)
    assert proc.returncode == 1
    assert re.search(r"the method allocator pool of 64 bytes \(model_pte.h method_allocator_bytes\) is "
                     r"too small for a request of \d+ bytes", proc.stderr), proc.stderr


def test_header_and_pte_from_different_builds(fc_pte: bytes, build_dir: Path, tmp_path: Path) -> None:
    gen = _render(fc_pte, tmp_path / "gen", edit={"inputs.0.dims": [1, 9]})
    exe = _build_runner(build_dir, gen)
    proc = _run(exe)
    assert proc.returncode == 1
    assert "does not match model_pte.h" in proc.stderr and "different builds" in proc.stderr


def test_generated_data_is_the_pte(fc_pte: bytes, tmp_path: Path) -> None:
    gen = _render(fc_pte, tmp_path / "gen")
    header = (gen / "model_pte.h").read_text()
    assert hashlib.sha256(fc_pte).hexdigest() in header
    assert f"#define ESPNN_MODEL_PTE_SIZE {len(fc_pte)}u" in header
    sizes = host.measure(fc_pte)
    assert f"#define ESPNN_MODEL_METHOD_ALLOCATOR_BYTES {sizes.method_allocator_bytes}u" in header


def test_runner_mobilenet_v2(build_dir: Path, tmp_path: Path) -> None:
    """The host board's runtime on MobileNetV2-0.35/96: the runner's output equals host.run's
    on the same deterministic input (printed: the closing note quotes it)."""
    from devkit.lowered_zoo import lowered_zoo

    low = lowered_zoo("mobilenet_v2_0.35_96")
    exe = _build_runner(build_dir, _render(low.pte, tmp_path / "gen"))
    proc = _run(exe, "--seed", "1", "--repeat", "5")
    assert proc.returncode == 0, proc.stderr
    (got,) = _parse(proc.stdout)
    x = _xorshift_inputs((1, 3, 96, 96), "float32", 1, 0)
    (want,) = host.run(low.pte, [x])
    np.testing.assert_array_equal(got, want)
    top5 = np.argsort(-got[0])[:5]
    latency = re.search(r"^latency_us (\d+)$", proc.stdout, re.M)
    print(f"\nmobilenet_v2_0.35_96 on espnn_runner: top-5 {top5.tolist()} "
          f"logits {got[0][top5].round(4).tolist()}, {latency.group(1) if latency else '?'} us/invoke")


def test_program_io_in_the_arena_through_espnn_model(build_dir: Path, tmp_path: Path) -> None:
    """A lowered program whose input and output live in the delegate arena (io_arena, the
    default): EspnnModel binds them there and the outputs equal host.run's; on a shared arena it
    gives them buffers of its own, with the same outputs; and a sketch that writes its input only
    once gets a wrong second result, because the arena reused the input's bytes (the misuse
    docs/runtime.md warns about)."""
    import torch

    from executorch_espnn import lower
    from executorch_espnn.io_arena import program_homes
    from executorch_espnn.pte import read_program

    torch.manual_seed(4)
    model = torch.nn.Sequential(torch.nn.Conv2d(8, 16, 3, padding=1), torch.nn.ReLU(),
                                torch.nn.Conv2d(16, 16, 3, padding=1), torch.nn.ReLU(),
                                torch.nn.Conv2d(16, 4, 1)).eval()
    cal = [(torch.randn(1, 8, 16, 16),) for _ in range(4)]
    pte = lower(model, cal[0], calibration=cal, target="esp32").pte
    info = read_program(pte)
    ins, outs = program_homes(info)
    assert sum(info.planned_buffers) == 0 and None not in ins + outs
    exe = _build_runner(build_dir, _render(pte, tmp_path / "gen"))
    x = _xorshift_inputs((1, 8, 16, 16), "float32", 9, 0)
    (want,) = host.run(pte, [x])
    for extra in ((), ("--shared-arena",)):
        proc = _run(exe, "--seed", "9", "--repeat", "2", *extra)
        assert proc.returncode == 0, proc.stderr
        np.testing.assert_array_equal(_parse(proc.stdout)[0], want)
    proc = _run(exe, "--seed", "9", "--repeat", "2", "--write-once")
    assert proc.returncode == 0, proc.stderr
    assert not np.array_equal(_parse(proc.stdout)[0], want)
