"""The host board with real `pio`: plain Arduino sketches and ESP-IDF apps on the compatibility
layer, `pio test` with a custom runner, and the options' one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from devkit import pio_helpers as h

SKETCH = """
#include <Arduino.h>

static int calls = 0;

void setup() {
    Serial.begin(115200);
    Serial.println("setup");
    String s = String("v=") + String(42) + " h=" + String(255, HEX);
    Serial.println(s);
    Serial.println(3.14159, 3);
    Serial.println(2.5f);
    int8_t q = -5;
    uint8_t u = 200;
    Serial.print(q); Serial.print(' '); Serial.println(u);
    Serial.printf("%s-%d\\n", "fmt", 7);
    unsigned long t0 = millis();
    delay(20);
    Serial.println(millis() - t0 >= 20 ? "delay ok" : "delay short");
}

void loop() { Serial.print("loop "); Serial.println(++calls); }
"""

IDF_APP = """
#include <stdio.h>
#include "esp_log.h"
#include "esp_timer.h"
#include "freertos/FreeRTOS.h"
#include "freertos/task.h"

extern "C" void app_main(void) {
    int64_t t0 = esp_timer_get_time();
    vTaskDelay(pdMS_TO_TICKS(10));
    ESP_LOGI("app", "waited %s", esp_timer_get_time() - t0 >= 10000 ? "enough" : "too little");
}
"""


@pytest.fixture(scope="module")
def core(tmp_path_factory: pytest.TempPathFactory) -> Path:
    c = tmp_path_factory.mktemp("core")
    h.seed_core(c)
    h.seed_core(c)  # idempotent: a second run leaves the seeded package alone
    return c


def _project(tmp: Path, ini_extra: str = "", files: dict[str, str] | None = None,
             framework: str = "arduino") -> Path:
    return h.write_project(
        tmp,
        f"""
        [env:host]
        platform = {h.platform_spec()}
        board = host
        framework = {framework}
        {ini_extra}
        """,
        files if files is not None else {"src/main.cpp": SKETCH},
    )


def test_seed_script_lays_out_tool_scons(core: Path) -> None:
    pkg = core / "packages" / "tool-scons"
    assert (pkg / "SCons" / "Script" / "__init__.py").is_file()
    assert '"version": "4.41101.0"' in (pkg / "package.json").read_text()
    assert '"owner": "platformio"' in (pkg / ".piopm").read_text()


@pytest.mark.slow
def test_arduino_sketch_runs_unchanged_on_host(core: Path, tmp_path: Path) -> None:
    proj = _project(tmp_path / "p")
    r = h.pio(core, proj, "run", "-e", "host", "-t", "exec", timeout=300).check()
    out = r.stdout
    for expected in ("setup\n", "v=42 h=FF\n", "3.142\n", "2.50\n", "-5 200\n", "fmt-7\n",
                     "delay ok\n", "loop 1\n"):
        assert expected in out, expected
    assert "loop 2" not in out  # one loop() by default so `exec` terminates
    r = h.pio(core, proj, "run", "-e", "host", "-t", "exec", "-a", "--loops 3", timeout=300).check()
    assert "loop 3\n" in r.stdout and "loop 4" not in r.stdout
    assert sorted(p.name for p in proj.iterdir()) == [".pio", "platformio.ini", "src"]


@pytest.mark.slow
def test_espidf_app_main_on_host(core: Path, tmp_path: Path) -> None:
    proj = _project(tmp_path / "p", files={"src/main.cpp": IDF_APP}, framework="espidf")
    r = h.pio(core, proj, "run", "-e", "host", "-t", "exec", timeout=300).check()
    assert "app: waited enough" in r.stdout


TEST_MAIN = """
#include <Arduino.h>
static void check(const char *name, bool ok) { Serial.printf("%s %s\\n", ok ? "PASS" : "FAIL", name); }
void setup() {
    check("millis_monotonic", millis() <= millis());
    check("map", map(5, 0, 10, 0, 100) == 50);
    check("constrain", constrain(12, 0, 10) == 10);
    Serial.println("END");
}
void loop() {}
"""

RUNNER = """
from platformio.public import TestCase, TestRunnerBase, TestStatus


class CustomTestRunner(TestRunnerBase):
    def on_testing_line_output(self, line):
        print(line, end="")
        line = line.strip()
        if line.startswith(("PASS ", "FAIL ")):
            status, name = line.split(" ", 1)
            self.test_suite.add_case(TestCase(
                name=name, status=TestStatus.PASSED if status == "PASS" else TestStatus.FAILED))
        elif line == "END":
            self.test_suite.on_finish()
"""


@pytest.mark.slow
def test_pio_test_runs_on_host(core: Path, tmp_path: Path) -> None:
    proj = _project(
        tmp_path / "p",
        "test_framework = custom",
        {"src/main.cpp": SKETCH, "test/test_basics/main.cpp": TEST_MAIN,
         "test/test_custom_runner.py": RUNNER},
    )
    r = h.pio(core, proj, "test", "-e", "host", timeout=300)
    assert r.returncode == 0, r.output[-4000:]
    assert "3 test cases: 3 succeeded" in r.output


# --- the options' errors: one line naming the option and the fix -----------------------------

MODEL_PY = """
import torch

def model():
    return torch.nn.Linear(4, 2)

def example_inputs():
    return (torch.randn(1, 4),)
"""


@pytest.mark.parametrize(
    ("ini", "files", "expected"),
    [
        ("custom_executorch_modle = model.py", {},
         "custom_executorch_modle: unknown option; the executorch options are custom_executorch_model"),
        ("custom_executorch_model = missing.py", {},
         "custom_executorch_model = missing.py: file not found"),
        ("custom_executorch_model = model.py\n        custom_executorch_strict = maybe",
         {"model.py": MODEL_PY},
         "custom_executorch_strict = maybe: unknown value; use `custom_executorch_strict = yes` or "
         "`custom_executorch_strict = no`"),
        ("custom_executorch_model = model.py\n        custom_executorch_target = esp8266",
         {"model.py": MODEL_PY},
         "custom_executorch_target = esp8266: unknown target; use one of esp32, esp32s2, esp32s3, "
         "esp32c3, esp32c6, esp32p4"),
        ("custom_executorch_model = nomodel.py", {"nomodel.py": "import torch\ndef example_inputs():\n    return ()\n"},
         "custom_executorch_model = nomodel.py: the file defines no model(); add `def model():`"),
        ("custom_executorch_model = model.onnx", {"model.onnx": "x"},
         "custom_executorch_model = model.onnx: unsupported file type '.onnx'"),
        ("custom_executorch_model = model.py\n        custom_executorch_calibration = calib.csv",
         {"model.py": MODEL_PY, "calib.csv": "1,2"},
         "custom_executorch_calibration = calib.csv: expected a .npz file"),
        ("custom_executorch_calibration = calib.npz", {"calib.npz": ""},
         "custom_executorch_calibration is set but custom_executorch_model is not"),
        ("custom_executorch_model = model.py\n        custom_executorch_selftest = -2",
         {"model.py": MODEL_PY},
         "custom_executorch_selftest = -2: a negative number of samples; give a whole number, e.g. "
         "`custom_executorch_selftest = 4`"),
    ],
    ids=["unknown-option", "missing-file", "bad-strict", "bad-target", "no-model-fn", "bad-suffix",
         "calib-suffix", "calib-without-model", "bad-selftest"],
)
def test_option_errors_stop_the_build_with_one_line(
    core: Path, tmp_path: Path, ini: str, files: dict[str, str], expected: str
) -> None:
    proj = _project(tmp_path / "p", ini, {"src/main.cpp": SKETCH, **files})
    r = h.pio(core, proj, "run", "-e", "host", timeout=120)
    assert r.returncode != 0
    errors = r.error_lines()
    assert len(errors) == 1, r.output[-3000:]
    assert expected in errors[0], errors[0]
    assert "Traceback" not in r.output
    assert not (proj / ".pio" / "build" / "host" / "executorch" / "model.pte").exists()


STRICT_MODEL_PY = """
import torch

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x):
        return torch.cumsum(self.fc(x), dim=1)  # cumsum has no ESP-NN lowering

def model():
    return Net()

def example_inputs():
    return (torch.randn(1, 4),)
"""


@pytest.mark.slow
def test_strict_build_with_a_cpu_operator_stops_naming_it(core: Path, tmp_path: Path) -> None:
    proj = _project(tmp_path / "p", "custom_executorch_model = model.py\n        custom_executorch_strict = yes",
                    {"src/main.cpp": SKETCH, "model.py": STRICT_MODEL_PY})
    r = h.pio(core, proj, "run", "-e", "host", timeout=600)
    assert r.returncode != 0
    errors = r.error_lines()
    assert len(errors) == 1, r.output[-3000:]
    # the one error line names the option and the fix; the lowering's own message above it
    # names the operator and why it stays on the CPU
    assert "custom_executorch_strict = no" in errors[0], errors[0]
    assert "aten.cumsum.default" in r.output and "no ESP-NN lowering" in r.output, r.output[-3000:]
    assert "Traceback" not in r.output
    assert not (proj / ".pio" / "build" / "host" / "executorch" / "model.pte").exists()
