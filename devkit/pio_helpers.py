"""Drive the real `pio` offline: a fresh PLATFORMIO_CORE_DIR per session, seeded by
scripts/seed_platformio.sh; every call wrapped in `timeout` (a missing package would otherwise
cost a minute of registry retries)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PIO = Path(sys.executable).parent / "pio"
BASE_VERSION = "6.13.0"  # the espressif32 version the stand-in claims (platform.json pins ~6.13.0)


@dataclass(frozen=True)
class PioResult:
    args: list[str]
    returncode: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    def check(self) -> PioResult:
        assert self.returncode == 0, f"pio {' '.join(self.args)} failed:\n{self.output[-6000:]}"
        return self

    def error_lines(self) -> list[str]:
        return [ln for ln in self.output.splitlines() if ln.startswith("Error: ")]


def pio_env(core: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLATFORMIO_")}
    standin = core / STANDIN_SOURCES
    if standin.is_file():  # the ESP builds' source trees, unless real ones are named
        for var, tree in json.loads(standin.read_text()).items():
            env.setdefault(var, tree)
    env.update(
        PLATFORMIO_CORE_DIR=str(core),
        PLATFORMIO_SETTING_ENABLE_TELEMETRY="No",
        PLATFORMIO_SETTING_CHECK_PLATFORMIO_INTERVAL="3650",
        PLATFORMIO_DISABLE_PROGRESSBAR="true",
        PLATFORMIO_NO_ANSI="true",
        PYTHONUNBUFFERED="1",
    )
    env.pop("PYTHONPATH", None)  # the builder must find the package itself (checkout)
    return env


def seed_core(core: Path) -> None:
    subprocess.run(
        ["bash", str(ROOT / "scripts" / "seed_platformio.sh"), str(core)],
        check=True,
        env=dict(os.environ, PYTHON=sys.executable),
        timeout=120,
    )


def pio(core: Path, project: Path, *args: str, timeout: int = 600,
        workspace: Path | None = None, extra_env: dict[str, str] | None = None) -> PioResult:
    """`pio ARGS` in `project` (its working directory, as a user runs it), killed after
    `timeout` seconds.  `workspace` moves the project's .pio folder (PLATFORMIO_WORKSPACE_DIR),
    so an example can be built in place without writing into the checkout; `extra_env` adds to
    (or, with "", blanks) the environment."""
    cmd = ["timeout", "--kill-after=10", str(timeout), str(PIO), *args]
    env = pio_env(core)
    if workspace is not None:
        env["PLATFORMIO_WORKSPACE_DIR"] = str(workspace)
    env.update(extra_env or {})
    proc = subprocess.run(
        cmd, cwd=project, env=env, capture_output=True, text=True, errors="replace",
        stdin=subprocess.DEVNULL,
    )
    return PioResult(list(args), proc.returncode, proc.stdout, proc.stderr)


_PLAIN_PTE_SCRIPT = """
import sys, torch
from executorch.exir import to_edge

class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)
    def forward(self, x):
        return {act}(self.fc(x))

torch.manual_seed(0)
ep = torch.export.export(M().eval(), (torch.randn(1, 4),))
open(sys.argv[1], "wb").write(to_edge(ep).to_executorch().buffer)
"""


def write_plain_pte(path: Path, act: str = "torch.relu") -> Path:
    """A ready .pte with no delegate (Linear(4, 3) then ``act``), made by ExecuTorch itself in a
    child process (its export leaves threads and caches behind): what the model step embeds as
    a user's own .pte."""
    subprocess.run([sys.executable, "-c", _PLAIN_PTE_SCRIPT.format(act=act), str(path)], check=True,
                   timeout=300, capture_output=True)
    return path


_MLP_MODEL = """
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


def mlp_model_source(seed: int, n_in: int = 8) -> str:
    """A model file (model(), example_inputs(), calibration_data()) of a two-layer MLP with
    ``n_in`` inputs and 4 outputs, its weights from ``seed``: another seed is a retrained model
    with the same I/O, another ``n_in`` a model of other I/O."""
    return _MLP_MODEL.format(seed=seed, n_in=n_in)


def example_dir(name: str) -> Path:
    return ROOT / "examples" / name


def platform_spec() -> str:
    return f"symlink://{ROOT}"


def write_project(project: Path, ini: str, files: dict[str, str]) -> Path:
    project.mkdir(parents=True, exist_ok=True)
    (project / "platformio.ini").write_text(textwrap.dedent(ini).lstrip(), encoding="utf8")
    for rel, text in files.items():
        path = project / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf8")
    return project


# --- a stand-in espressif32 platform ---------------------------------------------------------
#
# The registry is unreachable here, so ESP envs are exercised against a platform folder the
# test writes: it has the real one's name, version, framework names, a board per chip ESP-NN
# serves and espressif32 6.13's choice of toolchain packages per chip and framework (its
# platform.py, configure_default_packages), and its builder records what it was handed (board,
# frameworks, include paths, defines, each library's sources and flags, the executorch files,
# the pinned source trees) into handoff.json instead of compiling.  Its Arduino framework script
# adds what Arduino-ESP32 2.0.x's does that matters to us (gnu++11; one SDK include folder for
# the ~190 of the real one; the deep copy of ElfToBin's action).  It proves our side of the
# contract; what it keeps is what the real builders were seen to do (tests/test_real_builders.py:
# espressif32 6.13.0 with Arduino-ESP32 2.0.14), and it does not run ESP-IDF's component manager
# or espidf.py's compile step, nor does it prove that the chips' compilers compile the component.  With ESPNN_STANDIN_COMPILE=<tests/component_c/idf_standin>
# it also compiles every handed library and object with the host compiler, against the test
# suite's ESP-IDF 4.4 stand-in headers (a generic chip only: no Xtensa assembly here).
#
# The ESP builds also need the pinned ExecuTorch, flatbuffers and ESP-NN trees, which cannot be
# downloaded here: install_standin_espressif32 writes stand-in trees (the files the builder
# checks) and records them in the core folder; pio() hands them to the build through the
# environment variables a user would set, unless the caller's environment names real ones.

_STANDIN_PLATFORM_PY = '''
from platformio.public import PlatformBase


class Espressif32Platform(PlatformBase):
    """Stand-in: espressif32 6.13's toolchain choice (its configure_default_packages)."""

    def configure_default_packages(self, variables, targets):
        board = variables.get("board")
        if board:
            mcu = variables.get("board_build.mcu", self.board_config(board).get("build.mcu", "esp32"))
            frameworks = variables.get("pioframework", [])
            if "espidf" in frameworks:
                if "arduino" in frameworks:
                    self.packages.pop("toolchain-xtensa-esp-elf", None)
                else:
                    for target in ("xtensa-esp32", "xtensa-esp32s2", "xtensa-esp32s3"):
                        self.packages.pop("toolchain-%s" % target, None)
                    if mcu in ("esp32c3", "esp32c6"):
                        self.packages.pop("toolchain-xtensa-esp-elf", None)
                    else:
                        self.packages["toolchain-xtensa-esp-elf"]["optional"] = False
            if "arduino" in frameworks:
                for available in ("esp32", "esp32s2", "esp32s3"):
                    if available == mcu:
                        self.packages["toolchain-xtensa-%s" % mcu]["optional"] = False
                    else:
                        self.packages.pop("toolchain-xtensa-%s" % available, None)
            if mcu in ("esp32s2", "esp32s3", "esp32c3", "esp32c6"):
                self.packages["toolchain-riscv32-esp"]["optional"] = False
        return super().configure_default_packages(variables, targets)
'''

_STANDIN_MAIN = '''
import json, os
from SCons.Script import DefaultEnvironment, Default, AlwaysBuild, Builder

env = DefaultEnvironment()
env.Replace(PROGNAME="firmware", PROGSUFFIX=".elf")
record = {
    "pioplatform": env["PIOPLATFORM"],
    "board": env.subst("$BOARD"),
    "mcu": env.BoardConfig().get("build.mcu"),
    "frameworks": env.get("PIOFRAMEWORK", []),
    "packages": sorted("%s@%s" % (p.metadata.name, p.metadata.version)
                       for p in env.PioPlatform().get_installed_packages(with_optional=False)),
}
env.Replace(ESPNN_STANDIN_RECORD=record)
# espressif32's ElfToBin builder (a VerboseAction: with `pio run -v` SCons prints the command)
env.Append(BUILDERS=dict(ElfToBin=Builder(action=env.VerboseAction(
    '"$PYTHONEXE" -c "import shutil, sys; shutil.copyfile(sys.argv[1], sys.argv[2])" $SOURCES $TARGET',
    "Building $TARGET"), suffix=".bin")))
if env.get("PIOFRAMEWORK"):
    for fw in env["PIOFRAMEWORK"]:
        env.SConscript(env.GetFrameworkScript(fw), exports="env")
if os.environ.get("ESPNN_STANDIN_COMPILE"):
    # compile every library and object the builder handed over, with the host compiler (the
    # chip's toolchain is not here): proves their sources, include paths and flags compile
    Default([n for n in env.Flatten(env.get("LIBS", [])) if hasattr(n, "sources")]
            + env.Flatten(env.get("PIOBUILDFILES", [])))


def _defines(e):
    return [str(d) if not isinstance(d, tuple) else "%s=%s" % d for d in e.get("CPPDEFINES", [])]


def _library(node):
    """What a static library is built from and with: its objects' sources and build flags (the
    first object's; sources built with other defines are listed with theirs)."""
    objects = [o for o in node.sources]
    build_env = objects[0].get_build_env() if objects else env
    defines = _defines(build_env)
    others = {}
    for o in objects:
        own = _defines(o.get_build_env())
        if own != defines:
            others[o.sources[0].srcnode().abspath] = own
    return {
        "name": os.path.basename(str(node)),
        "sources": sorted(o.sources[0].srcnode().abspath for o in objects),
        "ccflags": [build_env.subst(str(f)) for f in build_env.get("CCFLAGS", [])],
        "asppflags": [build_env.subst(str(f)) for f in build_env.get("ASPPFLAGS", [])],
        "cpppath": [build_env.subst(str(p)) for p in build_env.get("CPPPATH", [])],
        "cppdefines": defines,
        "source_defines": others,
    }


def _write(target, source, env):
    libs = [n for n in env.Flatten(env.get("LIBS", [])) if hasattr(n, "sources")]
    record.update(
        cpppath=[env.subst(str(p)) for p in env.get("CPPPATH", [])],
        cppdefines=_defines(env),
        cxxflags=[env.subst(str(f)) for f in env.get("CXXFLAGS", [])],
        linkflags=[env.subst(str(f)) for f in env.get("LINKFLAGS", [])],
        cmake_extra_args=env.BoardConfig().get("build.cmake_extra_args", ""),
        libs=[str(x) for x in env.get("ESPNN_STANDIN_LIBS", [])],
        libraries=[_library(n) for n in libs],
        buildfiles=sorted(env.subst(str(getattr(n, "abspath", n))) for n in env.Flatten(env.get("PIOBUILDFILES", []))),
        partitions=env.BoardConfig().get("build.partitions", ""),
        flash_extra_images=[[env.subst(str(x)) for x in image] for image in env.get("FLASH_EXTRA_IMAGES", [])],
        executorch_dir=env.get("ESPNN_MODEL_DIR", ""),
        sources={k: env.get(k, None) for k in ("ESPNN_ET_SOURCE_DIR", "ESPNN_ET_INCLUDE_ROOT",
                                               "ESPNN_FLATBUFFERS_DIR", "ESPNN_FLATBUFFERS_INCLUDE_DIR",
                                               "ESPNN_ESPNN_DIR")},
    )
    with open(str(target[0]), "w") as fp:
        json.dump(record, fp, indent=1)

out = env.Command(os.path.join(env.subst("$BUILD_DIR"), "handoff.json"), [],
                  env.Action(_write, "Recording the hand-off"))
AlwaysBuild(out)
Default(out)
image = env.ElfToBin(os.path.join(env.subst("$BUILD_DIR"), "firmware"), out)
AlwaysBuild(image)
Default(image)
'''

_STANDIN_FRAMEWORK = '''
import os
from SCons.Script import Import
Import("env")
os.makedirs(env.subst("$BUILD_DIR"), exist_ok=True)
with open(os.path.join(env.subst("$BUILD_DIR"), "standin_{name}.ran"), "w") as fp:
    fp.write("ran")
if "{name}" == "arduino":  # what Arduino-ESP32 2.0.x's platformio-build.py sets that we meet
    sdk = os.path.join(env.PioPlatform().get_package_dir("framework-arduinoespressif32"), "tools",
                       "sdk", env.BoardConfig().get("build.mcu"), "include")
    env.Append(CXXFLAGS=["-std=gnu++11", "-fexceptions"], CPPPATH=[sdk])
    # it edits espressif32's ElfToBin command on a deep copy of the action (to add
    # --elf-sha256-offset), which copies SCons's "no command string" sentinel too
    from copy import deepcopy
    action = deepcopy(env["BUILDERS"]["ElfToBin"].action)
    action.cmd_list = env["BUILDERS"]["ElfToBin"].action.cmd_list.replace("$SOURCES", "$SOURCES")
    env["BUILDERS"]["ElfToBin"].action = action
    standin_idf = os.environ.get("ESPNN_STANDIN_COMPILE")
    if standin_idf:  # compiling with the host compiler: the test suite's ESP-IDF 4.4 headers
        os.makedirs(sdk, exist_ok=True)
        with open(os.path.join(sdk, "sdkconfig.h"), "w") as fp:
            fp.write("/* stand-in of Arduino-ESP32 2.0.x's sdkconfig.h: PSRAM support */\\n"
                     "#define CONFIG_SPIRAM 1\\n")
        env.Append(CPPPATH=[standin_idf],
                   CPPDEFINES=["ESP_PLATFORM", "ESPNN_STANDIN_IDF_MAJOR=4", "ESPNN_STANDIN_IDF_MINOR=4"])
'''

# A board of each chip ESP-NN serves, as espressif32 6.13 has them (build.mcu, frameworks, RAM);
# it has no ESP32-P4 board (tests give one as a project board).
BOARDS = {
    "esp32dev": {"mcu": "esp32", "name": "Stand-in ESP32 Dev Module", "ram": 327680,
                 "frameworks": ["arduino", "espidf"]},
    "esp32-s2-saola-1": {"mcu": "esp32s2", "name": "Stand-in ESP32-S2-Saola-1", "ram": 327680,
                         "frameworks": ["arduino", "espidf"]},
    "esp32-s3-devkitc-1": {"mcu": "esp32s3", "name": "Stand-in ESP32-S3-DevKitC-1", "ram": 327680,
                           "frameworks": ["arduino", "espidf"]},
    "esp32-c3-devkitm-1": {"mcu": "esp32c3", "name": "Stand-in ESP32-C3-DevKitM-1", "ram": 327680,
                           "frameworks": ["arduino", "espidf"]},
    "esp32-c6-devkitc-1": {"mcu": "esp32c6", "name": "Stand-in ESP32-C6-DevKitC-1", "ram": 327680,
                           "frameworks": ["espidf"]},
}

PACKAGES = {  # name: (version requirement, seeded version, type)
    "toolchain-xtensa-esp32": ("~8.4.0", "8.4.0", "toolchain"),
    "toolchain-xtensa-esp32s2": ("~8.4.0", "8.4.0", "toolchain"),
    "toolchain-xtensa-esp32s3": ("~8.4.0", "8.4.0", "toolchain"),
    "toolchain-riscv32-esp": ("~8.4.0", "8.4.0", "toolchain"),
    "toolchain-xtensa-esp-elf": ("~14.2.0", "14.2.0", "toolchain"),
    "framework-arduinoespressif32": ("~3.20017.0", "3.20017.0", "framework"),
    "framework-espidf": ("~3.50503.0", "3.50503.0", "framework"),
    "tool-esptoolpy": ("~2.41100.0", "2.41100.0", "uploader"),
}
# The frameworks' default partition tables, laid out as the real ones for a 4 MB flash:
# Arduino-ESP32's default.csv (two OTA apps and SPIFFS fill the flash) and ESP-IDF's
# partitions_singleapp.csv (one 1 MB factory app).
_STANDIN_TABLES = (
    ("framework-arduinoespressif32", "tools/partitions/default.csv",
     "# Name, Type, SubType, Offset, Size, Flags\n"
     "nvs, data, nvs, 0x9000, 0x5000,\notadata, data, ota, 0xe000, 0x2000,\n"
     "app0, app, ota_0, 0x10000, 0x140000,\napp1, app, ota_1, 0x150000, 0x140000,\n"
     "spiffs, data, spiffs, 0x290000, 0x160000,\ncoredump, data, coredump, 0x3F0000, 0x10000,\n"),
    ("framework-espidf", "components/partition_table/partitions_singleapp.csv",
     "# Name, Type, SubType, Offset, Size, Flags\n"
     "nvs, data, nvs, 0x9000, 0x6000,\nphy_init, data, phy, 0xf000, 0x1000,\n"
     "factory, app, factory, 0x10000, 1M,\n"),
)

STANDIN_SOURCES = "standin_sources.json"  # in the core folder: env var -> stand-in tree


def _package(path: Path, name: str, version: str, kind: str) -> None:
    path.mkdir(parents=True, exist_ok=True)
    (path / "package.json").write_text(json.dumps({"name": name, "version": version}))
    (path / ".piopm").write_text(json.dumps({
        "type": "tool", "name": name, "version": version,
        "spec": {"owner": "platformio", "id": None, "name": name, "requirements": None, "uri": None},
    }))


def write_standin_sources(core: Path, work: Path) -> dict[str, str]:
    """Stand-in ExecuTorch/flatbuffers/ESP-NN trees for the ESP builds, recorded in `core`."""
    from devkit import source_helpers as sh

    trees = {
        "EXECUTORCH_SOURCE_DIR": str(sh.executorch_tree(work / "sources" / "executorch")),
        "FLATBUFFERS_SOURCE_DIR": str(sh.flatbuffers_tree(work / "sources" / "flatbuffers")),
        "ESPNN_ESP_NN_DIR": str(sh.esp_nn_tree(work / "sources" / "esp-nn")),
    }
    (core / STANDIN_SOURCES).write_text(json.dumps(trees, indent=1))
    return trees


def install_standin_espressif32(core: Path, work: Path) -> Path:
    """Write the stand-in platform, install it into `core` like a user would
    (`pio pkg install -g -p <folder>`), seed the packages it asks for, and give the ESP builds
    stand-in source trees."""
    src = work / "espressif32-standin"
    (src / "builder" / "frameworks").mkdir(parents=True, exist_ok=True)
    (src / "boards").mkdir(exist_ok=True)
    manifest = {
        "name": "espressif32",
        "title": "Espressif 32 (test stand-in)",
        "version": BASE_VERSION,
        "engines": {"platformio": "^6"},
        "frameworks": {
            "arduino": {"package": "framework-arduinoespressif32", "script": "builder/frameworks/arduino.py"},
            "espidf": {"package": "framework-espidf", "script": "builder/frameworks/espidf.py"},
        },
        "packages": {name: {"type": kind, "version": req, **({} if name == "tool-esptoolpy" else {"optional": True})}
                     for name, (req, _, kind) in PACKAGES.items()},
    }
    (src / "platform.json").write_text(json.dumps(manifest, indent=1))
    (src / "platform.py").write_text(_STANDIN_PLATFORM_PY)
    (src / "builder" / "main.py").write_text(_STANDIN_MAIN)
    for fw in ("arduino", "espidf"):
        (src / "builder" / "frameworks" / f"{fw}.py").write_text(
            _STANDIN_FRAMEWORK.replace("{name}", fw))
    for board, b in BOARDS.items():
        (src / "boards" / f"{board}.json").write_text(json.dumps({
            "build": {"mcu": b["mcu"], "core": "esp32", "f_cpu": "240000000L"},
            "frameworks": b["frameworks"],
            "name": b["name"],
            "upload": {"maximum_ram_size": b["ram"], "maximum_size": 4194304, "flash_size": "4MB",
                       "speed": 460800},
            "url": "https://example.invalid/standin",
            "vendor": "Espressif",
        }))
    pio(core, work, "pkg", "install", "-g", "--skip-dependencies", "-p", f"file://{src}", timeout=120).check()
    pkgs = core / "packages"
    for name, (_, version, kind) in PACKAGES.items():
        _package(pkgs / name, name, version, kind)
    for package, rel, table in _STANDIN_TABLES:
        (pkgs / package / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkgs / package / rel).write_text(table)
    # tool-esptoolpy is esptool's source in a folder; here a launcher of the venv's esptool
    # (its own folder leaves sys.path first, or `import esptool` would find this file)
    (pkgs / "tool-esptoolpy" / "esptool.py").write_text(
        "import os, runpy, sys\n"
        "here = os.path.dirname(os.path.abspath(__file__))\n"
        "sys.path = [p for p in sys.path if os.path.abspath(p or '.') != here]\n"
        "runpy.run_module('esptool', run_name='__main__', alter_sys=True)\n")
    write_standin_sources(core, work)
    return src
