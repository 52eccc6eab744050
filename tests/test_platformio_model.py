"""The model step with real `pio` and the real lowering: cached, relowered on content or option
change, broken models stop the build with one line; the generated data compiles fast.

The builds use the stand-in espressif32 (see pio_helpers): the model step is identical for every
board and this keeps these tests independent of the host runtime's compile time.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from devkit import pio_helpers as h

BROKEN = """
import torch

def model():
    raise RuntimeError("weights file went missing")

def example_inputs():
    return (torch.randn(1, 8),)
"""

LOWERING_LINE = "executorch: lowering model.py"


@pytest.fixture(scope="module")
def core(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("model")
    c = work / "core"
    h.seed_core(c)
    h.install_standin_espressif32(c, work)
    return c


def _project(root: Path, model_text: str, extra: str = "") -> Path:
    return h.write_project(
        root,
        f"""
        [env:esp32dev]
        platform = {h.platform_spec()}
        board = esp32dev
        framework = arduino
        custom_executorch_model = model.py
        {extra}
        """,
        {"src/main.cpp": "int placeholder;\n", "model.py": model_text},
    )


@pytest.mark.slow
def test_lowering_is_cached_and_reruns_on_change(core: Path, tmp_path: Path) -> None:
    proj = _project(tmp_path / "p", h.mlp_model_source(0))
    out = proj / ".pio" / "build" / "esp32dev" / "executorch"

    r = h.pio(core, proj, "run", "-e", "esp32dev", timeout=600).check()
    assert LOWERING_LINE in r.output
    assert "operators:" in r.output and "on ESP-NN" in r.output
    info = json.loads((out / "model_info.json").read_text())
    pte = (out / "model.pte").read_bytes()
    header = (out / "espnn_model" / "model_pte.h").read_text()
    import hashlib

    assert f'ESPNN_MODEL_PTE_SHA256 "{hashlib.sha256(pte).hexdigest()}"' in header
    assert f"ESPNN_MODEL_PTE_SIZE {len(pte)}u" in header
    assert info["pte"]["inputs"][0]["dims"] == [1, 8]
    assert "EspNNDelegateBackend" in info["pte"]["delegates"]

    t0 = time.monotonic()
    r = h.pio(core, proj, "run", "-e", "esp32dev", timeout=300).check()
    assert LOWERING_LINE not in r.output and "is up to date" in r.output
    assert time.monotonic() - t0 < 30

    (proj / "model.py").write_text(h.mlp_model_source(1))  # new weights
    r = h.pio(core, proj, "run", "-e", "esp32dev", timeout=600).check()
    assert LOWERING_LINE in r.output
    assert (out / "model.pte").read_bytes() != pte

    ini = proj / "platformio.ini"
    ini.write_text(ini.read_text() + "custom_executorch_target = esp32s3\n")  # an option
    r = h.pio(core, proj, "run", "-e", "esp32dev", timeout=600).check()
    assert "lowering model.py for esp32s3" in r.output
    r = h.pio(core, proj, "run", "-e", "esp32dev", timeout=300).check()
    assert LOWERING_LINE not in r.output
    assert sorted(p.name for p in proj.iterdir()) == [".pio", "model.py", "platformio.ini", "src"]


@pytest.mark.slow
def test_validation_data_puts_the_accuracy_in_the_build_summary_and_reports(core: Path, tmp_path: Path) -> None:
    """custom_executorch_validation: the build's summary prints the accuracy per output and the
    model step writes report.html beside report.txt, both with the accuracy section."""
    import numpy as np

    proj = _project(tmp_path / "p", h.mlp_model_source(0), "custom_executorch_validation = val.npz")
    g = np.random.default_rng(0)
    np.savez(proj / "val.npz", input0=g.normal(size=(10, 1, 8)).astype(np.float32), labels=g.integers(0, 4, 10))
    out = proj / ".pio" / "build" / "esp32dev" / "executorch"
    r = h.pio(core, proj, "run", "-e", "esp32dev", timeout=600).check()
    summary = [ln for ln in r.output.splitlines() if ln.startswith("  accuracy of output0 on 10 validation samples: ")]
    assert len(summary) == 1, r.output[-4000:]
    acc = json.loads((out / "report.json").read_text())["accuracy"]
    assert acc["n_samples"] == 10 and acc["labelled"]
    assert f"ESP-NN {100 * acc['outputs'][0]['top1_accuracy']['delegate']:.2f}%" in summary[0]
    assert "Accuracy on the validation file" in (out / "report.txt").read_text()
    assert 'id="accuracy"' in (out / "report.html").read_text()
    # the RAM bill beside its bound (executorch_espnn/report/ram.py), measured by the build
    ram = json.loads((out / "model_info.json").read_text())["ram"]
    assert ram["measured"] and ram["total_bytes"] == sum(ram[k] for k in (
        "arena_bytes", "state_bytes", "planned_bytes", "method_allocator_bytes", "temp_allocator_bytes"))
    bill = [ln for ln in r.output.splitlines() if ln.startswith("  RAM bill: ")]
    assert len(bill) == 1 and "lower bound" in bill[0], r.output[-4000:]
    assert "RAM bill and its lower bound" in (out / "report.txt").read_text()


@pytest.mark.slow
def test_broken_model_stops_the_build_with_one_line(core: Path, tmp_path: Path) -> None:
    proj = _project(tmp_path / "p", BROKEN)
    r = h.pio(core, proj, "run", "-e", "esp32dev", timeout=600)
    assert r.returncode != 0
    errors = r.error_lines()
    assert len(errors) == 1, r.output[-4000:]
    assert errors[0].startswith("Error: custom_executorch_model = model.py: lowering failed")
    assert "weights file went missing" in r.output  # the reason, from the lowering itself


def test_4mb_model_data_assembles_in_about_a_second(tmp_path: Path) -> None:
    """The .incbin route: no giant initializer for the compiler to parse."""
    from devkit.model_files import model_info_from
    from executorch_espnn.firmware import render

    out = tmp_path / "executorch"
    out.mkdir()
    data = bytes((i * 2654435761) & 0xFF for i in range(4 << 20))
    (out / "model.pte").write_bytes(data)
    tensor = {"name": "x", "dtype": 5, "dtype_name": "float32", "dims": [1, 8], "numel": 8,
              "nbytes": 32, "scale": 0.0, "zero_point": 0}
    info = {
        "pte": {"size": len(data), "sha256": "0" * 64, "method": "forward", "planned_bytes": 64,
                "planned_buffers": [64], "delegates": [], "inputs": [tensor], "outputs": [tensor]},
        "sizes": {k: 0 for k in ("arena_bytes", "state_bytes", "weights_bytes",
                                 "method_allocator_bytes", "temp_allocator_bytes")}
        | {"planned_bytes": 64, "pointer_bytes": 8},
        "versions": {"executorch": "1.5.1", "package": "0.1.0", "format_major": "2", "format_minor": "0"},
    }
    render.write_all(model_info_from(info), out)
    gen = out / "espnn_model"
    main = tmp_path / "main.c"
    main.write_text(
        '#include <stdio.h>\n#include "model_pte.h"\n'
        "int main(void) { printf(\"%u %u %u\\n\", (unsigned)model_pte.size, "
        "(unsigned)model_pte.data[12345], (unsigned)((unsigned long)model_pte.data % 16)); return 0; }\n"
    )
    t0 = time.monotonic()
    subprocess.run(["gcc", "-c", str(gen / "model_pte_data.S"), "-o", str(tmp_path / "d.o")], check=True)
    elapsed = time.monotonic() - t0
    subprocess.run(["gcc", "-Wall", "-Wextra", "-Werror", "-std=c11", f"-I{gen}",
                    f"-I{h.ROOT / 'espnn_component' / 'include'}", str(main), str(tmp_path / "d.o"),
                    "-o", str(tmp_path / "m")], check=True)
    got = subprocess.run([str(tmp_path / "m")], capture_output=True, text=True, check=True).stdout
    assert got.split() == [str(len(data)), str(data[12345]), "0"]
    assert elapsed < 2.0, f"assembling 4 MB took {elapsed:.2f} s"


def test_esp_summary_says_when_pools_are_64_bit_upper_bounds() -> None:
    """The build's memory line for an ESP board states when its pool figures were measured with
    8-byte pointers (upper bounds for the 32-bit chip); the host board's line does not."""
    from devkit.model_files import model_info_from
    from executorch_espnn.firmware import summary as report

    sizes = {"arena_bytes": 1024, "state_bytes": 800, "planned_bytes": 64, "weights_bytes": 0,
             "method_allocator_bytes": 368, "temp_allocator_bytes": 0}
    info = {"pte": {"size": 2048, "sha256": "0" * 64, "delegates": ["EspNNDelegateBackend"]},
            "ops": {"delegated": 3, "cpu": 0, "cpu_list": [], "partitions": 1}, "warnings": []}
    budget = report.RamBudget(needed=2256, available=300_000, source="board", policy="auto")
    note = ("  (state, method and temp allocator measured with 8-byte pointers on this computer: upper "
            "bounds for the 32-bit chip)")
    esp64 = report.summary_lines(model_info_from({**info, "sizes": {**sizes, "pointer_bytes": 8}}), budget)
    assert note in esp64
    assert note not in report.summary_lines(model_info_from({**info, "sizes": {**sizes, "pointer_bytes": 8}}),
                                            None)
    esp32 = report.summary_lines(model_info_from({**info, "sizes": {**sizes, "pointer_bytes": 4}}), budget)
    assert not [ln for ln in esp32 if "pointers" in ln]



def test_summary_says_when_the_programs_io_lives_in_the_arena() -> None:
    """With the I/O in the arena (the default lowering) the build summary tells the sketch's
    author the one rule it brings; a program whose I/O ExecuTorch plans gets no such line."""
    from devkit.model_files import model_info_from
    from executorch_espnn.firmware import summary as report

    def tensor(in_arena: bool) -> dict[str, object]:
        return {"name": "x", "dtype": 1, "dtype_name": "int8", "dims": [1, 8], "numel": 8, "nbytes": 8,
                "in_arena": in_arena, "arena_offset": 0}

    def lines(in_arena: bool) -> list[str]:
        return report.summary_lines(model_info_from({
            "pte": {"size": 64, "sha256": "0" * 64, "delegates": ["EspNNDelegateBackend"],
                    "inputs": [tensor(in_arena)], "outputs": [tensor(in_arena)]},
            "ops": {"delegated": 3, "cpu": 0, "cpu_list": [], "partitions": 1}, "warnings": []}), None)

    homed = [ln for ln in lines(True) if ln.startswith("  program I/O:")]
    assert homed == ["  program I/O: 2 of 2 tensors live in the arena (no planned memory for them): write the "
                     "inputs before every invoke(), read the outputs before the next"]
    assert not [ln for ln in lines(False) if "program I/O" in ln]

def test_header_sized_for_32_bit_refuses_a_64_bit_build(tmp_path: Path) -> None:
    """model_pte.h says which pointer size its pools were measured with; one measured on a
    32-bit target stops a 64-bit build (its pools would be too small) and states it."""
    from devkit.model_files import model_info_from
    from executorch_espnn.firmware import render

    out = tmp_path / "executorch"
    out.mkdir()
    (out / "model.pte").write_bytes(b"\0" * 64)
    tensor = {"name": "x", "dtype": 5, "dtype_name": "float32", "dims": [1, 8], "numel": 8,
              "nbytes": 32, "scale": 0.0, "zero_point": 0}
    info = {
        "pte": {"size": 64, "sha256": "0" * 64, "method": "forward", "planned_bytes": 64,
                "planned_buffers": [64], "delegates": [], "inputs": [tensor], "outputs": [tensor]},
        "sizes": {"arena_bytes": 0, "state_bytes": 392, "weights_bytes": 0, "planned_bytes": 64,
                  "method_allocator_bytes": 228, "temp_allocator_bytes": 0, "pointer_bytes": 4},
        "versions": {"executorch": "1.5.1", "package": "0.1.0", "format_major": "2", "format_minor": "0"},
    }
    render.write_all(model_info_from(info), out)
    header = (out / "espnn_model" / "model_pte.h").read_text()
    assert "measured with\n * 4-byte pointers, as a 32-bit chip uses them" in header
    main = tmp_path / "main.c"
    main.write_text('#include "model_pte.h"\nint main(void) { return (int)model_pte.size; }\n')
    cmd = ["gcc", "-std=c11", "-Wall", "-Werror", f"-I{out / 'espnn_model'}",
           f"-I{h.ROOT / 'espnn_component' / 'include'}", "-fsyntax-only", str(main)]
    r64 = subprocess.run(cmd, capture_output=True, text=True)
    assert r64.returncode != 0
    assert "model_pte.h was sized for a 32-bit target; generate it again for this 64-bit build" in r64.stderr
    r32 = subprocess.run([*cmd, "-m32"], capture_output=True, text=True)
    assert r32.returncode == 0, r32.stderr
