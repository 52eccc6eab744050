"""ESP boards, checked offline: the derived platform against a stand-in espressif32.

What this proves: our platform class finds the installed base through PlatformIO's package
manager, takes its boards/packages/frameworks, marks the ExecuTorch runtime package, runs the
model step, then hands the build to the base builder with our component and generated model
(ESP-IDF: as components on EXTRA_COMPONENT_DIRS; Arduino: include paths and the library), and
without the base an ESP board fails with the install command.  What it cannot prove: that the
real espressif32 6.13, ESP-IDF and Arduino-ESP32 compile and link the component.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests import pio_helpers as h

PLAIN_PTE_SCRIPT = """
import sys, torch
from executorch.exir import to_edge

class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)
    def forward(self, x):
        return torch.relu(self.fc(x))

torch.manual_seed(0)
ep = torch.export.export(M().eval(), (torch.randn(1, 4),))
open(sys.argv[1], "wb").write(to_edge(ep).to_executorch().buffer)
"""


@pytest.fixture(scope="module")
def plain_pte(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ready .pte (no delegate) made with ExecuTorch itself: the model step embeds it."""
    import subprocess
    import sys

    out = tmp_path_factory.mktemp("pte") / "plain.pte"
    subprocess.run([sys.executable, "-c", PLAIN_PTE_SCRIPT, str(out)], check=True, timeout=300,
                   capture_output=True)
    return out


@pytest.fixture(scope="module")
def core_with_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("esp")
    core = work / "core"
    h.seed_core(core)
    h.install_standin_espressif32(core, work)
    return core


def _esp_project(root: Path, pte: Path) -> Path:
    proj = h.write_project(
        root,
        f"""
        [env]
        platform = {h.platform_spec()}
        custom_executorch_model = plain.pte

        [env:esp32dev]
        board = esp32dev
        framework = arduino

        [env:esp32-s3-devkitc-1]
        board = esp32-s3-devkitc-1
        framework = espidf
        """,
        {"src/main.cpp": "int placeholder;\n"},
    )
    shutil.copy(pte, proj / "plain.pte")
    return proj


@pytest.mark.slow
def test_arduino_handoff_to_base(core_with_base: Path, plain_pte: Path, tmp_path: Path) -> None:
    proj = _esp_project(tmp_path / "p", plain_pte)
    r = h.pio(core_with_base, proj, "run", "-e", "esp32dev", timeout=300).check()
    build = proj / ".pio" / "build" / "esp32dev"
    rec = json.loads((build / "handoff.json").read_text())
    assert rec["pioplatform"] == "espressif32"
    assert rec["mcu"] == "esp32"
    # the board's toolchain, the framework, the uploader, and our runtime package
    # the board's toolchain, the framework, the uploader, and our runtime package, each at the
    # version the manifests pin
    assert rec["packages"] == [
        "framework-arduinoespressif32@3.20017.0", "framework-executorch@1.5.1",
        "tool-esptoolpy@2.41100.0", "toolchain-xtensa-esp32@8.4.0",
    ]
    assert (build / "standin_arduino.ran").is_file()  # the base's own framework script ran
    gen = build / "executorch" / "espnn_model"
    assert str(gen) in rec["cpppath"]
    assert str(h.ROOT / "espnn_component" / "include") in rec["cpppath"]
    assert (gen / "model_pte.h").is_file() and (gen / "model_pte_data.S").is_file()
    assert str(h.ROOT / "espnn_component") in rec["libs"]
    # the stamp EspnnModel compares the header's executorch_version with
    assert 'ESPNN_ET_EXECUTORCH_VERSION=\\"1.5.1\\"' in rec["cppdefines"], rec["cppdefines"]
    # the model's bytes and the ESP-IDF PAL are linked as objects: the PAL's strong et_pal_*
    # then always replace the runtime's weak defaults (an archive member would not be pulled)
    assert str(build / "executorch" / "model_pte_data.o") in rec["buildfiles"]
    assert str(build / "executorch_espnn_pal" / "espnn_pal_idf.o") in rec["buildfiles"]
    header = (build / "executorch" / "config" / "espnn_sdkconfig.h").read_text()
    assert "#define CONFIG_ESPNN_ET_PROVIDE_PAL 1" in header
    assert "fits in 320.0 KiB internal RAM" in r.output
    # the project tree is untouched: everything generated lives in the build folder
    assert sorted(p.name for p in proj.iterdir()) == [".pio", "plain.pte", "platformio.ini", "src"]


@pytest.mark.slow
def test_espidf_handoff_adds_components(core_with_base: Path, plain_pte: Path, tmp_path: Path) -> None:
    proj = _esp_project(tmp_path / "p", plain_pte)
    h.pio(core_with_base, proj, "run", "-e", "esp32-s3-devkitc-1", timeout=300).check()
    build = proj / ".pio" / "build" / "esp32-s3-devkitc-1"
    rec = json.loads((build / "handoff.json").read_text())
    assert rec["mcu"] == "esp32s3"
    assert rec["packages"] == [
        "framework-espidf@3.50503.0", "framework-executorch@1.5.1", "tool-esptoolpy@2.41100.0",
        "toolchain-xtensa-esp32s3@8.4.0",
    ]
    assert (build / "standin_espidf.ran").is_file()
    dirs = rec["cmake_extra_args"].split("-DEXTRA_COMPONENT_DIRS:PATH=")[1].split('"')[0].split(";")
    wrapper = build / "executorch" / "components" / "executorch_espnn"
    assert dirs == [str(proj / "src"), str(wrapper), str(build / "executorch" / "espnn_model")]
    assert f'-DESPNN_EXECUTORCH_SOURCE_DIR={core_with_base / "packages" / "framework-executorch"}' \
        in rec["cmake_extra_args"]
    cmake = (build / "executorch" / "espnn_model" / "CMakeLists.txt").read_text()
    assert 'SRCS "model_pte_data.S"' in cmake and "REQUIRES executorch_espnn" in cmake
    check_idf_wrapper(wrapper, tmp_path)


def _fake_idf_registration(component: Path, out: Path) -> list[str]:
    """What ESP-IDF would be asked to register for `component`, recorded by the test suite's
    stand-in of idf_component_register (tests/component_c/fake_idf.cmake)."""
    import subprocess
    import sys

    from tests.component_helpers import CDIR

    cmake = str(Path(sys.executable).with_name("cmake"))
    proc = subprocess.run(
        [cmake, f"-DCOMPONENT_DIR={component}", f"-DOUT={out}", "-DPAL=ON", "-P",
         str(CDIR / "fake_idf.cmake")], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    lines = out.read_text().splitlines()
    assert lines[-1] == "DONE=1"
    return lines


def check_idf_wrapper(wrapper: Path, tmp_path: Path) -> None:
    """The folder named executorch_espnn is espnn_component for ESP-IDF: registering it gives
    exactly the component's own registration (same sources, includes, requirements, link
    options), its Kconfig shows the component's menu, and its manifest is the component's."""
    comp = h.ROOT / "espnn_component"
    assert (wrapper / "idf_component.yml").read_bytes() == (comp / "idf_component.yml").read_bytes()
    real = _fake_idf_registration(comp, tmp_path / "real.txt")
    wrapped = _fake_idf_registration(wrapper, tmp_path / "wrapped.txt")
    assert wrapped == real
    assert any(ln.startswith("SRCS=") and "engine.c" in ln for ln in real)
    # ESP-IDF sources every component's Kconfig from one generated file, next to its own
    # options (SPIRAM here); the wrapper's brings in the component's menu unchanged
    import kconfiglib

    top = tmp_path / "Kconfig.idf"
    top.write_text(f'config SPIRAM\n    bool "PSRAM"\n\nsource "{wrapper / "Kconfig"}"\n')
    kconf = kconfiglib.Kconfig(str(top), warn_to_stderr=False)
    assert not kconf.warnings, kconf.warnings
    menus = [n.prompt[0] for n in kconf.node_iter() if n.is_menuconfig and n.prompt]
    assert "ExecuTorch ESP-NN" in menus
    assert kconf.syms["ESPNN_ET_ARENA_IN_INTERNAL"].nodes

    import kconfiglib

    kconf = kconfiglib.Kconfig(str(wrapper / "Kconfig"), warn=False)
    menus = [n.prompt[0] for n in kconf.node_iter() if n.is_menuconfig and n.prompt]
    assert "ExecuTorch ESP-NN" in menus
    assert "ESPNN_ET_ARENA_IN_INTERNAL" in kconf.syms and kconf.syms["ESPNN_ET_ARENA_IN_INTERNAL"].nodes


@pytest.mark.slow
@pytest.mark.parametrize(("env", "mcu"), [("esp32dev", "esp32"), ("esp32-s3-devkitc-1", "esp32s3")])
def test_example_esp_envs(core_with_base: Path, tmp_path: Path, env: str, mcu: str) -> None:
    """An example's ESP envs, from its folder: the model lowered for the board's chip, the RAM
    check against the board, and the hand-off to the base."""
    r = h.pio(core_with_base, h.example_dir("hello_world"), "run", "-e", env, timeout=600,
              workspace=tmp_path / "ws").check()
    assert f"executorch: lowering mlp.py for {mcu} (strict: no)" in r.output
    assert "fits in 320.0 KiB internal RAM" in r.output
    rec = json.loads((tmp_path / "ws" / "build" / env / "handoff.json").read_text())
    assert rec["mcu"] == mcu and rec["frameworks"] == ["arduino"]
    assert f"toolchain-xtensa-{mcu}@8.4.0" in rec["packages"]


@pytest.mark.slow
@pytest.mark.parametrize("placement", ["AUTO", "INTERNAL"])
def test_model_beyond_internal_ram(core_with_base: Path, plain_pte: Path, tmp_path: Path,
                                   placement: str) -> None:
    """A model needing more than the internal RAM the policy allows: a warning with automatic
    placement (PSRAM at run time), one error line with internal-only placement."""
    proj = _esp_project(tmp_path / "p", plain_pte)
    (proj / "sdkconfig.defaults").write_text(
        f"CONFIG_ESPNN_ET_PLANNED_IN_{placement}=y\nCONFIG_ESPNN_ET_INTERNAL_RAM_CAP=64\n")
    r = h.pio(core_with_base, proj, "run", "-e", "esp32dev", timeout=300)
    assert "does NOT fit in 64 B internal RAM (CONFIG_ESPNN_ET_INTERNAL_RAM_CAP" in r.output, r.output[-3000:]
    if placement == "AUTO":
        r.check()
        assert "Warning: the model needs" in r.output and "it will need PSRAM at run time" in r.output
    else:
        assert r.returncode != 0
        (error,) = r.error_lines()
        assert "CONFIG_ESPNN_ET_PLANNED_IN_INTERNAL" in error and "pio run -t menuconfig" in error


@pytest.mark.slow
def test_esp_board_without_base_says_how_to_install(tmp_path: Path, plain_pte: Path) -> None:
    core = tmp_path / "core"
    h.seed_core(core)
    proj = _esp_project(tmp_path / "p", plain_pte)
    r = h.pio(core, proj, "run", "-e", "esp32dev", timeout=120)
    assert r.returncode != 0
    assert "pio pkg install -g -p platformio/espressif32@~6.13.0" in r.output
    # the host board of the same platform still works without the base
    host = h.write_project(
        tmp_path / "host",
        f"""
        [env:host]
        platform = {h.platform_spec()}
        board = host
        framework = arduino
        """,
        {"src/main.cpp": '#include <Arduino.h>\nvoid setup() { Serial.println("ok"); }\nvoid loop() {}\n'},
    )
    r = h.pio(core, host, "run", "-e", "host", "-t", "exec", timeout=300).check()
    assert "\nok\n" in r.stdout


def test_manifest_pins_the_base() -> None:
    manifest = json.loads((h.ROOT / "platform.json").read_text())
    assert manifest["name"] == "executorch-espnn"
    assert manifest["base_platform"] == {"owner": "platformio", "name": "espressif32", "version": "~6.13.0"}
    assert set(manifest["frameworks"]) == {"arduino", "espidf"}
    assert "framework-executorch" in manifest["packages"]
    board = json.loads((h.ROOT / "boards" / "host.json").read_text())
    assert "packages" not in board and board["build"]["mcu"] == "host"
