"""Channels-last program input (``lower(..., input_layout="nhwc")``, ``--input-layout``,
``custom_executorch_input_layout``; executorch_espnn/input_layout.py).

The golden values are the NCHW lowering of the same model with the same calibration, fed the
same image transposed by numpy: the two programs must give the same bytes, on host.run and on
the C++ runner built from the generated model_pte.h.  The payload of a convolution model must
read the program's input without a TRANSPOSE; a flatten + linear model keeps one (and the
report says so); a trained digits CNN keeps its accuracy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from torch import nn

import executorch_espnn as ee
from executorch_espnn import host
from executorch_espnn.errors import LoweringError, OptionValueError
from executorch_espnn.input_layout import check_input_layout
from executorch_espnn.payload import Opcode, Storage, decode
from executorch_espnn.pte import delegate_payloads

SHAPE = (1, 3, 8, 8)


class ConvNet(nn.Module):
    def __init__(self, channels: int = 3) -> None:
        super().__init__()
        self.conv = nn.Conv2d(channels, 8, 3, padding=1)
        self.fc = nn.Linear(8 * 8 * 8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.relu(self.conv(x)).flatten(1))


class FlatNet(nn.Module):
    """A first op that is no convolution: the NHWC input is flattened in NCHW order."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(3 * 8 * 8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x.flatten(1))


def _calibration(shape: tuple[int, ...] = SHAPE) -> list[tuple[torch.Tensor]]:
    g = torch.Generator().manual_seed(0)
    return [(torch.rand(shape, generator=g) * 2 - 1,) for _ in range(8)]


def _pair(model: nn.Module, io: str, shape: tuple[int, ...] = SHAPE) -> tuple[ee.LoweredModel, ee.LoweredModel]:
    torch.manual_seed(0)
    x = torch.zeros(shape)
    cal = _calibration(shape)
    nhwc = ee.lower(model, (x,), cal, target="esp32s3", io=io, input_layout="nhwc")
    nchw = ee.lower(model, (x,), cal, target="esp32s3", io=io)
    return nhwc, nchw


def _image(low: ee.LoweredModel, shape: tuple[int, ...], seed: int) -> np.ndarray:
    """A random NCHW image in the program's dtype (int8 I/O: quantized with the input's
    parameters, which both lowerings share)."""
    x = np.random.default_rng(seed).uniform(-1, 1, shape).astype(np.float32)
    spec = low.inputs[0]
    if spec.dtype == "int8":
        assert spec.scale and spec.zero_point is not None
        return np.clip(np.round(x / spec.scale) + spec.zero_point, -128, 127).astype(np.int8)
    return x


def _ops(pte: bytes) -> list[list[Any]]:
    return [decode(p).ops for p in delegate_payloads(pte)]


def _input_readers(pte: bytes) -> list[str]:
    """The opcodes that read the first payload's program input tensor."""
    p = decode(delegate_payloads(pte)[0])
    tid = p.inputs[0]
    assert p.tensors[tid].storage == Storage.INPUT
    return [op.opcode.name for op in p.ops if tid in op.inputs]


@pytest.fixture(scope="module", params=["int8", "float"])
def conv_pair(request: pytest.FixtureRequest) -> tuple[ee.LoweredModel, ee.LoweredModel]:
    return _pair(ConvNet().eval(), str(request.param))


def test_the_first_convolution_reads_the_nhwc_input_without_a_transpose(
        conv_pair: tuple[ee.LoweredModel, ee.LoweredModel]) -> None:
    nhwc, nchw = conv_pair
    int8 = nhwc.inputs[0].dtype == "int8"
    # the NCHW program transposes its input once for the convolution (QUANTIZE does it for
    # free with float I/O); the NHWC one reads its bytes as they are
    assert _input_readers(nhwc.pte) == (["CONV2D"] if int8 else ["QUANTIZE"])
    assert _input_readers(nchw.pte) == (["TRANSPOSE"] if int8 else ["QUANTIZE"])
    p = decode(delegate_payloads(nhwc.pte)[0])
    assert p.tensors[p.inputs[0]].dims == (1, 8, 8, 3)
    if not int8:
        q = next(op for op in p.ops if op.opcode == Opcode.QUANTIZE)
        assert [q.params[f"perm{i}"] for i in range(4)] == [0, 1, 2, 3]  # no transposing quantize
    # the only TRANSPOSE left is the flatten's, which the NCHW program has as well
    n_t = [sum(op.opcode == Opcode.TRANSPOSE for ops in _ops(low.pte) for op in ops) for low in conv_pair]
    assert n_t == [1, 2] if int8 else n_t == [1, 1]


def test_outputs_are_bit_exact_with_the_nchw_lowering_on_the_transposed_image(
        conv_pair: tuple[ee.LoweredModel, ee.LoweredModel]) -> None:
    nhwc, nchw = conv_pair
    for seed in range(3):
        x = _image(nchw, SHAPE, seed)
        (want,) = host.run(nchw.pte, [x])
        (got,) = host.run(nhwc.pte, [np.ascontiguousarray(x.transpose(0, 2, 3, 1))])
        np.testing.assert_array_equal(got, want)


def test_the_report_gives_the_nhwc_shape_and_layout(conv_pair: tuple[ee.LoweredModel, ee.LoweredModel]) -> None:
    nhwc, nchw = conv_pair
    spec, ref = nhwc.inputs[0], nchw.inputs[0]
    assert (spec.name, spec.shape, spec.layout) == ("x", (1, 8, 8, 3), "NHWC")
    assert (ref.shape, ref.layout) == ((1, 3, 8, 8), "NCHW")
    assert (spec.scale, spec.zero_point) == (ref.scale, ref.zero_point)
    assert spec.access == ("in place" if spec.dtype == "int8" else "quantized")
    assert ref.access == ("transposed copy" if spec.dtype == "int8" else "quantized")
    text = str(nhwc.report)
    assert "NHWC" in text and not any("channels-last" in w for w in nhwc.report.warnings)
    assert nhwc.report.to_dict()["inputs"][0]["layout"] == "NHWC"


def test_a_ready_pte_records_which_inputs_are_channels_last(
        conv_pair: tuple[ee.LoweredModel, ee.LoweredModel]) -> None:
    """The delegates' options compile spec carries the list, so the report of the .pte alone
    (a ready .pte in a build, ``executorch-espnn inspect``) and model_pte.h's description say
    NHWC; the NCHW lowering records none."""
    from executorch_espnn.firmware import pte_meta
    from executorch_espnn.pte import read_program
    from executorch_espnn.report import build_report

    nhwc, nchw = conv_pair
    assert read_program(nhwc.pte).nhwc_inputs == (0,) and read_program(nchw.pte).nhwc_inputs == ()
    ready, ref = build_report(nhwc.pte).inputs[0], build_report(nchw.pte).inputs[0]
    assert (ready.shape, ready.layout) == ((1, 8, 8, 3), "NHWC")
    assert (ref.shape, ref.layout) == ((1, 3, 8, 8), "NCHW")
    assert [t.layout for t in pte_meta.read(nhwc.pte).inputs] == ["NHWC"]
    assert [t.layout for t in pte_meta.read(nchw.pte).inputs] == ["NCHW"]
    assert not any("recorded" in w for w in nhwc.report.warnings)


def test_a_ready_pte_takes_the_layout_it_records_and_refuses_another(
        conv_pair: tuple[ee.LoweredModel, ee.LoweredModel], tmp_path: Path) -> None:
    import io
    import json

    from executorch_espnn import cli

    nhwc, nchw = conv_pair
    argv = ["build", "--input-layout", "nhwc"]
    for name, low in (("nhwc.pte", nhwc), ("nchw.pte", nchw)):
        low.save(tmp_path / name)
    err = io.StringIO()
    assert cli.main([*argv, str(tmp_path / "nhwc.pte"), "--out", str(tmp_path / "a")], io.StringIO(), err) == 0, \
        err.getvalue()
    report = json.loads((tmp_path / "a" / "report.json").read_text())
    assert report["inputs"][0]["layout"] == "NHWC"
    err = io.StringIO()
    assert cli.main([*argv, str(tmp_path / "nchw.pte"), "--out", str(tmp_path / "b")], io.StringIO(), err) == 1
    assert err.getvalue().startswith("error: --input-layout nhwc: nchw.pte is an already lowered .pte that takes "
                                     "its inputs NCHW (it records no channels-last input)")
    assert "lower it with --input-layout nhwc" in err.getvalue()


def _plan(*options: bytes, shapes: tuple[tuple[int, ...], ...] = ((1, 8, 8, 3),)) -> tuple[Any, Any]:
    """A method's delegates, each with one options compile spec, and its inputs' declarations:
    the two things the reader of the recorded layout looks at."""
    from types import SimpleNamespace

    from executorch.exir.backend.compile_spec_schema import CompileSpec

    from executorch_espnn.pte import BACKEND_ID, SPEC_OPTIONS, TensorDecl

    plan = SimpleNamespace(delegates=[SimpleNamespace(id=BACKEND_ID, compile_specs=[CompileSpec(SPEC_OPTIONS, o)])
                                      for o in options])
    return plan, tuple(TensorDecl("int8", s, tuple(range(len(s)))) for s in shapes)


@pytest.mark.parametrize(("options", "shapes", "match"), [
    ((b"{not json",), ((1, 8, 8, 3),), "options compile spec is not JSON"),
    ((b'{"nhwc_inputs": "0"}',), ((1, 8, 8, 3),), "nhwc_inputs option '0' is not a list of input indices"),
    ((b'{"nhwc_inputs": [0]}', b'{"nhwc_inputs": []}'), ((1, 8, 8, 3),), "different channels-last inputs"),
    ((b'{"nhwc_inputs": [1]}',), ((1, 8, 8, 3),), "delegates name input 1 channels-last, but it has no 4-D input 1"),
    ((b'{"nhwc_inputs": [0]}',), ((1, 64),), "delegates name input 0 channels-last, but it has no 4-D input 0"),
])
def test_a_recorded_layout_that_lower_cannot_have_written_is_a_clear_error(
        options: tuple[bytes, ...], shapes: tuple[tuple[int, ...], ...], match: str) -> None:
    from executorch_espnn.errors import PteError
    from executorch_espnn.pte import _nhwc_inputs

    plan, inputs = _plan(*options, shapes=shapes)
    with pytest.raises(PteError, match=match) as e:
        _nhwc_inputs(plan, inputs, "forward")
    assert str(e.value).startswith("forward: ") and "to_executorch()" in str(e.value)


def test_a_pte_from_before_the_record_reads_nchw() -> None:
    from executorch_espnn.pte import _nhwc_inputs

    plan, inputs = _plan(b'{"max_io": 32, "max_ops": 255, "max_tensors": 255, "optimize": "speed"}')
    assert _nhwc_inputs(plan, inputs, "forward") == ()


class CumsumNet(nn.Module):
    """Nothing ESP-NN runs."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.cumsum(1)


def test_a_channels_last_program_with_no_delegate_warns_that_nothing_records_it() -> None:
    """lower() delegates at least the boundary quantize of such a model, so a program with no
    delegate of ours comes from ExecuTorch alone; its report, told the layout, says it is lost."""
    from executorch.exir import to_edge

    from executorch_espnn.report import build_report
    from executorch_espnn.report.analysis import UNRECORDED_LAYOUT_WARNING

    pte = to_edge(torch.export.export(CumsumNet().eval(), (torch.zeros(1, 8, 8, 3),))).to_executorch().buffer
    told = build_report(pte, nhwc_inputs=[0])
    assert told.inputs[0].layout == "NHWC" and UNRECORDED_LAYOUT_WARNING in told.warnings
    assert UNRECORDED_LAYOUT_WARNING.startswith('input_layout="nhwc" is recorded in the ESP-NN delegates')
    ready = build_report(pte)
    assert ready.inputs[0].layout != "NHWC" and UNRECORDED_LAYOUT_WARNING not in ready.warnings


def test_one_channel_changes_no_byte() -> None:
    """C == 1: NCHW and NHWC bytes are the same; the program's shape still reads [N, H, W, 1]."""
    shape = (1, 1, 8, 8)
    nhwc, nchw = _pair(ConvNet(channels=1).eval(), "int8", shape)
    assert nhwc.inputs[0].shape == (1, 8, 8, 1) and nhwc.inputs[0].layout == "NHWC"
    assert _input_readers(nhwc.pte) == ["CONV2D"]
    x = _image(nchw, shape, 4)
    np.testing.assert_array_equal(host.run(nhwc.pte, [x.reshape(1, 8, 8, 1)])[0], host.run(nchw.pte, [x])[0])


def test_a_first_op_that_is_no_convolution_keeps_one_transpose_and_says_so() -> None:
    nhwc, nchw = _pair(FlatNet().eval(), "int8")
    assert _input_readers(nhwc.pte) == ["TRANSPOSE"]  # the permute, as a real copy
    assert _input_readers(nchw.pte) != ["TRANSPOSE"]
    assert nhwc.inputs[0].access == "transposed copy"
    (warning,) = [w for w in nhwc.report.warnings if "channels-last" in w]
    assert warning.startswith('input 0 (x) is taken channels-last (input_layout="nhwc"), but the first '
                              "delegated op reads it in NCHW order")
    x = _image(nchw, SHAPE, 5)
    np.testing.assert_array_equal(host.run(nhwc.pte, [np.ascontiguousarray(x.transpose(0, 2, 3, 1))])[0],
                                  host.run(nchw.pte, [x])[0])


def test_the_selftest_stores_nhwc_inputs() -> None:
    torch.manual_seed(0)
    m = ConvNet().eval()
    cal = _calibration()
    nhwc = ee.lower(m, (torch.zeros(SHAPE),), cal, io="int8", input_layout="nhwc", selftest=2)
    st = nhwc.selftest
    assert st is not None and st.inputs[0].values.shape == (2, 1, 8, 8, 3)
    # each stored case run through the program gives the stored expected output
    for case in range(2):
        (got,) = host.run(nhwc.pte, st.program_inputs(case))
        np.testing.assert_array_equal(got, st.expected[0].values[case])


def test_trained_digits_cnn_keeps_its_accuracy() -> None:
    """A CNN trained on scikit-learn's digits as 3-channel 16x16 images: the NHWC program's
    top-1 on the held-out split equals the NCHW program's, which matches float PyTorch's."""
    from tests.arch_blocks import digits_images, split

    torch.manual_seed(0)
    x, y = digits_images(size=16, channels=3)
    train, test = split(n_test=96)
    m = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                      nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                      nn.Linear(16, 10))
    opt = torch.optim.Adam(m.parameters(), lr=0.01)
    g = torch.Generator().manual_seed(0)
    for _ in range(600):
        b = torch.from_numpy(train)[torch.randint(0, len(train), (64,), generator=g)]
        loss = nn.functional.cross_entropy(m(x[b]), y[b])
        opt.zero_grad()
        loss.backward()
        opt.step()
    m.eval()
    cal = [(x[i:i + 1],) for i in train[:64]]
    nhwc = ee.lower(m, (x[:1],), cal, input_layout="nhwc")
    nchw = ee.lower(m, (x[:1],), cal)
    assert nhwc.inputs[0].shape == (1, 16, 16, 3) and _input_readers(nhwc.pte) == ["QUANTIZE"]
    with torch.no_grad():
        float_top1 = float((m(x[test]).argmax(1) == y[test]).float().mean())
    got, want = [], []
    for i in test:
        img = x[i:i + 1].numpy()
        got.append(host.run(nhwc.pte, [np.ascontiguousarray(img.transpose(0, 2, 3, 1))])[0])
        want.append(host.run(nchw.pte, [img])[0])
    np.testing.assert_array_equal(np.stack(got), np.stack(want))
    top1 = float((np.stack(got)[:, 0].argmax(1) == y[test].numpy()).mean())
    assert float_top1 >= 0.85, float_top1  # trained (chance is 0.1)
    assert top1 >= float_top1 - 0.03, (top1, float_top1)


@pytest.mark.slow
@pytest.mark.parametrize("conv_pair", ["int8"], indirect=True)  # one I/O kind is enough for the runner
def test_the_cpp_runner_takes_nhwc_bytes(conv_pair: tuple[ee.LoweredModel, ee.LoweredModel],
                                         tmp_path: Path) -> None:
    """EspnnModel in the standalone runner, from the header the build generates (the report's
    layout included): NHWC bytes in, the NCHW program's output on the numpy-transposed image."""
    from executorch_espnn.firmware import pte_meta, render
    from executorch_espnn.firmware.model_info import Sizes, Versions
    from executorch_espnn.payload.format import FORMAT_MAJOR, FORMAT_MINOR
    from executorch_espnn.version import __version__
    from tests.test_runner import _build_runner, _parse, _run

    nhwc, nchw = conv_pair
    assert nhwc.inputs[0].dtype == "int8"
    sizes = host.measure(nhwc.pte)
    info = render.model_info(
        pte_meta.read(nhwc.pte), nhwc.report.to_dict(),
        Versions(host.executorch_version(), __version__, str(FORMAT_MAJOR), str(FORMAT_MINOR)),
        {**sizes.header_sizes(), "pointer_bytes": sizes.pointer_bytes},
    )
    assert Sizes is not None and info.pte.inputs[0].layout == "NHWC"
    out = tmp_path / "gen"
    out.mkdir()
    (out / "model.pte").write_bytes(nhwc.pte)
    render.write_all(info, out)
    header = (out / render.GENERATED_SUBDIR / "model_pte.h").read_text()
    assert '#define ESPNN_MODEL_INPUT0_LAYOUT "NHWC"' in header
    assert '/* input 0 "x": int8 [1, 8, 8, 3], layout NHWC' in header
    exe = _build_runner(tmp_path / "build", out / render.GENERATED_SUBDIR)
    x = _image(nchw, SHAPE, 7)
    (tmp_path / "x.bin").write_bytes(np.ascontiguousarray(x.transpose(0, 2, 3, 1)).tobytes())
    proc = _run(exe, "--input", f"0={tmp_path / 'x.bin'}")
    assert proc.returncode == 0, proc.stderr
    (got,) = _parse(proc.stdout)
    np.testing.assert_array_equal(got, host.run(nchw.pte, [x])[0])


# ------------------------------------------------------------------------- the option's errors


def test_nchw_is_the_default_and_a_wrong_value_names_both_choices() -> None:
    assert check_input_layout("nchw") == "nchw" and check_input_layout(" NHWC ") == "nhwc"
    with pytest.raises(OptionValueError) as e:
        check_input_layout("hwc")
    assert str(e.value).startswith("input_layout=hwc: unknown input layout; use \"nchw\" (the default")
    assert '"nhwc"' in str(e.value)


def test_lower_refuses_a_bad_value_and_a_model_without_an_image_input() -> None:
    with pytest.raises(OptionValueError, match=r"^input_layout=chw: unknown input layout"):
        ee.lower(nn.Linear(4, 2), (torch.randn(1, 4),), input_layout="chw")
    with pytest.raises(LoweringError, match=r'^input_layout="nhwc" needs a 4-D float image input '
                                            r"\[N, C, H, W\]; this model's inputs are \(1, 4\)"):
        ee.lower(nn.Linear(4, 2), (torch.randn(1, 4),), input_layout="nhwc")


def test_an_already_quantized_program_is_refused() -> None:
    from executorch_espnn.quantizer import quantize

    m = ConvNet().eval()
    x = (torch.zeros(SHAPE),)
    q = quantize(m, x, _calibration())
    ep = torch.export.export(q.graph_module, x)
    with pytest.raises(LoweringError, match=r'^input_layout="nhwc" takes a float model: this program is '
                                            r"already quantized"):
        ee.lower(ep, x, input_layout="nhwc")


MODEL_PY = "def model():\n    pass\n\ndef example_inputs():\n    pass\n"


def test_platformio_input_layout_option(tmp_path: Path) -> None:
    from executorch_espnn.firmware.artifact import lower_argv
    from executorch_espnn.firmware.job import ArtifactJob
    from executorch_espnn.firmware.options import OptionError, parse_env_options

    def parse(model: str, **options: str) -> Any:
        return parse_env_options({"custom_executorch_model": model, **options}, tmp_path, "esp32s3")

    (tmp_path / "model.py").write_text(MODEL_PY)
    (tmp_path / "model.pte").write_bytes(b"\0" * 16)
    default = parse("model.py")
    chosen = parse("model.py", custom_executorch_input_layout="NHWC")
    assert (default.input_layout, chosen.input_layout) == ("nchw", "nhwc")
    assert "input_layout" not in default.cache_fields() and chosen.cache_fields()["input_layout"] == "nhwc"
    job = ArtifactJob.from_options(chosen, tmp_path / "out")
    assert job.input_layout == "nhwc" and ArtifactJob.from_json(job.to_json()).input_layout == "nhwc"
    argv = lower_argv(job)
    assert argv[argv.index("--input-layout") + 1] == "nhwc"
    assert "--input-layout" not in lower_argv(ArtifactJob.from_options(default, tmp_path / "out"))
    with pytest.raises(OptionError) as e:
        parse("model.py", custom_executorch_input_layout="hwc")
    assert str(e.value).startswith("custom_executorch_input_layout = hwc: unknown value; use "
                                   "`custom_executorch_input_layout = nchw`")
    assert "`custom_executorch_input_layout = nhwc`" in str(e.value)
    with pytest.raises(OptionError, match=r"^custom_executorch_input_layout = nhwc: a ready \.pte's input "
                                          r"layout is fixed"):
        parse("model.pte", custom_executorch_input_layout="nhwc")


def test_cli_names_its_flag(tmp_path: Path) -> None:
    import io

    from executorch_espnn import cli

    (tmp_path / "m.py").write_text(MODEL_PY)
    err = io.StringIO()
    argv = ["build", str(tmp_path / "m.py"), "--out", str(tmp_path / "o"), "--input-layout", "hwc"]
    assert cli.main(argv, io.StringIO(), err) == 1
    assert err.getvalue().startswith('error: --input-layout hwc: unknown input layout; use "nchw"')


# --- the whole PlatformIO route, host board ---------------------------------------------------
#
# A camera-style app: RGB bytes in H, W, C order go straight into input<int8_t>(0) of a model
# built with custom_executorch_input_layout = nhwc (and int8 I/O).  What it prints is checked
# against the same .pte on ExecuTorch's Python runtime (byte for byte) and PyTorch's quantized
# model (within 1 LSB); the build's self-test, which stores NHWC samples, must be bit-exact.

RGB_MODEL = """
import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.fc = torch.nn.Linear(16, 4)

    def forward(self, x):
        x = torch.relu(self.conv2(torch.relu(self.conv1(x))))
        return self.fc(x.mean((2, 3)))


def model():
    torch.manual_seed(0)
    return Net().eval()


def example_inputs():
    return (torch.zeros(1, 3, {size}, {size}),)


def calibration_data():
    g = torch.Generator().manual_seed(1)
    return [(torch.rand(1, 3, {size}, {size}, generator=g) * 2 - 1,) for _ in range(8)]
"""

RGB_SIZE = 16

# The camera's frame, H x W x 3 bytes, and the byte -> int8 table of the program's input (the
# model sees byte b as b / 127.5 - 1, quantized as ExecuTorch's quantize_per_tensor rounds).
RGB_SKETCH = """
#include <Arduino.h>
#include <executorch_espnn.h>
#include <math.h>

#include "model_pte.h"

static const int kSize = %(size)d;
EspnnModel model(model_pte);

void setup() {
    Serial.begin(115200);
    if (!model.begin()) { Serial.println(model.error()); return; }
    char line[192];
    model.self_test(line, sizeof line);
    Serial.println(line);
    const espnn_pte_tensor_t &in = *model.input_info(0);
    int8_t table[256];
    const float inv = 1.0f / in.scale;
    for (int b = 0; b < 256; ++b) {
        const int32_t q = (int32_t)nearbyintf(((float)b / 127.5f - 1.0f) * inv) + in.zero_point;
        table[b] = (int8_t)(q < -128 ? -128 : (q > 127 ? 127 : q));
    }
    int8_t *x = model.input<int8_t>(0);  // [1, H, W, 3]: the frame's own byte order
    if (x == nullptr) { Serial.println(model.error()); return; }
    for (int y = 0; y < kSize; ++y)
        for (int c = 0; c < kSize; ++c)
            for (int ch = 0; ch < 3; ++ch)
                x[(y * kSize + c) * 3 + ch] = table[(y * 7 + c * 13 + ch * 50) %% 256];
    if (!model.invoke()) { Serial.println(model.error()); return; }
    const int8_t *out = model.output<int8_t>(0);
    Serial.print("scores:");
    for (int k = 0; k < 4; ++k) { Serial.print(' '); Serial.print((int)out[k]); }
    Serial.println();
}

void loop() {}
"""


def _frame(size: int) -> np.ndarray:
    """The sketch's frame as [1, H, W, 3] bytes."""
    y, x, ch = np.meshgrid(np.arange(size), np.arange(size), np.arange(3), indexing="ij")
    return ((y * 7 + x * 13 + ch * 50) % 256).astype(np.uint8)[None]


def _quantize_bytes(frame: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
    """The sketch's table, in float32 step by step as the C code computes it."""
    f = frame.astype(np.float32) / np.float32(127.5) - np.float32(1.0)
    q = np.rint(f * (np.float32(1.0) / np.float32(scale))).astype(np.int32) + zero_point
    return np.clip(q, -128, 127).astype(np.int8)


@pytest.mark.slow
def test_platformio_host_build_takes_camera_bytes_in_nhwc(tmp_path: Path) -> None:
    import json
    import re

    from devkit import pio_helpers as h
    from executorch_espnn.modelfile import load_model_file

    core = tmp_path / "core"
    h.seed_core(core)
    proj = h.write_project(
        tmp_path / "p",
        f"""
        [env:host]
        platform = {h.platform_spec()}
        board = host
        framework = arduino
        custom_executorch_model = model.py
        custom_executorch_input_layout = nhwc
        custom_executorch_io = int8
        custom_executorch_selftest = 2
        """,
        {"src/main.cpp": RGB_SKETCH % {"size": RGB_SIZE}, "model.py": RGB_MODEL.format(size=RGB_SIZE)},
    )
    r = h.pio(core, proj, "run", "-e", "host", "-t", "exec", timeout=1200).check()
    out = proj / ".pio" / "build" / "host" / "executorch"
    info = json.loads((out / "model_info.json").read_text())
    (inp,) = info["pte"]["inputs"]
    assert inp["dtype_name"] == "int8" and inp["dims"] == [1, RGB_SIZE, RGB_SIZE, 3]
    header = (out / "espnn_model" / "model_pte.h").read_text()
    assert f"int8 [1, {RGB_SIZE}, {RGB_SIZE}, 3], layout NHWC" in header
    assert "the delegate reads it in the program's storage (no copy)" in header
    assert '#define ESPNN_MODEL_INPUT0_LAYOUT "NHWC"' in header
    assert re.search(r"^selftest: 2/2 bit-exact", r.stdout, re.M), r.stdout[-2000:]
    printed = np.array([int(v) for v in re.findall(r"^scores:(.*)$", r.stdout, re.M)[0].split()])

    # the build's .pte, lowered again here the way the build did (host board: esp32s3)
    src = load_model_file(proj / "model.py")
    low = ee.lower(src.model, src.example_inputs, src.calibration, target="esp32s3", io="int8",
                   input_layout="nhwc")
    pte = (out / "model.pte").read_bytes()
    assert low.pte == pte, "the build's lowering is not reproducible"
    q = _quantize_bytes(_frame(RGB_SIZE), inp["scale"], inp["zero_point"])
    np.testing.assert_array_equal(printed, host.run(pte, [q])[0].reshape(-1))
    # PyTorch's quantized model of the NCHW model, fed the same values transposed
    (o,) = info["pte"]["outputs"]
    x = torch.from_numpy(((q.astype(np.float32) - inp["zero_point"]) * np.float32(inp["scale"]))
                         .transpose(0, 3, 1, 2).copy())
    nchw = ee.lower(src.model, src.example_inputs, src.calibration, target="esp32s3")
    with torch.no_grad():
        want = nchw.quantized_program.module()(x).numpy().reshape(-1)
    got = (printed - o["zero_point"]) * o["scale"]
    assert np.max(np.abs(got - want)) <= o["scale"] * 1.0001, (got, want)
