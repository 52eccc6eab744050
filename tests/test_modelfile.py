"""Model files (.py/.pt2/.pte) and .npz calibration: what loads, and every error message."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

from executorch_espnn.errors import CalibrationError, ModelFileError, PteError
from executorch_espnn.modelfile import load_calibration_npz, load_model_file, load_weights

GOOD = """\
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        return torch.relu(self.fc(x))

def model():
    torch.manual_seed(0)
    return Net()

def example_inputs():
    return (torch.randn(1, 8),)
"""


def _write(tmp_path: Path, text: str, name: str = "model.py") -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def test_py_model_loads(tmp_path: Path) -> None:
    src = load_model_file(_write(tmp_path, GOOD))
    assert src.kind == "py"
    assert isinstance(src.model, torch.nn.Module)
    assert src.example_inputs is not None and src.example_inputs[0].shape == (1, 8)
    assert src.calibration is None and src.calibration_source is None


def test_py_calibration_data_is_materialised(tmp_path: Path) -> None:
    text = GOOD + "\ndef calibration_data():\n    for i in range(3):\n        yield (torch.full((1, 8), float(i)),)\n"
    src = load_model_file(_write(tmp_path, text))
    assert src.calibration is not None and len(src.calibration) == 3
    assert float(src.calibration[2][0][0, 0]) == 2.0
    assert src.calibration_source == "calibration_data()"


def test_py_may_import_a_sibling_helper(tmp_path: Path) -> None:
    (tmp_path / "helper_net.py").write_text("import torch\nclass H(torch.nn.Module):\n    def forward(self, x):\n        return x * 2\n")
    text = "import torch\nfrom helper_net import H\ndef model():\n    return H()\ndef example_inputs():\n    return (torch.ones(1, 2),)\n"
    src = load_model_file(_write(tmp_path, text))
    assert type(src.model).__name__ == "H"


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ModelFileError, match=r"nope\.py does not exist; pass a \.py"):
        load_model_file(tmp_path / "nope.py")


def test_directory_is_not_a_model(tmp_path: Path) -> None:
    with pytest.raises(ModelFileError, match="is a directory"):
        load_model_file(tmp_path)


def test_unknown_extension(tmp_path: Path) -> None:
    p = _write(tmp_path, "x", "model.onnx")
    with pytest.raises(ModelFileError, match=r"unsupported extension '\.onnx'; use \.py"):
        load_model_file(p)


def test_syntax_error_shows_file_and_line(tmp_path: Path) -> None:
    p = _write(tmp_path, "import torch\n\ndef model(:\n    pass\n")
    with pytest.raises(ModelFileError, match=rf"{p}:3: syntax error in the model file"):
        load_model_file(p)


def test_import_error_shows_file_and_line(tmp_path: Path) -> None:
    p = _write(tmp_path, "import torch\nimport not_a_real_module_xyz\n")
    with pytest.raises(ModelFileError, match=rf"{p}:2: importing the model file failed: ModuleNotFoundError"):
        load_model_file(p)


def test_runtime_error_at_import_shows_line(tmp_path: Path) -> None:
    p = _write(tmp_path, "x = 1\ny = x / 0\n")
    with pytest.raises(ModelFileError, match=rf"{p}:2: importing the model file failed: ZeroDivisionError"):
        load_model_file(p)


def test_no_model_function(tmp_path: Path) -> None:
    p = _write(tmp_path, "import torch\ndef example_inputs():\n    return (torch.ones(1),)\n")
    with pytest.raises(ModelFileError, match=r"defines no model\(\) function; add `def model\(\) -> torch.nn.Module`"):
        load_model_file(p)


def test_model_is_not_a_function(tmp_path: Path) -> None:
    p = _write(tmp_path, "model = 3\n")
    with pytest.raises(ModelFileError, match=r"model is a int, not a function"):
        load_model_file(p)


def test_model_returns_the_class(tmp_path: Path) -> None:
    p = _write(tmp_path, GOOD.replace("return Net()", "return Net"))
    with pytest.raises(ModelFileError, match=r"model\(\) returned a type, expected a torch.nn.Module \(return an instance"):
        load_model_file(p)


def test_model_returns_not_a_module(tmp_path: Path) -> None:
    p = _write(tmp_path, GOOD.replace("return Net()", "return {'net': Net()}"))
    with pytest.raises(ModelFileError, match=r"model\(\) returned a dict, expected a torch.nn.Module"):
        load_model_file(p)


def test_model_raises_shows_line(tmp_path: Path) -> None:
    p = _write(tmp_path, GOOD.replace("    torch.manual_seed(0)\n", "    raise RuntimeError('weights missing')\n"))
    line = 1 + GOOD.splitlines().index("    torch.manual_seed(0)")
    with pytest.raises(ModelFileError, match=rf"{p}:{line}: model\(\) raised RuntimeError: weights missing"):
        load_model_file(p)


def test_no_example_inputs(tmp_path: Path) -> None:
    p = _write(tmp_path, GOOD.split("def example_inputs")[0])
    with pytest.raises(ModelFileError, match=r"defines no example_inputs\(\) function; add `def example_inputs\(\) -> tuple`"):
        load_model_file(p)


def test_example_inputs_not_a_tuple(tmp_path: Path) -> None:
    p = _write(tmp_path, GOOD.replace("return (torch.randn(1, 8),)", "return torch.randn(1, 8)"))
    with pytest.raises(ModelFileError, match=r"must return a non-empty tuple of tensors, got a tensor of shape \(1, 8\).*wrap a single tensor as \(x,\)"):
        load_model_file(p)


def test_example_inputs_non_tensor_element(tmp_path: Path) -> None:
    p = _write(tmp_path, GOOD.replace("return (torch.randn(1, 8),)", "return (torch.randn(1, 8), 'x')"))
    with pytest.raises(ModelFileError, match=r"example_inputs\(\)\[1\] is a str"):
        load_model_file(p)


def test_calibration_wrong_shape(tmp_path: Path) -> None:
    text = GOOD + "\ndef calibration_data():\n    return [(torch.randn(1, 8),), (torch.randn(2, 8),)]\n"
    with pytest.raises(CalibrationError, match=r"batch 1, input 0 is a tensor of shape \(2, 8\).*expected a tensor of shape \(1, 8\)"):
        load_model_file(_write(tmp_path, text))


def test_calibration_wrong_arity(tmp_path: Path) -> None:
    text = GOOD + "\ndef calibration_data():\n    return [(torch.randn(1, 8), torch.randn(1, 8))]\n"
    with pytest.raises(CalibrationError, match=r"batch 0 has 2 inputs; each batch must be a tuple of 1 tensor"):
        load_model_file(_write(tmp_path, text))


def test_calibration_empty(tmp_path: Path) -> None:
    text = GOOD + "\ndef calibration_data():\n    return []\n"
    with pytest.raises(CalibrationError, match="no calibration batches"):
        load_model_file(_write(tmp_path, text))


def test_calibration_not_iterable(tmp_path: Path) -> None:
    text = GOOD + "\ndef calibration_data():\n    return 5\n"
    with pytest.raises(CalibrationError, match=r"calibration_data\(\) returned a int; return a list"):
        load_model_file(_write(tmp_path, text))


def test_calibration_generator_fails_midway(tmp_path: Path) -> None:
    text = GOOD + "\ndef calibration_data():\n    yield (torch.randn(1, 8),)\n    raise OSError('dataset gone')\n"
    p = _write(tmp_path, text)
    with pytest.raises(CalibrationError, match=rf"{p}:\d+: calibration_data\(\) raised OSError: dataset gone"):
        load_model_file(p)


# --- .npz calibration ------------------------------------------------------------------------


def test_npz_calibration(tmp_path: Path) -> None:
    data = np.arange(3 * 8, dtype=np.float64).reshape(3, 1, 8)
    npz = tmp_path / "calib.npz"
    np.savez(npz, input0=data)
    src = load_model_file(_write(tmp_path, GOOD), calibration=npz)
    assert src.calibration is not None and len(src.calibration) == 3
    assert src.calibration[1][0].dtype == torch.float32
    assert torch.equal(src.calibration[1][0], torch.from_numpy(data[1]).float())
    assert src.calibration_source == str(npz)


def test_npz_two_inputs() -> None:
    ex = (torch.zeros(1, 4), torch.zeros(2, 2, dtype=torch.int64))
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        npz = Path(d) / "c.npz"
        np.savez(npz, input0=np.ones((5, 1, 4), np.float32), input1=np.ones((5, 2, 2), np.int32))
        batches = load_calibration_npz(npz, ex)
    assert len(batches) == 5 and batches[0][1].dtype == torch.int64


@pytest.mark.parametrize(
    ("arrays", "msg"),
    [
        ({"x": np.zeros((2, 1, 8))}, r"must hold exactly input0 \(missing: \['input0'\], unexpected: \['x'\]\)"),
        ({"input0": np.zeros((1, 8))}, r"input0 has shape \(1, 8\), expected \(n_batches, 1, 8\)"),
        ({"input0": np.zeros((2, 1, 9))}, r"input0 has shape \(2, 1, 9\), expected \(n_batches, 1, 8\)"),
        ({"input0": np.zeros((0, 1, 8))}, "no calibration batches"),
        ({"input0": np.zeros((2, 1, 8), dtype=np.int32)}, "input0 has dtype int32, the model input is torch.float32"),
    ],
)
def test_npz_errors(tmp_path: Path, arrays: dict[str, np.ndarray], msg: str) -> None:
    npz = tmp_path / "calib.npz"
    np.savez(npz, **arrays)  # type: ignore[arg-type]
    with pytest.raises(CalibrationError, match=msg):
        load_model_file(_write(tmp_path, GOOD), calibration=npz)


def test_npz_batch_count_mismatch(tmp_path: Path) -> None:
    npz = tmp_path / "c.npz"
    np.savez(npz, input0=np.zeros((2, 1, 4), np.float32), input1=np.zeros((3, 1, 4), np.float32))
    with pytest.raises(CalibrationError, match="input1 has 3 batches, input0 has 2"):
        load_calibration_npz(npz, (torch.zeros(1, 4), torch.zeros(1, 4)))


def test_npz_missing_and_wrong_format(tmp_path: Path) -> None:
    with pytest.raises(CalibrationError, match=r"calib\.npz does not exist"):
        load_calibration_npz(tmp_path / "calib.npz", (torch.zeros(1),))
    bad = tmp_path / "calib.npy"
    np.save(bad, np.zeros(3))
    with pytest.raises(CalibrationError, match=r"expected an \.npz"):
        load_calibration_npz(bad, (torch.zeros(1),))
    corrupt = tmp_path / "corrupt.npz"
    corrupt.write_bytes(b"not a zip")
    with pytest.raises(CalibrationError, match=r"could not be read as \.npz"):
        load_calibration_npz(corrupt, (torch.zeros(1),))


# --- .pt2 ------------------------------------------------------------------------------------


def _save_pt2(path: Path) -> None:
    src = load_model_file(_write(path.parent, GOOD, "src_model.py"))
    assert isinstance(src.model, torch.nn.Module) and src.example_inputs is not None
    torch.export.save(torch.export.export(src.model, src.example_inputs), path)


def test_pt2_loads_with_example_inputs(tmp_path: Path) -> None:
    p = tmp_path / "m.pt2"
    _save_pt2(p)
    src = load_model_file(p)
    assert src.kind == "pt2" and isinstance(src.model, torch.export.ExportedProgram)
    assert src.example_inputs is not None and src.example_inputs[0].shape == (1, 8)


def test_pt2_with_npz_calibration(tmp_path: Path) -> None:
    p = tmp_path / "m.pt2"
    _save_pt2(p)
    npz = tmp_path / "c.npz"
    np.savez(npz, input0=np.zeros((4, 1, 8), np.float32))
    src = load_model_file(p, calibration=npz)
    assert src.calibration is not None and len(src.calibration) == 4


def test_pt2_not_an_archive(tmp_path: Path) -> None:
    p = tmp_path / "m.pt2"
    p.write_bytes(b"garbage")
    with pytest.raises(ModelFileError, match=r"is not a torch.export archive; write it with torch.export.save"):
        load_model_file(p)


# --- .pte ------------------------------------------------------------------------------------


def test_pte_rejects_calibration(tmp_path: Path) -> None:
    p = tmp_path / "m.pte"
    p.write_bytes(b"\0" * 64)
    with pytest.raises(CalibrationError, match=r"already lowered \.pte"):
        load_model_file(p, calibration=tmp_path / "c.npz")


def test_pte_garbage_raises_pte_error(tmp_path: Path) -> None:
    p = tmp_path / "m.pte"
    p.write_bytes(b"\x01\x02garbage" * 10)
    with pytest.raises(PteError):
        load_model_file(p)


def test_pte_without_our_delegate(tmp_path: Path) -> None:
    from executorch.exir import to_edge_transform_and_lower

    src = load_model_file(_write(tmp_path, GOOD))
    assert isinstance(src.model, torch.nn.Module) and src.example_inputs is not None
    prog = to_edge_transform_and_lower(torch.export.export(src.model, src.example_inputs)).to_executorch()
    p = tmp_path / "cpu_only.pte"
    p.write_bytes(prog.buffer)
    with pytest.raises(PteError, match=r"contains no EspNNDelegateBackend delegate \(found: no delegate at all\); lower the model with executorch_espnn"):
        load_model_file(p)


# --- load_weights: the trained state a model file ships as data beside it ---------------------


def _net() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(4, 3))


def test_load_weights_gives_the_saved_state_in_eval_mode(tmp_path: Path) -> None:
    saved = _net()
    torch.save(saved.state_dict(), tmp_path / "m.weights.pt")
    net = _net().train()
    got = load_weights(net, tmp_path / "m.weights.pt")
    assert got is net and not net.training
    for k, v in saved.state_dict().items():
        assert torch.equal(net.state_dict()[k], v)


def test_load_weights_missing_file_names_it_and_the_regenerate_command(tmp_path: Path) -> None:
    with pytest.raises(ModelFileError, match=r"m\.weights\.pt is missing: the trained weights Sequential "
                       r"loads: regenerate it with `python train\.py`"):
        load_weights(_net(), tmp_path / "m.weights.pt", regenerate="python train.py")


def test_load_weights_unreadable_file_says_so(tmp_path: Path) -> None:
    (tmp_path / "m.weights.pt").write_bytes(b"PK\x03\x04 truncated")
    with pytest.raises(ModelFileError, match=r"m\.weights\.pt is not a state_dict torch\.load can read"):
        load_weights(_net(), tmp_path / "m.weights.pt")


def test_load_weights_refuses_pickled_objects(tmp_path: Path) -> None:
    """weights_only: a file holding a whole pickled module is refused, never unpickled."""
    torch.save(_net(), tmp_path / "m.weights.pt")
    with pytest.raises(ModelFileError, match=r"is not a state_dict torch\.load can read \(UnpicklingError"):
        load_weights(_net(), tmp_path / "m.weights.pt")


def test_load_weights_of_another_net_names_the_mismatch(tmp_path: Path) -> None:
    torch.save(torch.nn.Sequential(torch.nn.Linear(4, 5)).state_dict(), tmp_path / "m.weights.pt")
    with pytest.raises(ModelFileError, match=r"does not fit Sequential \(the net changed since it was saved\?\).*"
                       r"size mismatch for 0\.weight.*regenerate it with `make`"):
        load_weights(_net(), tmp_path / "m.weights.pt", regenerate="make")
    torch.save([1, 2], tmp_path / "l.weights.pt")
    with pytest.raises(ModelFileError, match=r"l\.weights\.pt holds a list, not a state_dict"):
        load_weights(_net(), tmp_path / "l.weights.pt")
