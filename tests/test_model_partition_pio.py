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


def test_storage_option_errors_are_one_line(host_core: Path, tmp_path: Path) -> None:
    """Both stop before any lowering: an unknown storage, and uploadmodel on an embedded env."""
    ini = f"""
        [env:host]
        platform = {h.platform_spec()}
        board = host
        framework = arduino
        custom_executorch_model = model.py
        """
    files = {"src/main.cpp": "void setup() {}\nvoid loop() {}\n", "model.py": h.mlp_model_source(0)}
    proj = h.write_project(tmp_path / "a", ini + "custom_executorch_storage = flash\n", files)
    r = h.pio(host_core, proj, "run", "-e", "host", timeout=300)
    assert r.returncode != 0 and r.error_lines() == [
        "Error: custom_executorch_storage = flash: unknown value; use `custom_executorch_storage = embedded` "
        "(the model in the app image) or `custom_executorch_storage = partition` (a flash partition of its "
        "own, written by `pio run -t uploadmodel`)"], r.output[-2000:]
    proj = h.write_project(tmp_path / "b", ini, files)
    r = h.pio(host_core, proj, "run", "-e", "host", "-t", "uploadmodel", timeout=300)
    (line,) = r.error_lines()
    assert r.returncode != 0 and "custom_executorch_storage = embedded" in line
    assert "set `custom_executorch_storage = partition`" in line and "lowering" not in r.output


@pytest.mark.slow
def test_host_uploadmodel_runs_a_new_model_without_relinking(host_core: Path, tmp_path: Path) -> None:
    proj = h.write_project(tmp_path / "p", f"""
        [env:host]
        platform = {h.platform_spec()}
        board = host
        framework = arduino
        custom_executorch_model = model.py
        custom_executorch_storage = partition
        """, {"src/main.cpp": SKETCH, "model.py": h.mlp_model_source(0)})
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
    (proj / "model.py").write_text(h.mlp_model_source(1))
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
    (proj / "model.py").write_text(h.mlp_model_source(1, n_in=6))
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


# ---- ESP boards, against the stand-in espressif32 ------------------------------------------



@pytest.fixture(scope="module")
def esp_core(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("esp")
    core = work / "core"
    h.seed_core(core)
    h.install_standin_espressif32(core, work)
    return core


@pytest.fixture(scope="module")
def esp_project(esp_core: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One project, two envs: ESP32-S3 with ESP-IDF (its default single-app table), ESP32 with
    Arduino (a project table: Arduino's default fills the 4 MB flash)."""

    root = tmp_path_factory.mktemp("esp_proj")
    h.write_plain_pte(root / "plain.pte")
    return h.write_project(root, f"""
        [env]
        platform = {h.platform_spec()}
        custom_executorch_model = plain.pte
        custom_executorch_storage = partition

        [env:s3]
        board = esp32-s3-devkitc-1
        framework = espidf
        upload_speed = 921600

        [env:esp32]
        board = esp32dev
        framework = arduino
        board_build.partitions = big_app.csv
        custom_executorch_partition_size = 256K
        """, {"src/main.cpp": "int placeholder;\n",
              "big_app.csv": "nvs, data, nvs, 0x9000, 0x5000,\notadata, data, ota, 0xe000, 0x2000,\n"
                             "app0, app, ota_0, , 3M,\n"})


def _handoff(proj: Path, env: str) -> dict[str, object]:
    return dict(json.loads((proj / ".pio" / "build" / env / "handoff.json").read_text()))


@pytest.mark.slow
def test_esp_partition_table_is_extended_and_handed_over(esp_core: Path, esp_project: Path) -> None:
    r = h.pio(esp_core, esp_project, "run", "-e", "s3", timeout=600).check()
    build = esp_project / ".pio" / "build" / "s3"
    rec = _handoff(esp_project, "s3")
    table = build / "partitions_espnn.csv"
    assert rec["partitions"] == str(table)  # espressif32 builds and flashes this table
    rows = [ln.split(",") for ln in table.read_text().splitlines() if ln and not ln.startswith("#")]
    assert [r_[0] for r_ in rows] == ["nvs", "phy_init", "factory", "espnn_model"]
    image = (build / "executorch" / "model.img").read_bytes()
    size = mi.partition_size(len(image), mi.DEFAULT_HEADROOM_PERCENT)
    # right after the 1 MB factory app (0x10000 + 1M), 64 KiB aligned, sized by the rule
    assert [c.strip() for c in rows[-1][:5]] == ["espnn_model", "data", "0x40", "0x110000", f"0x{size:x}"]
    assert "in partition 'espnn_model'" in r.output and "at 0x110000" in r.output
    # the app carries no model: no .incbin'd data, the generated component has no sources
    assert rec["flash_extra_images"] == []
    gen = build / "executorch" / "espnn_model"
    assert not (gen / "model_pte_data.S").exists()
    assert "SRCS" not in (gen / "CMakeLists.txt").read_text()
    assert "ESPNN_MODEL_STORAGE_PARTITION 1" in (gen / "model_pte.h").read_text()

    # Arduino on ESP32 with a project table and an explicit size: placed after the 3 MB app
    h.pio(esp_core, esp_project, "run", "-e", "esp32", timeout=600).check()
    table = esp_project / ".pio" / "build" / "esp32" / "partitions_espnn.csv"
    assert _handoff(esp_project, "esp32")["partitions"] == str(table)
    last = [c.strip() for c in table.read_text().splitlines()[-1].split(",")]
    assert last[:5] == ["espnn_model", "data", "0x40", "0x310000", "0x40000"]


@pytest.mark.slow
def test_esp_partition_that_does_not_fit_the_flash(esp_core: Path, esp_project: Path, tmp_path: Path) -> None:
    ini = (esp_project / "platformio.ini").read_text()
    proj = h.write_project(tmp_path / "p", ini.replace("board_build.partitions = big_app.csv\n", ""),
                           {"src/main.cpp": "int placeholder;\n"})
    (proj / "plain.pte").write_bytes((esp_project / "plain.pte").read_bytes())
    r = h.pio(esp_core, proj, "run", "-e", "esp32", timeout=600)
    assert r.returncode != 0
    errors = r.error_lines()
    assert len(errors) == 1, r.output[-3000:]
    assert "does not fit the board's 4 MB flash after the partition table default.csv" in errors[0]
    assert "board_build.partitions" in errors[0] and "custom_executorch_partition_size" in errors[0]


def _esptool(*args: str) -> subprocess.CompletedProcess[str]:
    import sys

    return subprocess.run([sys.executable, "-m", "esptool", *args], capture_output=True, text=True,
                          timeout=300)


@pytest.mark.slow
def test_uploadmodel_writes_only_the_model_partition_to_a_mock_bootloader(
        esp_core: Path, esp_project: Path) -> None:
    """esptool (the stand-in's tool-esptoolpy runs the venv's esptool 5.x with espressif32's
    4.x-style arguments) against esp32-mock-bootloader over a socket; the mock's flash is read
    back with esptool (ROM read, no stub: the mock's stub does not stream reads)."""
    from esp32_mock_bootloader import mock_bootloader

    build = esp_project / ".pio" / "build" / "s3"
    (build / "handoff.json").unlink(missing_ok=True)
    with mock_bootloader("esp32s3") as mock:
        url = mock.url()
        r = h.pio(esp_core, esp_project, "run", "-v", "-e", "s3", "-t", "uploadmodel", "--upload-port", url,
                  timeout=600).check()
        assert "Hash of data verified" in r.output  # esptool checked what the mock stored
        # the board's settings: chip, the project's upload_speed, reset modes; only that offset
        cmd = next(ln for ln in r.output.splitlines() if "esptool.py" in ln and "write_flash" in ln)
        for part in ("--chip esp32s3", f'--port "{url}"', "--baud 921600", "--before default_reset",
                     "--after hard_reset", "write_flash -z 0x110000"):
            assert part in cmd, cmd
        assert cmd.count(" 0x") == 1, cmd
        assert not (build / "handoff.json").exists()  # uploadmodel builds no app
        image = (build / "executorch" / "model.img").read_bytes()
        got = build / "readback.bin"
        rb = _esptool("--chip", "esp32s3", "--port", url, "--no-stub", "read_flash", "0x110000",
                      str(len(image)), str(got))
        assert rb.returncode == 0, rb.stdout + rb.stderr
        assert got.read_bytes() == image
        assert mi.read(got.read_bytes()).pte == (build / "executorch" / "model.pte").read_bytes()

        # a normal upload (espressif32's esptool upload: the app at 0x10000 and the extra images
        # the build handed over, none of them ours) leaves the model partition alone
        h.pio(esp_core, esp_project, "run", "-e", "s3", timeout=600).check()
        assert _handoff(esp_project, "s3")["flash_extra_images"] == []
        app = build / "fake_app.bin"
        app.write_bytes(bytes(range(256)) * 1024)  # 256 KiB stand-in for firmware.bin
        up = _esptool("--chip", "esp32s3", "--port", url, "--baud", "921600", "--before", "default_reset",
                      "--after", "hard_reset", "write_flash", "-z", "0x10000", str(app))
        assert up.returncode == 0, up.stdout + up.stderr
        rb = _esptool("--chip", "esp32s3", "--port", url, "--no-stub", "read_flash", "0x110000",
                      str(len(image)), str(got))
        assert rb.returncode == 0 and got.read_bytes() == image
