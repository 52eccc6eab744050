"""int8 program I/O (``lower(..., io="int8")``, ``--io int8``, ``custom_executorch_io = int8``).

The golden values come from the float route of the same model with the same calibration: the
int8 route's output must equal quantize(float route's output) with the output's scale and zero
point, bit for bit, on inputs quantized with the input's scale and zero point (the float route's
delegate quantizes them the same way inside the payload).  Both programs run on the C engine
through ExecuTorch's runtime (``executorch_espnn.host.run``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import executorch_espnn as ee
from executorch_espnn.errors import LoweringError, OptionValueError
from executorch_espnn.lowering import LoweredModel
from executorch_espnn.payload import Storage, decode
from executorch_espnn.payload.format import NO_HOME
from executorch_espnn.pte import delegate_payloads, read_program


def quantize(x: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
    """ExecuTorch's quantize_per_tensor in float32: rint(x * (1/scale)) + zero point."""
    inv = np.float32(1.0) / np.float32(scale)
    return np.clip(np.rint(x.astype(np.float32) * inv) + zero_point, -128, 127).astype(np.int8)


def on_grid(y: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
    """A dequantized float output back on its int8 grid (exact: y = (q - zp) * scale)."""
    return np.clip(np.rint(y.astype(np.float64) / np.float32(scale)) + zero_point, -128, 127).astype(np.int8)


@dataclass
class Pair:
    name: str
    float_route: LoweredModel
    int8_route: LoweredModel
    inputs: list[tuple[torch.Tensor, ...]]


def _pair(name: str, model: torch.nn.Module, shape: tuple[int, ...], seed: int) -> Pair:
    g = torch.Generator().manual_seed(seed)
    cal = [(torch.randn(shape, generator=g),) for _ in range(8)]
    tests = [(torch.randn(shape, generator=g),) for _ in range(3)]
    model.eval()
    f = ee.lower(model, cal[0], calibration=cal, target="esp32s3")
    i = ee.lower(model, cal[0], calibration=cal, target="esp32s3", io="int8")
    return Pair(name, f, i, tests)


def _tiny_models() -> dict[str, tuple[torch.nn.Module, tuple[int, ...]]]:
    torch.manual_seed(7)
    return {
        # flat input and output: the delegate reads and writes the program's storage
        "mlp": (torch.nn.Sequential(torch.nn.Linear(24, 16), torch.nn.ReLU(), torch.nn.Linear(16, 5)), (1, 24)),
        # C == 1 in, C == 1 out: NHWC has the NCHW bytes, in place both ways
        "conv_c1": (torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3, padding=1), torch.nn.ReLU(),
                                        torch.nn.Conv2d(4, 1, 1)), (1, 1, 6, 5)),
        # C == 3 in: one transposing copy NCHW -> NHWC; H == W == 1 before the flat output
        "conv_c3": (torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, stride=2), torch.nn.ReLU(),
                                        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
                                        torch.nn.Linear(8, 4)), (1, 3, 9, 9)),
    }


@pytest.fixture(scope="module")
def pairs() -> dict[str, Pair]:
    return {name: _pair(name, m, shape, 11 + k) for k, (name, (m, shape)) in enumerate(_tiny_models().items())}


def check_bit_exact(p: Pair) -> None:
    from executorch_espnn import host

    f, i = p.float_route, p.int8_route
    assert [t.dtype for t in i.inputs + i.outputs] == ["int8"] * (len(i.inputs) + len(i.outputs))
    for tf, ti in zip(f.inputs + f.outputs, i.inputs + i.outputs, strict=True):
        # the same calibration gives the same quantization; int8 I/O states it as its own
        assert ti.quantized_by == "program" and tf.quantized_by == "delegate"
        assert (ti.scale, ti.zero_point, ti.shape) == (tf.scale, tf.zero_point, tf.shape)
    for x in p.inputs:
        xs = [t.numpy() for t in x]
        ys = host.run(f.pte, xs)
        qx = [quantize(v, t.scale or 0.0, t.zero_point or 0) for v, t in zip(xs, i.inputs, strict=True)]
        qy = host.run(i.pte, qx)
        for y, q, t in zip(ys, qy, i.outputs, strict=True):
            assert q.dtype == np.int8 and q.shape == y.shape
            np.testing.assert_array_equal(q, on_grid(y, t.scale or 0.0, t.zero_point or 0))


@pytest.mark.parametrize("name", ["mlp", "conv_c1", "conv_c3"])
def test_int8_route_is_bit_exact_with_the_float_routes_int8_values(pairs: dict[str, Pair], name: str) -> None:
    check_bit_exact(pairs[name])


def _io_storage(lm: LoweredModel) -> list[Any]:
    (payload,) = delegate_payloads(lm.pte)
    return [decode(payload)]


def test_layout_decides_in_place_or_one_transposing_copy(pairs: dict[str, Pair]) -> None:
    access = {n: ([t.access for t in p.int8_route.inputs], [t.access for t in p.int8_route.outputs])
              for n, p in pairs.items()}
    assert access == {
        "mlp": (["in place"], ["in place"]),
        "conv_c1": (["in place"], ["in place"]),
        "conv_c3": (["transposed copy"], ["in place"]),
    }
    # conv_c1: the payload's io tensors are the program's bytes in NHWC order (unit dims moved)
    (p,) = _io_storage(pairs["conv_c1"].int8_route)
    t_in, t_out = p.tensors[p.inputs[0]], p.tensors[p.outputs[0]]
    assert (t_in.storage, t_in.dims) == (Storage.INPUT, (1, 6, 5, 1))
    assert (t_out.storage, t_out.dims) == (Storage.OUTPUT, (1, 6, 5, 1))
    # no op copies the input: the first conv reads the io tensor itself
    assert p.ops[0].inputs[0] == p.inputs[0] and p.ops[-1].output == p.outputs[0]
    for n, pair in pairs.items():
        assert pair.int8_route.inputs[0].layout == ("NCHW" if n.startswith("conv") else "contiguous")


def test_the_program_io_lives_in_the_arena_and_executorch_plans_none(pairs: dict[str, Pair]) -> None:
    """The default (io_arena): each program input and output has a home in the one delegate's
    arena (payload 2.4) and ExecuTorch plans no memory for it."""
    for p in pairs.values():
        for route in (p.float_route, p.int8_route):
            assert sum(read_program(route.pte).planned_buffers) == 0 == route.report.planned_bytes, p.name
            (payload,) = _io_storage(route)
            assert payload.io_homes is not None and NO_HOME not in payload.io_homes, p.name
            for tid, home in zip(payload.inputs + payload.outputs, payload.io_homes, strict=True):
                assert home + payload.tensors[tid].nbytes <= payload.arena_size


def test_planned_memory_drops_by_the_io_bytes() -> None:
    """io_arena=False: ExecuTorch's plan of these programs holds only their I/O (each tensor
    16-byte aligned by its memory planner): int8 I/O plans a quarter of the float bytes.  The
    program's own numbers: its planned buffers and its I/O tensor declarations."""
    def aligned(n: int) -> int:
        return (n + 15) // 16 * 16

    model, shape = _tiny_models()["mlp"]
    cal = [(torch.randn(shape, generator=torch.Generator().manual_seed(5)),)]
    f, i = (ee.lower(model.eval(), cal[0], calibration=cal, io=io, io_arena=False) for io in ("float", "int8"))
    info_f, info_i = read_program(f.pte), read_program(i.pte)
    io_f = sum(aligned(d.numel * 4) for d in info_f.inputs + info_f.outputs)
    io_i = sum(aligned(d.numel) for d in info_i.inputs + info_i.outputs)
    assert [d.dtype for d in info_i.inputs + info_i.outputs] == ["int8"] * 2
    planned_f, planned_i = sum(info_f.planned_buffers), sum(info_i.planned_buffers)
    assert (f.report.planned_bytes, i.report.planned_bytes) == (planned_f, planned_i)
    assert (planned_f, planned_i) == (io_f, io_i)
    assert planned_f - planned_i == io_f - io_i > 0
    assert all(decode(d).io_homes is None for d in delegate_payloads(f.pte) + delegate_payloads(i.pte))


def test_report_text_states_int8_program_io(pairs: dict[str, Pair]) -> None:
    text = str(pairs["conv_c3"].int8_route.report)
    t = pairs["conv_c3"].int8_route.inputs[0]
    assert f"int8 program I/O: scale {t.scale:.6g}, zero point {t.zero_point}" in text
    assert "delegate: transposed copy" in text


def test_selftest_with_int8_io_stores_the_programs_own_values() -> None:
    torch.manual_seed(3)
    m = torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.ReLU(), torch.nn.Linear(4, 3)).eval()
    cal = [(torch.randn(1, 6),) for _ in range(4)]
    lm = ee.lower(m, cal[0], calibration=cal, io="int8", selftest=2)
    assert lm.selftest is not None
    (inp,), (exp,) = lm.selftest.inputs, lm.selftest.expected
    assert (inp.dtype, inp.scale, exp.dtype, exp.scale) == ("int8", 0.0, "int8", 0.0)
    t = lm.inputs[0]
    np.testing.assert_array_equal(inp.values[0], quantize(cal[0][0].numpy(), t.scale or 0.0, t.zero_point or 0))
    from executorch_espnn import host

    np.testing.assert_array_equal(host.run(lm.pte, [inp.values[1]])[0], exp.values[1])


# --- bad values and inputs/outputs with no int8 form ------------------------------------------


def test_unknown_io_value_names_the_choices() -> None:
    m = torch.nn.Linear(4, 2)
    with pytest.raises(OptionValueError) as e:
        ee.lower(m, (torch.randn(1, 4),), io="int16")
    msg = str(e.value)
    assert msg.startswith("io=int16: unknown program I/O") and '"float"' in msg and '"int8"' in msg
    with pytest.raises(OptionValueError, match=r"io=8: unknown program I/O"):
        ee.lower(m, (torch.randn(1, 4),), io=8)  # type: ignore[arg-type]


def test_cli_io_option(tmp_path: Path) -> None:
    import io as _io

    from executorch_espnn import cli

    err = _io.StringIO()
    rc = cli.main(["build", "model.py", "--out", str(tmp_path), "--io", "int4"], out=_io.StringIO(), err=err)
    assert rc == 1 and err.getvalue().startswith("error: --io int4: unknown program I/O; use \"float\"")


class _IndexInput(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        return torch.index_select(self.fc(x), 1, idx)


def test_an_index_input_has_no_int8_form() -> None:
    x, idx = torch.randn(1, 8), torch.tensor([0, 3, 5])
    with pytest.raises(LoweringError) as e:
        ee.lower(_IndexInput().eval(), (x, idx), io="int8")
    msg = str(e.value)
    assert "input 1 (idx, torch.int64) is not quantized" in msg
    assert 'Lower this model with io="float"' in msg
    # the float route still lowers it
    assert ee.lower(_IndexInput().eval(), (x, idx)).inputs[1].dtype == "int64"


class _CpuTail(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(self.fc(x), dim=1)  # no ESP-NN lowering: stays on the CPU in float


def test_a_float_output_left_on_the_cpu_has_no_int8_form() -> None:
    with pytest.raises(LoweringError) as e:
        ee.lower(_CpuTail().eval(), (torch.randn(1, 8),), io="int8")
    msg = str(e.value)
    assert "output 0 is produced by" in msg and "cumsum" in msg and "not by a dequantize_per_tensor" in msg
    assert "every output comes out of a delegated (quantized) operator" in msg


# --- end to end: the zoo through host.run -----------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("name", ["ds_cnn_kws", "resnet8", "dense_autoencoder"])
def test_zoo_int8_route_is_bit_exact(name: str) -> None:
    """ds_cnn_kws (C == 1 input, read in place), resnet8 (C == 3: one transposing copy),
    dense_autoencoder (an MLP: flat both ways)."""
    from devkit.zoo import ZOO

    z = ZOO[name]
    cal = z.calibration_data(8)
    f = ee.lower(z.model(), z.example_inputs(), calibration=cal, target="esp32s3")
    i = ee.lower(z.model(), z.example_inputs(), calibration=cal, target="esp32s3", io="int8")
    check_bit_exact(Pair(name, f, i, z.test_inputs(3)))
    assert i.inputs[0].access == ("transposed copy" if name == "resnet8" else "in place")


# --- custom_executorch_io in platformio.ini ---------------------------------------------------

MODEL_PY = "def model():\n    pass\n\ndef example_inputs():\n    pass\n"


def _parse(tmp_path: Path, model: str, **options: str) -> Any:
    from executorch_espnn.firmware.options import parse_env_options

    return parse_env_options({"custom_executorch_model": model, **options}, tmp_path, "esp32s3")


def test_platformio_io_option(tmp_path: Path) -> None:
    from executorch_espnn.firmware.options import OptionError

    (tmp_path / "model.py").write_text(MODEL_PY)
    (tmp_path / "model.pte").write_bytes(b"\0" * 16)
    default = _parse(tmp_path, "model.py")
    chosen = _parse(tmp_path, "model.py", custom_executorch_io="INT8")
    assert (default.io, chosen.io) == ("float", "int8")
    # part of the lowering's cache key: switching it lowers again
    assert default.cache_fields()["io"] == "float" and chosen.cache_fields()["io"] == "int8"
    with pytest.raises(OptionError) as e:
        _parse(tmp_path, "model.py", custom_executorch_io="uint8")
    assert str(e.value).startswith("custom_executorch_io = uint8: unknown value; use `custom_executorch_io = float`")
    assert "`custom_executorch_io = int8`" in str(e.value)
    with pytest.raises(OptionError, match=r"^custom_executorch_io = int8: a ready \.pte's inputs and outputs are fixed"):
        _parse(tmp_path, "model.pte", custom_executorch_io="int8")
    assert _parse(tmp_path, "model.pte", custom_executorch_io="float").io == "float"


def test_view_bytes_rule() -> None:
    from executorch_espnn.program_io import view_bytes

    # int8 I/O fed with bytes: the program's storage, no view; float I/O fed with bytes: numel B
    assert view_bytes(9216, "int8", "int8") == 0 and view_bytes(9216, "float32", "int8") == 9216
    assert view_bytes(12, "int8", "float32") == 48 and view_bytes(12, "float32", "float32") == 0


def test_a_ready_int8_pte_gets_its_scale_in_the_header(pairs: dict[str, Pair]) -> None:
    """custom_executorch_model = model.pte (no lowering report): the header's description of an
    int8 program tensor still carries the delegate's scale and zero point."""
    from executorch_espnn.firmware import artifact, pte_meta, render
    from executorch_espnn.firmware.model_info import POOL_FIELDS, Versions

    lm = pairs["conv_c3"].int8_route
    sizes = {k: 0 for k in POOL_FIELDS} | {"pointer_bytes": 8}
    info = render.model_info(pte_meta.read(lm.pte), artifact.io_description(lm.pte),
                             Versions("", "", "", ""), sizes).to_dict()
    (t_in,), (t_out,) = info["pte"]["inputs"], info["pte"]["outputs"]
    assert (t_in["scale"], t_in["zero_point"], t_in["access"]) == (lm.inputs[0].scale, lm.inputs[0].zero_point,
                                                                   "transposed copy")
    assert (t_out["scale"], t_out["zero_point"]) == (lm.outputs[0].scale, lm.outputs[0].zero_point)
