"""custom_executorch_storage = partition with real `pio`: the host board end to end (build, run
model A, retrain, `pio run -t uploadmodel`, run model B without relinking, a model of another
I/O refused), the ESP boards' partition table and uploadmodel command against the stand-in
espressif32, and the upload itself against esp32-mock-bootloader (esptool over a socket).

Golden outputs come from executorch_espnn.host.run on the very .pte the build wrote (ExecuTorch's
Python runtime with the delegate), never from the program under test.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from devkit import pio_helpers as h
from executorch_espnn import model_image as mi

MODEL = """
import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear({n_in}, 16)
        self.fc2 = torch.nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def model():
    torch.manual_seed({seed})
    return Net().eval()


def example_inputs():
    return (torch.randn(1, {n_in}),)


def calibration_data():
    g = torch.Generator().manual_seed(1)
    return [(torch.randn(1, {n_in}, generator=g),) for _ in range(8)]
"""

SKETCH = """
#include <Arduino.h>
#include <executorch_espnn.h>
#include "model_pte.h"

static EspnnModel model(model_pte);

void setup() {
    if (!model.begin()) {
        Serial.printf("begin failed: %s\\n", model.error());
        return;
    }
    float *x = model.input<float>(0);
    for (size_t i = 0; i < model.input_numel(0); ++i) {
        x[i] = (float)((int)(i * 7 % 11) - 5) * 0.25f;
    }
    if (!model.invoke()) {
        Serial.printf("invoke failed: %s\\n", model.error());
        return;
    }
    const float *y = model.output<float>(0);
    Serial.print("output:");
    for (size_t i = 0; i < model.output_numel(0); ++i) {
        Serial.printf(" %.9g", (double)y[i]);
    }
    Serial.println();
}

void loop() {}
"""


def _input(n: int) -> np.ndarray:
    return np.array([[((i * 7 % 11) - 5) * 0.25 for i in range(n)]], dtype=np.float32)


def _outputs(text: str) -> np.ndarray:
    m = re.search(r"^output:(.*)$", text, re.M)
    assert m is not None, text[-3000:]
    return np.array([float(v) for v in m.group(1).split()], dtype=np.float32)


def _golden(pte: bytes, n_in: int) -> np.ndarray:
    from executorch_espnn import host

    return np.asarray(host.run(pte, [_input(n_in)])[0], dtype=np.float32).ravel()


@pytest.fixture(scope="module")
def host_core(tmp_path_factory: pytest.TempPathFactory) -> Path:
    c = tmp_path_factory.mktemp("core")
    h.seed_core(c)
    return c


@pytest.mark.slow
def test_host_uploadmodel_runs_a_new_model_without_relinking(host_core: Path, tmp_path: Path) -> None:
    proj = h.write_project(tmp_path / "p", f"""
        [env:host]
        platform = {h.platform_spec()}
        board = host
        framework = arduino
        custom_executorch_model = model.py
        custom_executorch_storage = partition
        """, {"src/main.cpp": SKETCH, "model.py": MODEL.format(seed=0, n_in=8)})
    build = proj / ".pio" / "build" / "host"
    out = build / "executorch"
    program = build / "program"

    r = h.pio(host_core, proj, "run", "-e", "host", timeout=900).check()
    assert "in partition 'espnn_model'" in r.output and "pio run -t uploadmodel" in r.output
    header = (out / "espnn_model" / "model_pte.h").read_bytes()
    assert b"espnn_model_pte_data" not in header and not (out / "espnn_model" / "model_pte_data.S").exists()
    # no model written yet: the program says how to write it
    run = subprocess.run([str(program)], capture_output=True, text=True, timeout=120)
    assert "begin failed: cannot open the model partition file" in run.stdout, run.stdout
    assert "pio run -t uploadmodel" in run.stdout

    h.pio(host_core, proj, "run", "-e", "host", "-t", "uploadmodel", timeout=600).check()
    pte_a = (out / "model.pte").read_bytes()
    image_a = (out / "model.img").read_bytes()
    assert (out / mi.HOST_PARTITION_FILE).read_bytes() == image_a
    assert mi.read(image_a).pte == pte_a
    r = h.pio(host_core, proj, "run", "-e", "host", "-t", "exec", timeout=600).check()
    y_a = _outputs(r.stdout)
    np.testing.assert_array_equal(y_a, _golden(pte_a, 8))
    linked = (program.read_bytes(), program.stat().st_mtime_ns)

    # model B: same I/O, other weights -> only the partition changes
    (proj / "model.py").write_text(MODEL.format(seed=1, n_in=8))
    r = h.pio(host_core, proj, "run", "-e", "host", "-t", "uploadmodel", timeout=900).check()
    assert "lowering model.py" in r.output
    pte_b = (out / "model.pte").read_bytes()
    assert pte_b != pte_a
    assert (out / "espnn_model" / "model_pte.h").read_bytes() == header  # same header bytes
    assert (out / mi.HOST_PARTITION_FILE).read_bytes() == (out / "model.img").read_bytes()
    r = h.pio(host_core, proj, "run", "-e", "host", "-t", "exec", timeout=600).check()
    assert (program.read_bytes(), program.stat().st_mtime_ns) == linked  # not rebuilt, not relinked
    y_b = _outputs(r.stdout)
    np.testing.assert_array_equal(y_b, _golden(pte_b, 8))
    assert not np.array_equal(y_a, y_b)

    # a model of another I/O signature: the unchanged program refuses it, naming both
    (proj / "model.py").write_text(MODEL.format(seed=1, n_in=6))
    h.pio(host_core, proj, "run", "-e", "host", "-t", "uploadmodel", timeout=900).check()
    run = subprocess.run([str(program)], capture_output=True, text=True, timeout=120)
    line = next(ln for ln in run.stdout.splitlines() if ln.startswith("begin failed"))
    assert "float32[1,6]" in line and "float32[1,8]" in line, line
    assert "pio run -t uploadmodel" in line
    # a corrupt partition file: refused with the reason, never a crash
    part = out / mi.HOST_PARTITION_FILE
    blob = bytearray(image_a)
    blob[mi.HEADER_SIZE + 100] ^= 0x10
    part.write_bytes(bytes(blob))
    run = subprocess.run([str(program)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and "sha256" in run.stdout and "begin failed" in run.stdout, run.stdout
    # ESPNN_MODEL_PARTITION_FILE points the program at another file
    alt = tmp_path / "alt.bin"
    alt.write_bytes(image_a)
    run = subprocess.run([str(program)], capture_output=True, text=True, timeout=120,
                         env={"ESPNN_MODEL_PARTITION_FILE": str(alt), "PATH": "/usr/bin:/bin"})
    np.testing.assert_array_equal(_outputs(run.stdout), y_a)
    assert json.loads((out / "model_info.json").read_text())["storage"]["label"] == "espnn_model"
