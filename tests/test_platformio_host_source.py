"""The host board built with ExecuTorch's runtime compiled from a source tree
(`custom_executorch_runtime = source`) instead of the executorch wheel's libraries: the one
runtime source list (espnn_component/cmake/executorch_runtime.cmake) and the selected-kernel
registration, on a real compiler, running every example as the wheel's runtime runs it.

Needs EXECUTORCH_SOURCE_DIR and FLATBUFFERS_SOURCE_DIR (skipped otherwise, saying what to set);
slow (each example is lowered once and built twice).

Per example, the same embedded .pte (both envs lower the model; the two files must be equal):
- the example's own program prints the same lines (timings masked) on both runtimes;
- a probe sketch prints every output element's bits for three inputs, equal on both runtimes;
- the source-built program links no libexecutorch*.so and only the kernels its model needs, and
  a second `pio run` of it compiles, generates and links nothing.
And a model with CPU operators between two delegates (cumsum on the CPU), for the kernels.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from devkit import pio_helpers as h
from executorch_espnn import runtime_sources as rs

EXAMPLES = ("hello_world", "keyword_spotting", "person_detection_idf")

PROBE_SKETCH = r"""
// Prints the bits of every output element for three deterministic inputs.
#include <Arduino.h>
#include <executorch_espnn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "model_pte.h"

EspnnModel model(model_pte);

void setup() {
    if (!model.begin()) {
        printf("PROBE begin failed: %s\n", model.error());
        return;
    }
    for (int c = 0; c < 3; ++c) {
        for (size_t i = 0; i < model.input_count(); ++i) {
            float *x = model.input<float>(i);
            if (x == nullptr) {
                printf("PROBE input failed: %s\n", model.error());
                return;
            }
            for (size_t k = 0; k < model.input_numel(i); ++k)
                x[k] = 2.0f * sinf(0.37f * (float)(k + 1) * (float)(c + 1) + (float)i);
        }
        if (!model.invoke()) {
            printf("PROBE invoke failed: %s\n", model.error());
            return;
        }
        for (size_t o = 0; o < model.output_count(); ++o) {
            const float *y = model.output<float>(o);
            printf("PROBE case %d output %u:", c, (unsigned)o);
            for (size_t k = 0; k < model.output_numel(o); ++k) {
                uint32_t bits;
                memcpy(&bits, &y[k], sizeof bits);
                printf(" %08x", (unsigned)bits);
            }
            printf("\n");
        }
    }
}

void loop() {}
"""

ISLAND_MODEL = """
import torch


class Island(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(8, 8)
        self.b = torch.nn.Linear(8, 4)

    def forward(self, x):
        return self.b(torch.cumsum(torch.relu(self.a(x)), dim=1))


def model():
    torch.manual_seed(0)
    return Island().eval()


def example_inputs():
    return (torch.randn(1, 8),)


def calibration_data():
    g = torch.Generator().manual_seed(1)
    return [(torch.randn(1, 8, generator=g),) for _ in range(8)]
"""


@pytest.fixture(scope="module")
def trees() -> dict[str, str]:
    try:
        found = rs.find_trees()
    except Exception as exc:  # RuntimeSourcesError: its text says what to set
        pytest.skip(str(exc))
    import os

    return {rs.EXECUTORCH_SOURCE_ENV: str(found.executorch),
            rs.FLATBUFFERS_SOURCE_ENV: os.environ[rs.FLATBUFFERS_SOURCE_ENV]}


@pytest.fixture(scope="module")
def core(tmp_path_factory: pytest.TempPathFactory) -> Path:
    c = tmp_path_factory.mktemp("core")
    h.seed_core(c)
    return c


def program_output(r: h.PioResult) -> list[str]:
    """What the program printed (`pio run -t exec`), timings masked: the latencies it measures
    and ESP_LOG's timestamps are the only values that may differ."""
    lines = r.stdout.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("Executing "))
    out = []
    for ln in lines[start + 1:]:
        if ln.startswith("====="):
            break
        ln = re.sub(r"\b\d+(/\d+)* us\b", "N us", ln)  # latencies (and min/median/max)
        out.append(re.sub(r"^([EWIDV]) \(\d+\)", r"\1 (N)", ln))  # ESP_LOG's milliseconds
    return out


SOURCE_ENV = "\n[env:host_source]\nboard = host\ncustom_executorch_runtime = source\n"


def linked_libraries(program: Path) -> str:
    return subprocess.run(["ldd", str(program)], capture_output=True, text=True, check=True).stdout


def build_both(core: Path, proj: Path, trees: dict[str, str]) -> tuple[h.PioResult, h.PioResult]:
    """`host` (the wheel's runtime) and `host_source` (the same options but the runtime from
    source) each lower the model; the two .pte files must be the same bytes.  Both envs are in
    platformio.ini from the start: PlatformIO empties the build folder when the file changes."""
    with (proj / "platformio.ini").open("a") as fp:
        fp.write(SOURCE_ENV)
    wheel = h.pio(core, proj, "run", "-e", "host", "-t", "exec", timeout=2400).check()
    source = h.pio(core, proj, "run", "-e", "host_source", "-t", "exec", timeout=2400,
                   extra_env=trees).check()
    build = proj / ".pio" / "build" / "host_source"
    pte = (build / "executorch" / "model.pte").read_bytes()
    assert pte == (proj / ".pio" / "build" / "host" / "executorch" / "model.pte").read_bytes()
    assert (build / "libexecutorch_runtime.a").is_file() and (build / "libexecutorch_kernels.a").is_file()
    assert "libexecutorch" not in linked_libraries(build / "program")
    assert "libexecutorch.so" in linked_libraries(proj / ".pio" / "build" / "host" / "program")
    # a no-op build of the source env compiles and generates nothing
    again = h.pio(core, proj, "run", "-e", "host_source", timeout=600, extra_env=trees).check()
    for word in ("Compiling", "Generating the ExecuTorch schema headers", "Linking",
                 "registered for the firmware"):
        assert word not in again.output, again.output[-3000:]
    return wheel, source


def probe_project(root: Path, model_ini: str) -> Path:
    return h.write_project(root, f"""
        [env]
        platform = {h.platform_spec()}
        framework = arduino
        custom_executorch_model = {model_ini}

        [env:host]
        board = host
        """, {"src/main.cpp": PROBE_SKETCH})


def probe(core: Path, root: Path, model: Path, trees: dict[str, str]) -> tuple[list[str], Path]:
    """The probe's lines on the wheel's runtime and on the runtime from source (equal)."""
    proj = probe_project(root, str(model))
    wheel, source = build_both(core, proj, trees)
    lines = [ln for ln in program_output(wheel) if ln.startswith("PROBE ")]
    assert lines and all(" case " in ln for ln in lines), program_output(wheel)
    assert [ln for ln in program_output(source) if ln.startswith("PROBE ")] == lines
    return lines, proj / ".pio" / "build" / "host_source"


@pytest.mark.slow
@pytest.mark.parametrize("example", EXAMPLES)
def test_example_runs_bit_identically_on_the_runtime_from_source(
        core: Path, tmp_path: Path, trees: dict[str, str], example: str) -> None:
    proj = tmp_path / example
    shutil.copytree(h.example_dir(example), proj, ignore=shutil.ignore_patterns(".pio"))
    ini = proj / "platformio.ini"
    ini.write_text(ini.read_text().replace("symlink://../..", h.platform_spec()))
    wheel, source = build_both(core, proj, trees)
    printed = program_output(wheel)
    assert printed and not any("failed" in ln.lower() for ln in printed), printed
    assert program_output(source) == printed
    print(f"{example}: {len(printed)} identical lines, e.g. {printed[0]!r}")
    # the same bytes, element for element, on three more inputs
    shutil.copy(proj / ".pio" / "build" / "host" / "executorch" / "model.pte", tmp_path / "model.pte")
    lines, _ = probe(core, tmp_path / "probe", tmp_path / "model.pte", trees)
    print(f"{example}: {len(lines)} identical probe lines")


@pytest.mark.slow
def test_cpu_kernels_between_delegates_from_source(core: Path, tmp_path: Path,
                                                   trees: dict[str, str]) -> None:
    model = tmp_path / "island.py"
    model.write_text(ISLAND_MODEL)
    lines, build = probe(core, tmp_path / "island", model, trees)
    kernels = json.loads((build / "executorch" / "kernels" / "kernels.json").read_text())
    assert "aten::cumsum.out" in kernels["operators"]
    assert "kernels/portable/cpu/op_cumsum.cpp" in kernels["kernel_sources"]
    assert kernels["registered_kernels"] == len(kernels["operators"]) >= 1
    print(f"island: {kernels['operators']} on the CPU, {len(lines)} identical probe lines")
