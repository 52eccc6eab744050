"""The command line: files written, progress, exit codes and one-line errors."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from executorch_espnn.cli import OUTPUT_FILES, main

ROOT = Path(__file__).resolve().parents[1]

GOOD = """\
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        x = torch.relu(self.conv(x))
        return self.fc(x.mean(dim=(2, 3)))

def model():
    torch.manual_seed(0)
    return Net()

def example_inputs():
    return (torch.randn(1, 3, 8, 8),)
"""


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def _model(tmp_path: Path, text: str = GOOD, name: str = "model.py") -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def _subprocess(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "executorch_espnn", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600, check=False)


# --- errors: exit code 1, one "error:" line naming the problem, nothing written ----------------


@pytest.mark.parametrize(
    ("text", "expect"),
    [
        (None, "does not exist"),
        ("import torch\ndef model(:\n", ":2: syntax error in the model file"),
        ("import torch\nimport no_such_module_abc\n", ":2: importing the model file failed: ModuleNotFoundError"),
        ("import torch\ndef example_inputs():\n    return (torch.ones(1),)\n", "defines no model() function"),
        (GOOD.replace("return Net()", "return 42"), "model() returned a int, expected a torch.nn.Module"),
        (GOOD.split("def example_inputs")[0], "defines no example_inputs() function"),
        (GOOD + "\ndef calibration_data():\n    return [(torch.randn(1, 3, 4, 4),)]\n",
         "batch 0, input 0 is a tensor of shape (1, 3, 4, 4)"),
    ],
    ids=["missing", "syntax", "import", "no-model", "not-a-module", "no-example-inputs", "calibration-shape"],
)
def test_model_file_errors(tmp_path: Path, text: str | None, expect: str) -> None:
    path = tmp_path / "model.py" if text is None else _model(tmp_path, text)
    code, _out, err = _run(["build", str(path), "--out", str(tmp_path / "out")])
    assert code == 1
    assert err.startswith("error: ") and expect in err, err
    assert "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_unknown_target(tmp_path: Path) -> None:
    code, _, err = _run(["build", str(_model(tmp_path)), "--out", str(tmp_path / "o"), "--target", "esp8266"])
    assert code == 1
    assert err.strip() == (
        "error: unknown target 'esp8266'; choose one of: generic, esp32, esp32s2, esp32s3, esp32c3, esp32c6, esp32p4"
    )


def test_npz_calibration_errors(tmp_path: Path) -> None:
    npz = tmp_path / "calib.npz"
    np.savez(npz, input0=np.zeros((4, 3, 8, 8), np.float32))  # batch axis missing
    code, _, err = _run(["build", str(_model(tmp_path)), "--out", str(tmp_path / "o"), "--calibration", str(npz)])
    assert code == 1 and "input0 has shape (4, 3, 8, 8), expected (n_batches, 1, 3, 8, 8)" in err


def test_export_failure(tmp_path: Path) -> None:
    text = GOOD.replace("x = torch.relu(self.conv(x))", "x = torch.relu(self.conv(x)) if x.sum() > 0 else x")
    code, out, err = _run(["build", str(_model(tmp_path, text)), "--out", str(tmp_path / "o")])
    assert code == 1
    assert "error: torch.export failed for Net" in err and "data-dependent" in err
    assert "[1/4] export" in out


def test_inspect_rejects_a_model_file(tmp_path: Path) -> None:
    code, _, err = _run(["inspect", str(_model(tmp_path))])
    assert code == 1 and "inspect reads a ready .pte" in err


def test_inspect_rejects_a_cpu_only_pte(tmp_path: Path) -> None:
    import torch
    from executorch.exir import to_edge_transform_and_lower

    ep = torch.export.export(torch.nn.Linear(4, 2), (torch.randn(1, 4),))
    p = tmp_path / "cpu.pte"
    p.write_bytes(to_edge_transform_and_lower(ep).to_executorch().buffer)
    code, _, err = _run(["inspect", str(p)])
    assert code == 1 and "contains no EspNNDelegateBackend delegate" in err


def test_usage_error_exits_2(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["build", str(_model(tmp_path))], out=io.StringIO(), err=io.StringIO())  # --out missing
    assert exc.value.code == 2


def test_subprocess_error_is_one_line_and_verbose_shows_traceback(tmp_path: Path) -> None:
    missing = tmp_path / "absent.py"
    r = _subprocess(["build", str(missing), "--out", "o"], tmp_path)
    assert r.returncode == 1
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("error: ")]
    assert errors == [f"error: model file {missing} does not exist; pass a .py (defining model() and "
                      "example_inputs()), a .pt2 (torch.export.save) or a .pte file"]
    assert "Traceback" not in r.stderr
    v = _subprocess(["build", str(missing), "--out", "o", "--verbose"], tmp_path)
    assert v.returncode == 1 and "Traceback" in v.stderr and "ModelFileError" in v.stderr
    assert not (tmp_path / "o").exists()


def test_outputs_listed_in_help() -> None:
    out = io.StringIO()
    with pytest.raises(SystemExit):
        sys_stdout = sys.stdout
        try:
            sys.stdout = out
            main(["build", "--help"])
        finally:
            sys.stdout = sys_stdout
    for name in OUTPUT_FILES:
        assert name in out.getvalue().replace("\n", " ")
    json.dumps(list(OUTPUT_FILES))


# --- successful builds --------------------------------------------------------------------------

ISLAND = """\
from devkit.zoo import ZOO

_Z = ZOO["island_net"]

def model():
    return _Z.model()

def example_inputs():
    return _Z.example_inputs()

def calibration_data():
    return _Z.calibration_data(2)
"""


def test_subprocess_build_writes_everything(tmp_path: Path) -> None:
    model = _model(tmp_path)
    r = _subprocess(["build", str(model), "--out", "build/out"], tmp_path)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "build" / "out"
    assert sorted(p.name for p in out.iterdir()) == sorted(OUTPUT_FILES)
    lines = r.stdout.splitlines()
    for i, stage in enumerate(("export", "quantize + calibrate", "partition + preprocess", "to_executorch"), 1):
        assert any(ln.startswith(f"[{i}/4] {stage}") and ln.endswith("...") for ln in lines), stage
        assert any(ln.startswith(f"[{i}/4] {stage}: ") and ln.endswith(" s") for ln in lines), stage
    assert any("operators on ESP-NN in 1 partition, 0 on the CPU" in ln for ln in lines)
    assert "warning: not calibrated: accuracy unknown" in r.stdout
    report = json.loads((out / "report.json").read_text())
    assert report["pte_bytes"] == (out / "model.pte").stat().st_size
    assert report["calibrated"] is False and report["n_cpu_ops"] == 0
    assert (out / "report.txt").read_text().startswith("ESP-NN lowering report (target esp32s3)")
    import yaml

    sel = yaml.safe_load((out / "selected_operators.yaml").read_text())
    assert sel["include_all_operators"] is False
    assert set(sel["operators"]) == set(report["cpu_kernels"])


@pytest.fixture(scope="module")
def island_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("island")
    model = d / "island.py"
    model.write_text(ISLAND)
    code, out, err = _run(["build", str(model), "--out", str(d / "out"), "--target", "esp32s3"])
    assert code == 0, err
    assert "[4/4] to_executorch" in out
    return d / "out"


def test_island_build_lists_cpu_kernels_for_selective_build(island_build: Path) -> None:
    import yaml

    report = json.loads((island_build / "report.json").read_text())
    assert report["calibrated"] is True and len(report["partitions"]) == 2
    assert {op["operator"] for op in report["cpu_ops"]} >= {"aten.abs.default"}
    sel = yaml.safe_load((island_build / "selected_operators.yaml").read_text())
    assert "aten::abs.out" in sel["operators"]
    assert set(sel["operators"]) == set(report["cpu_kernels"])
    assert all(k in sel["et_kernel_metadata"] for k in sel["operators"])
    text = (island_build / "report.txt").read_text()
    assert "aten.abs.default" in text and "no ESP-NN lowering" in text


def test_inspect_a_built_pte(island_build: Path) -> None:
    code, out, _ = _run(["inspect", str(island_build / "model.pte")])
    assert code == 0
    assert "2 partitions" in out and "aten::abs.out" in out
    code, out, _ = _run(["inspect", str(island_build / "model.pte"), "--json"])
    d = json.loads(out)
    built = json.loads((island_build / "report.json").read_text())
    for key in ("arena_bytes", "planned_bytes", "weights_bytes", "state_bytes", "pte_bytes", "cpu_kernels"):
        assert d[key] == built[key], key
    assert d["calibrated"] is None


def test_build_from_a_ready_pte(island_build: Path, tmp_path: Path) -> None:
    pte = tmp_path / "ready.pte"
    pte.write_bytes((island_build / "model.pte").read_bytes())
    code, out, err = _run(["build", str(pte), "--out", str(tmp_path / "o")])
    assert code == 0, err
    assert "no lowering" in out
    assert (tmp_path / "o" / "model.pte").read_bytes() == pte.read_bytes()
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == sorted(OUTPUT_FILES)
    code, _, err = _run(["build", str(pte), "--out", str(tmp_path / "s"), "--strict"])
    assert code == 1 and "--strict:" in err and "aten::abs.out" in err
    code, _, err = _run(["build", str(pte), "--out", str(tmp_path / "t"), "--target", "esp32"])
    assert code == 1 and "was built for esp32s3, not esp32; lower the model again with --target esp32" in err
    assert not (tmp_path / "s").exists() and not (tmp_path / "t").exists()


def test_strict_build_fails_naming_operators(tmp_path: Path) -> None:
    model = tmp_path / "island.py"
    model.write_text(ISLAND)
    code, _, err = _run(["build", str(model), "--out", str(tmp_path / "o"), "--strict"])
    assert code == 1 and err.startswith("error: ") and "aten.abs.default" in err
    assert not (tmp_path / "o").exists()


def test_build_a_pt2_with_npz_calibration(tmp_path: Path) -> None:
    import torch

    from executorch_espnn.modelfile import load_model_file

    src = load_model_file(_model(tmp_path))
    assert isinstance(src.model, torch.nn.Module) and src.example_inputs is not None
    pt2 = tmp_path / "net.pt2"
    torch.export.save(torch.export.export(src.model, src.example_inputs), pt2)
    npz = tmp_path / "calib.npz"
    np.savez(npz, input0=np.random.default_rng(0).standard_normal((3, 1, 3, 8, 8)).astype(np.float32))
    code, out, err = _run(["build", str(pt2), "--out", str(tmp_path / "o"), "--target", "esp32",
                           "--calibration", str(npz)])
    assert code == 0, err
    assert "[1/4] export (already exported)" in out and "warning: not calibrated" not in out
    report = json.loads((tmp_path / "o" / "report.json").read_text())
    assert report["target"] == "esp32" and report["calibrated"] is True
    assert [p["target"] for p in report["partitions"]] == ["esp32"]
    assert report["inputs"][0]["name"] == "x" and report["inputs"][0]["shape"] == [1, 3, 8, 8]
