"""ESP boards, checked offline: the derived platform against a stand-in espressif32.

What this proves: our platform class finds the installed base through PlatformIO's package
manager, takes its boards/packages/frameworks (and so its toolchain per chip), hands every ESP
build the pinned ExecuTorch/flatbuffers/ESP-NN trees (from the variables a user sets, or one
error line when they cannot be had), runs the model step for the board's chip and the kernel
step (the model's CPU kernels and their registration), then hands the build to the base builder
with our component, ExecuTorch's runtime and the generated model (ESP-IDF: as components on
EXTRA_COMPONENT_DIRS, the runtime as the generated `executorch` component; Arduino: include
paths, the component library, the runtime and kernel libraries from the one source list with
the -u rule and MAX_KERNEL_NUM, and real ESP-NN's sources for the chip, never host_espnn/), and
without the base an ESP board fails with the install command.  What it cannot prove: that the
real espressif32 6.13, ESP-IDF and Arduino-ESP32 take it the same way (tests/test_real_builders.py
drives the real Arduino builders when their trees are named; tests/test_idf_esp_nn.py ESP-IDF's
component manager) and that chip compilers compile and link it (tests/test_idf_executorch.py and
the host board built from source compile the runtime's side with real compilers).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from devkit import pio_helpers as h
from devkit import source_helpers as sh
from executorch_espnn import runtime_sources as rs


@pytest.fixture(scope="module")
def plain_pte(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ready .pte (no delegate) made with ExecuTorch itself: the model step embeds it."""
    out = tmp_path_factory.mktemp("pte") / "plain.pte"
    h.write_plain_pte(out)
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


def _standin_trees(core: Path) -> dict[str, str]:
    trees: dict[str, str] = json.loads((core / h.STANDIN_SOURCES).read_text())
    return {var: os.environ.get(var) or tree for var, tree in trees.items()}


def _check_sources_handed_over(core: Path, rec: dict[str, Any]) -> None:
    """The trees the build resolved are the ones the environment named (sources.py's keys)."""
    trees = _standin_trees(core)
    got = rec["sources"]
    assert got["ESPNN_ET_SOURCE_DIR"] == str(Path(trees["EXECUTORCH_SOURCE_DIR"]).resolve())
    assert got["ESPNN_FLATBUFFERS_DIR"] == str(Path(trees["FLATBUFFERS_SOURCE_DIR"]).resolve())
    assert Path(got["ESPNN_FLATBUFFERS_INCLUDE_DIR"], "flatbuffers", "base.h").is_file()
    assert got["ESPNN_ESPNN_DIR"] == str(Path(trees["ESPNN_ESP_NN_DIR"]).resolve())


def _library(rec: dict[str, Any], name: str) -> dict[str, Any]:
    (lib,) = [lib for lib in rec["libraries"] if lib["name"] == name]
    return lib


def _check_real_esp_nn(rec: dict[str, Any], mcu: str) -> None:
    """The component library has no host_espnn/ source; ESP-NN is compiled from its own tree
    with what ESP-NN's build selects for the chip."""
    comp = h.ROOT / "espnn_component"
    component = _library(rec, "libexecutorch_espnn.a")
    assert component["sources"] and all(s.startswith(str(comp) + os.sep) for s in component["sources"])
    assert not [s for s in component["sources"] if "host_espnn" in s]
    assert str(comp / "host_espnn" / "include") not in component["cpppath"]
    esp_nn = Path(rec["sources"]["ESPNN_ESPNN_DIR"])
    assert str(esp_nn / "include") in component["cpppath"]
    assert "CONFIG_NN_OPTIMIZED=1" in component["cppdefines"]  # esp_nn.h: the chip's kernels
    nn = _library(rec, "libesp_nn.a")
    rel = sorted(str(Path(s).relative_to(esp_nn)) for s in nn["sources"])
    assert rel and not [s for s in nn["sources"] if "host_espnn" in s]
    chip_files = [r for r in rel if re.search(r"_esp32(s3|p4)\.[cS]$", r)]
    if mcu == "esp32s3":  # the S3 assembly and C kernels, no P4 one
        assert chip_files and all("_esp32s3." in r for r in chip_files)
        assert any(r.endswith("_esp32s3.S") for r in rel)
        assert "-mlongcalls" in nn["ccflags"] and "-fno-unroll-loops" in nn["ccflags"]
    else:  # esp32, s2, c3, c6: the ANSI kernels and ESP-NN's generic optimised C
        assert chip_files == [] and "-fno-unroll-loops" not in nn["ccflags"]
    assert "src/convolution/esp_nn_conv_opt.c" in rel and "src/convolution/esp_nn_conv_ansi.c" in rel
    assert nn["ccflags"][-2:] == ["-include", "sdkconfig.h"] and "-O2" in nn["ccflags"]
    assert nn["asppflags"][-2:] == ["-include", "sdkconfig.h"]
    assert str(esp_nn / "src" / "common") in nn["cpppath"]
    assert str(esp_nn / "src" / "common") not in rec["cpppath"]  # ESP-NN's private headers
    # built after the framework script: its include folders reach the library
    sdk = [p for p in rec["cpppath"] if p.endswith(os.path.join("tools", "sdk", mcu, "include"))]
    assert sdk and sdk[0] in nn["cpppath"]
    cmake = Path(rec["sources"]["ESPNN_ESPNN_DIR"], "CMakeLists.txt")
    if cmake.read_text():  # a real ESP-NN tree (ESPNN_ESP_NN_DIR): exactly what its CMake lists
        lists = sh.esp_nn_cmake_selection(esp_nn)
        chip = {"esp32s3": lists["s3_srcs"], "esp32p4": lists["p4_srcs"]}.get(mcu, [])
        assert rel == sorted(lists["c_srcs"] + chip)


def _model_operators(build: Path) -> list[str]:
    """The CPU operators of the build's .pte, read by ExecuTorch's gen_oplist (not the builder)."""
    import subprocess
    import sys

    out = build / "oplist.yaml"
    subprocess.run([sys.executable, "-m", "executorch.codegen.tools.gen_oplist", "--model_file_path",
                    str(build / "executorch" / "model.pte"), "--output_path", str(out)],
                   check=True, capture_output=True)
    import yaml

    return sorted(yaml.safe_load(out.read_text())["operators"])


def _registered(build: Path) -> int:
    reg = (build / "executorch" / "kernels" / "RegisterCodegenUnboxedKernels.cpp").read_text()
    return len(re.findall(r'Kernel\(\s*"', reg))


def _check_runtime_libraries(rec: dict[str, Any], build: Path) -> None:
    """Arduino: ExecuTorch's runtime and the model's kernels as two libraries from the pinned
    tree, exactly the one list's sources; the registration kept by -u; the kernel table sized
    to the registration; ExecuTorch's include dirs and defines for every source."""
    lists = rs.load()
    et = Path(rec["sources"]["ESPNN_ET_SOURCE_DIR"])
    runtime = _library(rec, "libexecutorch_runtime.a")
    assert runtime["sources"] == sorted(str(et / s) for s in lists.runtime_srcs)
    for d in (*lists.runtime_defines, *lists.public_defines, "ET_MIN_LOG_LEVEL=Info"):
        assert d in runtime["cppdefines"], d
    assert "-w" in runtime["ccflags"]
    registry = str(et / "runtime/kernel/operator_registry.cpp")
    assert list(runtime["source_defines"]) == [registry]  # the one source that reads the table
    assert f"MAX_KERNEL_NUM={max(1, _registered(build))}" in runtime["source_defines"][registry]
    ops = _model_operators(build)
    assert _registered(build) == len(ops)
    kernels = _library(rec, "libexecutorch_kernels.a")
    kernel_srcs = [*lists.kernel_sources(ops), *lists.kernel_support_srcs] if ops else []
    assert kernels["sources"] == sorted(
        [str(et / s) for s in kernel_srcs]
        + [str(build / "executorch" / "kernels" / "RegisterCodegenUnboxedKernels.cpp")])
    # all handed to the link; their order is no contract: the real Arduino-ESP32 link puts them
    # into its one --start-group with the SDK's libraries (tests/test_real_builders.py)
    names = {lib["name"] for lib in rec["libraries"]}
    assert {"libexecutorch_kernels.a", "libexecutorch_runtime.a", "libexecutorch_espnn.a",
            "libesp_nn.a"} <= names
    assert "-Wl,-u,executorch_espnn_register_kernels" in rec["linkflags"]
    # <executorch/...> resolves into the tree, the schema headers come from the build folder
    inc = [Path(p) for p in rec["cpppath"]]
    assert any((p / "executorch").resolve() == et.resolve() for p in inc)
    assert build / "executorch_runtime" / "gen" in inc
    assert Path(rec["sources"]["ESPNN_FLATBUFFERS_INCLUDE_DIR"]) in inc
    assert et / "runtime/core/portable_type/c10" in inc
    assert lists.public_defines[0] in rec["cppdefines"]


def _check_runtime_component(rec: dict[str, Any], build: Path, tmp_path: Path) -> None:
    """ESP-IDF: the generated `executorch` component registers the one list's sources in the
    pinned tree, the model's kernels and the registration (recorded by the fake ESP-IDF)."""
    folder = build / "executorch" / "components" / "executorch"
    dirs = rec["cmake_extra_args"].split("-DEXTRA_COMPONENT_DIRS:PATH=")[1].split('"')[0].split(";")
    assert str(folder) in dirs
    lines = _fake_idf_registration(folder, tmp_path / "executorch.txt")
    (srcs,) = [ln.removeprefix("SRCS=").split(";") for ln in lines if ln.startswith("SRCS=")]
    lists = rs.load()
    et = Path(rec["sources"]["ESPNN_ET_SOURCE_DIR"]).resolve()
    ops = _model_operators(build)
    kernel_srcs = [*lists.kernel_sources(ops), *lists.kernel_support_srcs] if ops else []
    from tests.test_idf_executorch import units

    bin_dir = (tmp_path / "executorch.txt").with_suffix(".bin")
    assert srcs == [*units(bin_dir, et, [*lists.runtime_srcs, *kernel_srcs]),
                    str(build / "executorch" / "kernels" / "RegisterCodegenUnboxedKernels.cpp")]
    assert "LINK=INTERFACE;-u executorch_espnn_register_kernels" in lines
    (registry,) = units(bin_dir, et, ["runtime/kernel/operator_registry.cpp"])
    assert f"SOURCE_PROPERTIES={registry};PROPERTIES;" \
           f"COMPILE_DEFINITIONS;MAX_KERNEL_NUM={max(1, _registered(build))}" in lines


@pytest.mark.slow
def test_arduino_handoff_to_base(core_with_base: Path, plain_pte: Path, tmp_path: Path) -> None:
    proj = _esp_project(tmp_path / "p", plain_pte)
    r = h.pio(core_with_base, proj, "run", "-e", "esp32dev", timeout=300).check()
    build = proj / ".pio" / "build" / "esp32dev"
    rec = json.loads((build / "handoff.json").read_text())
    assert rec["pioplatform"] == "espressif32"
    assert rec["mcu"] == "esp32"
    # the board's toolchain, the framework and the uploader, each at the version the manifests
    # pin; no package of ours (the runtime comes from the pinned sources)
    assert rec["packages"] == [
        "framework-arduinoespressif32@3.20017.0", "tool-esptoolpy@2.41100.0",
        "toolchain-xtensa-esp32@8.4.0",
    ]
    assert (build / "standin_arduino.ran").is_file()  # the base's own framework script ran
    _check_sources_handed_over(core_with_base, rec)
    _check_real_esp_nn(rec, "esp32")
    gen = build / "executorch" / "espnn_model"
    assert str(gen) in rec["cpppath"]
    assert str(h.ROOT / "espnn_component" / "include") in rec["cpppath"]
    assert (gen / "model_pte.h").is_file() and (gen / "model_pte_data.S").is_file()
    assert str(h.ROOT / "espnn_component") in rec["libs"]
    # the stamp EspnnModel compares the header's executorch_version with
    assert 'ESPNN_ET_EXECUTORCH_VERSION=\\"1.5.1\\"' in rec["cppdefines"], rec["cppdefines"]
    # the component is C++17, whatever the framework asked for (Arduino-ESP32 2.0.x: gnu++11)
    assert [f for f in rec["cxxflags"] if f.startswith("-std=")] == ["-std=gnu++17"]
    # the model's bytes and the ESP-IDF PAL are linked as objects: the PAL's strong et_pal_*
    # then always replace the runtime's weak defaults (an archive member would not be pulled)
    assert str(build / "executorch" / "model_pte_data.o") in rec["buildfiles"]
    assert str(build / "executorch_espnn_pal" / "espnn_pal_idf.o") in rec["buildfiles"]
    header = (build / "executorch" / "config" / "espnn_sdkconfig.h").read_text()
    assert "#define CONFIG_ESPNN_ET_PROVIDE_PAL 1" in header
    assert "fits in 320.0 KiB internal RAM" in r.output
    # the plain program keeps linear and relu on the CPU: their kernels, registered
    assert _model_operators(build) == ["aten::addmm.out", "aten::permute_copy.out", "aten::relu.out"]
    assert "executorch: 3 CPU operator(s) registered for the firmware" in r.output
    _check_runtime_libraries(rec, build)
    # the project tree is untouched: everything generated lives in the build folder
    assert sorted(p.name for p in proj.iterdir()) == [".pio", "plain.pte", "platformio.ini", "src"]

    # a no-op build regenerates nothing (the kernel step's key, the model step's); verbose, it
    # prints every command, espressif32's ElfToBin as Arduino-ESP32 2.0.x edits it on a deep
    # copy of the action included (builder/espnn_pio/scons_compat.py)
    kernels = build / "executorch" / "kernels"
    before = {p: p.stat().st_mtime_ns for p in kernels.iterdir()}
    r = h.pio(core_with_base, proj, "run", "-v", "-e", "esp32dev", timeout=300).check()
    assert "registered for the firmware" not in r.output and "lowering" not in r.output
    rel = build.relative_to(proj)
    assert f'shutil.copyfile(sys.argv[1], sys.argv[2])" {rel}/handoff.json {rel}/firmware.bin\n' \
        in r.output, r.output[-3000:]
    assert {p: p.stat().st_mtime_ns for p in kernels.iterdir()} == before


@pytest.mark.slow
def test_espidf_handoff_adds_components(core_with_base: Path, plain_pte: Path, tmp_path: Path) -> None:
    proj = _esp_project(tmp_path / "p", plain_pte)
    h.pio(core_with_base, proj, "run", "-e", "esp32-s3-devkitc-1", timeout=300).check()
    build = proj / ".pio" / "build" / "esp32-s3-devkitc-1"
    rec = json.loads((build / "handoff.json").read_text())
    assert rec["mcu"] == "esp32s3"
    assert rec["packages"] == [
        "framework-espidf@3.50503.0", "tool-esptoolpy@2.41100.0", "toolchain-riscv32-esp@8.4.0",
        "toolchain-xtensa-esp-elf@14.2.0",
    ]
    assert (build / "standin_espidf.ran").is_file()
    _check_sources_handed_over(core_with_base, rec)
    dirs = rec["cmake_extra_args"].split("-DEXTRA_COMPONENT_DIRS:PATH=")[1].split('"')[0].split(";")
    wrapper = build / "executorch" / "components" / "executorch_espnn"
    runtime = build / "executorch" / "components" / "executorch"
    # the ESP-NN tree the environment names (ESPNN_ESP_NN_DIR) is the ESP-IDF component esp-nn
    # (a folder of that name), so the component manager is asked for nothing
    esp_nn = build / "executorch" / "components" / "esp-nn"
    assert dirs == [str(proj / "src"), str(esp_nn), str(wrapper), str(runtime),
                    str(build / "executorch" / "espnn_model")]
    assert esp_nn.resolve() == Path(rec["sources"]["ESPNN_ESPNN_DIR"]).resolve()
    assert (esp_nn / "CMakeLists.txt").is_file()
    # the trees reach CMake in the runtime component's generated CMakeLists, not as cache
    # variables no CMake file reads (the real CMake warned "not used by the project")
    assert not any(f"-D{key}:" in rec["cmake_extra_args"] for key in rec["sources"])
    assert rec["libraries"] == []  # ESP-IDF compiles; nothing is built as an SCons library
    cmake = (build / "executorch" / "espnn_model" / "CMakeLists.txt").read_text()
    assert 'SRCS "model_pte_data.S"' in cmake and "REQUIRES executorch_espnn" in cmake
    check_idf_wrapper(wrapper, tmp_path, local_esp_nn=True)
    _check_runtime_component(rec, build, tmp_path)


def _fake_idf_registration(component: Path, out: Path) -> list[str]:
    """What ESP-IDF would be asked to register for `component`, recorded by the test suite's
    stand-in of idf_component_register (tests/component_c/fake_idf.cmake)."""
    import subprocess
    import sys

    from tests.component_helpers import CDIR

    cmake = str(Path(sys.executable).with_name("cmake"))
    proc = subprocess.run(
        [cmake, f"-DCOMPONENT_DIR={component}", f"-DOUT={out}", "-DPAL=ON",
         f"-DBINARY_DIR={out.with_suffix('.bin')}", "-P", str(CDIR / "fake_idf.cmake")],
        capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    lines = out.read_text().splitlines()
    assert lines[-1] == "DONE=1"
    return lines


def check_idf_wrapper(wrapper: Path, tmp_path: Path, local_esp_nn: bool = False) -> None:
    """The folder named executorch_espnn is espnn_component for ESP-IDF: registering it gives
    exactly the component's own registration (same sources, includes, requirements, link
    options), its Kconfig shows the component's menu, and its manifest is the component's
    (`local_esp_nn`: without the espressif/esp-nn dependency, everything else the same)."""
    import yaml

    comp = h.ROOT / "espnn_component"
    own = yaml.safe_load((comp / "idf_component.yml").read_text())
    given = yaml.safe_load((wrapper / "idf_component.yml").read_text())
    if local_esp_nn:
        assert "espressif/esp-nn" in own["dependencies"]
        del own["dependencies"]["espressif/esp-nn"]
        assert given == own
        assert set(given["dependencies"]) == {"idf"}  # nothing the registry must serve
    else:
        assert (wrapper / "idf_component.yml").read_bytes() == \
            (comp / "idf_component.yml").read_bytes()
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
    assert "packages" not in manifest  # nothing declared that no registry publishes
    board = json.loads((h.ROOT / "boards" / "host.json").read_text())
    assert "packages" not in board and board["build"]["mcu"] == "host"


# --- every chip ESP-NN serves -------------------------------------------------------------------

CONV_MODEL_PY = """
import torch

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.fc = torch.nn.Linear(8 * 6 * 6, 4)

    def forward(self, x):
        return self.fc(torch.relu(self.conv(x)).flatten(1))

def model():
    torch.manual_seed(0)
    return Net().eval()

def example_inputs():
    return (torch.randn(1, 3, 6, 6),)
"""

# (board, chip, framework, the packages espressif32 6.13's configure_default_packages installs
# for it: the framework, the uploader, the chip's toolchains)
CHIP_BOARDS = [
    ("esp32dev", "esp32", "arduino",
     ["framework-arduinoespressif32", "tool-esptoolpy", "toolchain-xtensa-esp32"]),
    ("esp32-s2-saola-1", "esp32s2", "arduino",
     ["framework-arduinoespressif32", "tool-esptoolpy", "toolchain-riscv32-esp",
      "toolchain-xtensa-esp32s2"]),
    ("esp32-s3-devkitc-1", "esp32s3", "arduino",
     ["framework-arduinoespressif32", "tool-esptoolpy", "toolchain-riscv32-esp",
      "toolchain-xtensa-esp32s3"]),
    ("esp32-c3-devkitm-1", "esp32c3", "arduino",
     ["framework-arduinoespressif32", "tool-esptoolpy", "toolchain-riscv32-esp"]),
    ("esp32-c6-devkitc-1", "esp32c6", "espidf",  # espressif32 6.13: ESP-IDF only on C6
     ["framework-espidf", "tool-esptoolpy", "toolchain-riscv32-esp"]),
]


@pytest.mark.slow
@pytest.mark.parametrize(("board", "chip", "framework", "packages"), CHIP_BOARDS,
                         ids=[b[1] for b in CHIP_BOARDS])
def test_every_chip(core_with_base: Path, tmp_path: Path, board: str, chip: str, framework: str,
                    packages: list[str]) -> None:
    """Per chip: the board's toolchain, the pinned trees, the model lowered for the chip (its
    scratch sizes follow the chip's kernels) and, on Arduino, ESP-NN's sources for the chip."""
    proj = h.write_project(tmp_path / "p", f"""
        [env:{board}]
        platform = {h.platform_spec()}
        board = {board}
        framework = {framework}
        custom_executorch_model = net.py
        """, {"src/main.cpp": "int placeholder;\n", "net.py": CONV_MODEL_PY})
    r = h.pio(core_with_base, proj, "run", "-e", board, timeout=600).check()
    assert f"executorch: lowering net.py for {chip} (strict: no)" in r.output
    build = proj / ".pio" / "build" / board
    rec = json.loads((build / "handoff.json").read_text())
    assert rec["mcu"] == chip and rec["frameworks"] == [framework]
    assert [p.split("@")[0] for p in rec["packages"]] == packages
    _check_sources_handed_over(core_with_base, rec)
    report = json.loads((build / "executorch" / "report.json").read_text())
    (part,) = report["partitions"]
    assert part["target"] == chip  # the payload is sized for this chip's ESP-NN kernels
    # ESP-NN's S3 conv kernel asks for a scratch buffer (im2col for a 3x3x3 window); its generic
    # optimised C for the other chips needs none (esp_nn_get_conv_scratch_size_opt returns 0)
    assert (part["scratch_bytes"] > 0) == (chip == "esp32s3"), part
    if framework == "arduino":
        _check_real_esp_nn(rec, chip)
        _check_runtime_libraries(rec, build)
    else:
        assert rec["libraries"] == []
        # the trees reach CMake through the generated components' CMakeLists, not as cache
        # variables (no CMake file reads those; the real CMake warned "not used")
        assert "-DESPNN_" not in rec["cmake_extra_args"].replace("-DESPNN_PLATFORMIO:BOOL=ON", "")
        _check_runtime_component(rec, build, tmp_path)


@pytest.mark.slow
def test_esp32p4_board_says_what_to_use(core_with_base: Path, plain_pte: Path, tmp_path: Path) -> None:
    """espressif32 6.13 has no P4 board and its builder cannot build one: a P4 board (here a
    project board) stops with one line naming the way that works."""
    proj = _esp_project(tmp_path / "p", plain_pte)
    (proj / "boards").mkdir()
    (proj / "boards" / "esp32-p4-evboard.json").write_text(json.dumps({
        "build": {"mcu": "esp32p4", "core": "esp32", "f_cpu": "360000000L"},
        "frameworks": ["espidf"], "name": "ESP32-P4 board", "url": "https://example.invalid",
        "upload": {"maximum_ram_size": 786432, "maximum_size": 16777216}, "vendor": "Espressif"}))
    with (proj / "platformio.ini").open("a") as fp:
        fp.write("\n[env:p4]\nboard = esp32-p4-evboard\nframework = espidf\n")
    r = h.pio(core_with_base, proj, "run", "-e", "p4", timeout=300)
    assert r.returncode != 0
    assert "Board 'esp32-p4-evboard' is an ESP32-P4, which platformio/espressif32@~6.13.0's " \
           "builder cannot build" in r.output, r.output[-2000:]
    assert "idf.py" in r.output and "--target esp32p4" in r.output


# --- the pinned trees cannot be had: one line, before any lowering --------------------------------

NO_LOCAL_TREES = {"EXECUTORCH_SOURCE_DIR": "", "FLATBUFFERS_SOURCE_DIR": "", "ESPNN_ESP_NN_DIR": ""}


def _one_error(r: h.PioResult, proj: Path, env: str) -> str:
    assert r.returncode != 0
    errors = r.error_lines()
    assert len(errors) == 1, r.output[-3000:]
    assert "Traceback" not in r.output
    assert not (proj / ".pio" / "build" / env / "executorch" / "model.pte").exists()
    return errors[0]


@pytest.mark.slow
def test_missing_sources_say_how_to_get_them(core_with_base: Path, plain_pte: Path,
                                             tmp_path: Path) -> None:
    from executorch_espnn.firmware import sources
    _, commit = sources.wheel_executorch()
    proj = _esp_project(tmp_path / "p", plain_pte)
    mirror = tmp_path / "mirror"
    r = h.pio(core_with_base, proj, "run", "-e", "esp32dev", timeout=300,
              extra_env={**NO_LOCAL_TREES, "ESPNN_SOURCES_URL_BASE": f"file://{mirror}"})
    line = _one_error(r, proj, "esp32dev")
    assert line.startswith(f"Error: ExecuTorch 1.5.1 sources: no archive at file://{mirror}/"
                           f"pytorch/executorch/archive/{commit}.tar.gz")
    assert f"fetch https://github.com/pytorch/executorch/archive/{commit}.tar.gz by hand" in line
    assert f"set custom_executorch_runtime_dir = <a checkout of pytorch/executorch at {commit[:7]}>" in line

    # a mirror serving another commit under the pinned name
    repo = tmp_path / "repo"
    other = sh.make_repo(repo, {"runtime/executor/program.cpp": ""})
    archive = sh.archive_as_github(repo, tmp_path / "tmp", "pytorch", "executorch", other)
    target = mirror / "pytorch" / "executorch" / "archive" / f"{commit}.tar.gz"
    target.parent.mkdir(parents=True)
    archive.replace(target)
    r = h.pio(core_with_base, proj, "run", "-e", "esp32dev", timeout=300,
              extra_env={**NO_LOCAL_TREES, "ESPNN_SOURCES_URL_BASE": f"file://{mirror}"})
    line = _one_error(r, proj, "esp32dev")
    assert f"is commit {other[:7]}, not the pinned {commit[:7]}" in line

    # a local tree that is not one, named in platformio.ini
    with (proj / "platformio.ini").open("a") as fp:
        fp.write("\n[env:named]\nboard = esp32dev\nframework = arduino\n"
                 "custom_executorch_runtime_dir = ../no-such-checkout\n")
    r = h.pio(core_with_base, proj, "run", "-e", "named", timeout=300)
    line = _one_error(r, proj, "named")
    assert line.startswith("Error: custom_executorch_runtime_dir = ../no-such-checkout: no such folder")


# --- custom_executorch_runtime ------------------------------------------------------------------


def test_runtime_option_values_and_messages() -> None:
    from executorch_espnn.firmware import options
    given = {"custom_executorch_runtime": "source"}
    assert options.runtime_choice(lambda _: None, True) == "wheel"  # the host board's default
    assert options.runtime_choice(lambda _: None, False) == "source"  # ESP boards: the only one
    assert options.runtime_choice(given.get, True) == "source"
    with pytest.raises(options.OptionError) as bad:
        options.runtime_choice({"custom_executorch_runtime": "prebuilt"}.get, True)
    assert str(bad.value).startswith("custom_executorch_runtime = prebuilt: unknown value; use "
                                     "`custom_executorch_runtime = source`")
    with pytest.raises(options.OptionError) as esp:
        options.runtime_choice({"custom_executorch_runtime": "wheel"}.get, False)
    assert "only run on this computer" in str(esp.value)
    assert "remove custom_executorch_runtime or set it to source" in str(esp.value)


@pytest.mark.slow
def test_wheel_runtime_on_an_esp_board_stops_at_once(core_with_base: Path, plain_pte: Path,
                                                     tmp_path: Path) -> None:
    proj = _esp_project(tmp_path / "p", plain_pte)
    with (proj / "platformio.ini").open("a") as fp:
        fp.write("\n[env:wheel]\nboard = esp32dev\nframework = arduino\n"
                 "custom_executorch_runtime = wheel\n")
    r = h.pio(core_with_base, proj, "run", "-e", "wheel", timeout=300)
    line = _one_error(r, proj, "wheel")
    assert line.startswith("Error: custom_executorch_runtime = wheel: the executorch wheel's "
                           "libraries only run on this computer")


# --- the handed Arduino libraries, compiled (with source trees) ------------------------------------


@pytest.mark.slow
def test_arduino_libraries_compile_as_handed(core_with_base: Path, tmp_path: Path) -> None:
    """With real ExecuTorch, flatbuffers and ESP-NN trees the stand-in compiles what the builder
    hands an Arduino build of a generic chip (esp32dev) with the host compiler: the component
    against the tree's headers and the ESP-IDF 4.4 stand-in headers, ESP-NN's sources for the
    chip, the runtime and the model's kernels with their registration, the PAL and the model
    data; a second build compiles nothing.  (Not a link: the framework's libraries are not
    here.)  Skipped without EXECUTORCH_SOURCE_DIR, FLATBUFFERS_SOURCE_DIR and ESPNN_ESP_NN_DIR."""
    import os
    import subprocess

    from tests.component_helpers import STANDIN

    missing = [v for v in ("EXECUTORCH_SOURCE_DIR", "FLATBUFFERS_SOURCE_DIR", "ESPNN_ESP_NN_DIR")
               if not os.environ.get(v)]
    if missing:
        pytest.skip(f"set {', '.join(missing)} to source trees (pytorch/executorch, "
                    "google/flatbuffers v24.3.25, espressif/esp-nn 1.2.3) to compile the handed "
                    "libraries")
    proj = h.write_project(tmp_path / "p", f"""
        [env:esp32dev]
        platform = {h.platform_spec()}
        board = esp32dev
        framework = arduino
        custom_executorch_model = net.py
        """, {"src/main.cpp": "int placeholder;\n", "net.py": CONV_MODEL_PY.replace(
            "return self.fc(torch.relu(self.conv(x)).flatten(1))",
            "return torch.cumsum(self.fc(torch.relu(self.conv(x)).flatten(1)), dim=1)")})
    env = {"ESPNN_STANDIN_COMPILE": str(STANDIN)}
    r = h.pio(core_with_base, proj, "run", "-e", "esp32dev", timeout=3000, extra_env=env).check()
    build = proj / ".pio" / "build" / "esp32dev"
    assert "Compiling" in r.output
    defined = {}
    for lib in ("libexecutorch_espnn.a", "libesp_nn.a", "libexecutorch_runtime.a",
                "libexecutorch_kernels.a"):
        nm = subprocess.run(["nm", "-C", "--defined-only", str(build / lib)], capture_output=True,
                            text=True, check=True).stdout
        defined[lib] = nm
    assert "EspnnModel::begin()" in defined["libexecutorch_espnn.a"]
    assert " T esp_nn_conv_s8_opt" in defined["libesp_nn.a"]
    assert "executorch::runtime::Program::load" in defined["libexecutorch_runtime.a"]
    assert " T executorch_espnn_register_kernels" in defined["libexecutorch_kernels.a"]
    assert "cumsum" in defined["libexecutorch_kernels.a"]  # the model's CPU kernel
    assert (build / "executorch_espnn_pal" / "espnn_pal_idf.o").is_file()
    again = h.pio(core_with_base, proj, "run", "-e", "esp32dev", timeout=600, extra_env=env).check()
    for word in ("Compiling", "Archiving", "Generating the ExecuTorch schema headers",
                 "registered for the firmware", "executorch: lowering"):
        assert word not in again.output, again.output[-3000:]


@pytest.mark.slow
def test_two_models_hand_over_both_and_one_registration(core_with_base: Path, plain_pte: Path,
                                                        tmp_path: Path) -> None:
    """Several models on ESP boards: each model's generated files reach the base builder
    (Arduino: include paths and objects; ESP-IDF: one component each plus espnn_models), the
    kernel step registers the union of their CPU operators once, and the RAM check is the
    models' together."""
    tanh_pte = tmp_path / "tanh.pte"
    h.write_plain_pte(tanh_pte, "torch.tanh")
    proj = h.write_project(tmp_path / "p", f"""
        [env]
        platform = {h.platform_spec()}
        custom_executorch_model =
            first = plain.pte
            second = tanh.pte
        custom_executorch_shared_arena = yes

        [env:esp32dev]
        board = esp32dev
        framework = arduino

        [env:esp32-s3-devkitc-1]
        board = esp32-s3-devkitc-1
        framework = espidf
        """, {"src/main.cpp": "int placeholder;\n"})
    shutil.copy(plain_pte, proj / "plain.pte")
    shutil.copy(tanh_pte, proj / "tanh.pte")

    r = h.pio(core_with_base, proj, "run", "-e", "esp32dev", timeout=600).check()
    build = proj / ".pio" / "build" / "esp32dev"
    rec = json.loads((build / "handoff.json").read_text())
    models = build / "executorch" / "models"
    for name in ("first", "second"):
        gen = models / name / f"espnn_model_{name}"
        assert str(gen) in rec["cpppath"] and (gen / f"model_{name}_pte.h").is_file()
        assert str(models / name / f"model_{name}_pte_data.o") in rec["buildfiles"]
    assert str(models.parent / "espnn_models") in rec["cpppath"]
    union = ["aten::addmm.out", "aten::permute_copy.out", "aten::relu.out", "aten::tanh.out"]
    reg = (build / "executorch" / "kernels" / "RegisterCodegenUnboxedKernels.cpp").read_text()
    assert sorted(re.findall(r'Kernel\(\s*"([^"]+)"', reg)) == union
    assert f"executorch: {len(union)} CPU operator(s) registered for the firmware" in r.output
    runtime = _library(rec, "libexecutorch_runtime.a")
    registry = str(Path(rec["sources"]["ESPNN_ET_SOURCE_DIR"]) / "runtime/kernel/operator_registry.cpp")
    assert f"MAX_KERNEL_NUM={len(union)}" in runtime["source_defines"][registry]
    assert re.search(r"^  RAM: .* needed by all models, fits in 320\.0 KiB internal RAM", r.output, re.M)

    h.pio(core_with_base, proj, "run", "-e", "esp32-s3-devkitc-1", timeout=600).check()
    build = proj / ".pio" / "build" / "esp32-s3-devkitc-1"
    rec = json.loads((build / "handoff.json").read_text())
    dirs = rec["cmake_extra_args"].split("-DEXTRA_COMPONENT_DIRS:PATH=")[1].split('"')[0].split(";")
    models = build / "executorch" / "models"
    assert dirs[-3:] == [str(models / "first" / "espnn_model_first"),
                         str(models / "second" / "espnn_model_second"), str(models.parent / "espnn_models")]
    cmake = (models / "second" / "espnn_model_second" / "CMakeLists.txt").read_text()
    assert 'SRCS "model_second_pte_data.S"' in cmake
    lines = _fake_idf_registration(models.parent / "espnn_models", tmp_path / "models.txt")
    assert any(ln.startswith("INCLUDE_DIRS=") for ln in lines), lines
