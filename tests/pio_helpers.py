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
        workspace: Path | None = None) -> PioResult:
    """`pio ARGS` in `project` (its working directory, as a user runs it), killed after
    `timeout` seconds.  `workspace` moves the project's .pio folder (PLATFORMIO_WORKSPACE_DIR),
    so an example can be built in place without writing into the checkout."""
    cmd = ["timeout", "--kill-after=10", str(timeout), str(PIO), *args]
    env = pio_env(core)
    if workspace is not None:
        env["PLATFORMIO_WORKSPACE_DIR"] = str(workspace)
    proc = subprocess.run(
        cmd, cwd=project, env=env, capture_output=True, text=True, errors="replace",
        stdin=subprocess.DEVNULL,
    )
    return PioResult(list(args), proc.returncode, proc.stdout, proc.stderr)


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
# test writes: it has the real one's name, version, framework names and the two boards we use,
# and its builder records what it was handed (board, frameworks, include paths, defines, the
# executorch files) into handoff.json instead of compiling.  It proves our side of the contract
# (package selection, boards, the hand-off with our component and model header); it does not
# prove that espressif32's real builder, ESP-IDF or Arduino-ESP32 compile the component.

_STANDIN_PLATFORM_PY = '''
from platformio.public import PlatformBase


class Espressif32Platform(PlatformBase):
    """Stand-in: marks the board's toolchain and the framework package as required."""

    def configure_default_packages(self, variables, targets):
        board = variables.get("board")
        if board:
            mcu = self.board_config(board).get("build.mcu", "esp32")
            self.packages["toolchain-xtensa-%s" % mcu]["optional"] = False
            for name in ("toolchain-xtensa-esp32", "toolchain-xtensa-esp32s3"):
                if name != "toolchain-xtensa-%s" % mcu:
                    self.packages.pop(name, None)
        return super().configure_default_packages(variables, targets)
'''

_STANDIN_MAIN = '''
import json, os
from SCons.Script import DefaultEnvironment, Default, AlwaysBuild

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
if env.get("PIOFRAMEWORK"):
    for fw in env["PIOFRAMEWORK"]:
        env.SConscript(env.GetFrameworkScript(fw), exports="env")

def _write(target, source, env):
    record.update(
        cpppath=[env.subst(str(p)) for p in env.get("CPPPATH", [])],
        cppdefines=[str(d) if not isinstance(d, tuple) else "%s=%s" % d for d in env.get("CPPDEFINES", [])],
        cmake_extra_args=env.BoardConfig().get("build.cmake_extra_args", ""),
        libs=[str(x) for x in env.get("ESPNN_STANDIN_LIBS", [])],
        buildfiles=sorted(env.subst(str(getattr(n, "abspath", n))) for n in env.Flatten(env.get("PIOBUILDFILES", []))),
        executorch_dir=env.get("ESPNN_MODEL_DIR", ""),
    )
    with open(str(target[0]), "w") as fp:
        json.dump(record, fp, indent=1)

out = env.Command(os.path.join(env.subst("$BUILD_DIR"), "handoff.json"), [],
                  env.Action(_write, "Recording the hand-off"))
AlwaysBuild(out)
Default(out)
'''

_STANDIN_FRAMEWORK = '''
import os
from SCons.Script import Import
Import("env")
os.makedirs(env.subst("$BUILD_DIR"), exist_ok=True)
with open(os.path.join(env.subst("$BUILD_DIR"), "standin_{name}.ran"), "w") as fp:
    fp.write("ran")
'''

_BOARDS = {
    "esp32dev": {"mcu": "esp32", "name": "Stand-in ESP32 Dev Module", "ram": 327680},
    "esp32-s3-devkitc-1": {"mcu": "esp32s3", "name": "Stand-in ESP32-S3-DevKitC-1", "ram": 327680},
}


def _package(path: Path, name: str, version: str, kind: str) -> None:
    path.mkdir(parents=True, exist_ok=True)
    (path / "package.json").write_text(json.dumps({"name": name, "version": version}))
    (path / ".piopm").write_text(json.dumps({
        "type": "tool", "name": name, "version": version,
        "spec": {"owner": "platformio", "id": None, "name": name, "requirements": None, "uri": None},
    }))


def install_standin_espressif32(core: Path, work: Path) -> Path:
    """Write the stand-in platform, install it into `core` like a user would
    (`pio pkg install -g -p <folder>`), and seed the packages it asks for."""
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
        "packages": {
            "toolchain-xtensa-esp32": {"type": "toolchain", "optional": True, "version": "~8.4.0"},
            "toolchain-xtensa-esp32s3": {"type": "toolchain", "optional": True, "version": "~8.4.0"},
            "framework-arduinoespressif32": {"type": "framework", "optional": True, "version": "~3.20017.0"},
            "framework-espidf": {"type": "framework", "optional": True, "version": "~3.50503.0"},
            "tool-esptoolpy": {"type": "uploader", "version": "~2.41100.0"},
        },
    }
    (src / "platform.json").write_text(json.dumps(manifest, indent=1))
    (src / "platform.py").write_text(_STANDIN_PLATFORM_PY)
    (src / "builder" / "main.py").write_text(_STANDIN_MAIN)
    for fw in ("arduino", "espidf"):
        (src / "builder" / "frameworks" / f"{fw}.py").write_text(_STANDIN_FRAMEWORK.format(name=fw))
    for board, b in _BOARDS.items():
        (src / "boards" / f"{board}.json").write_text(json.dumps({
            "build": {"mcu": b["mcu"], "core": "esp32", "f_cpu": "240000000L"},
            "frameworks": ["arduino", "espidf"],
            "name": b["name"],
            "upload": {"maximum_ram_size": b["ram"], "maximum_size": 4194304},
            "url": "https://example.invalid/standin",
            "vendor": "Espressif",
        }))
    pio(core, work, "pkg", "install", "-g", "--skip-dependencies", "-p", f"file://{src}", timeout=120).check()
    pkgs = core / "packages"
    _package(pkgs / "toolchain-xtensa-esp32", "toolchain-xtensa-esp32", "8.4.0", "toolchain")
    _package(pkgs / "toolchain-xtensa-esp32s3", "toolchain-xtensa-esp32s3", "8.4.0", "toolchain")
    _package(pkgs / "framework-arduinoespressif32", "framework-arduinoespressif32", "3.20017.0", "framework")
    _package(pkgs / "framework-espidf", "framework-espidf", "3.50503.0", "framework")
    _package(pkgs / "tool-esptoolpy", "tool-esptoolpy", "2.41100.0", "uploader")
    _package(pkgs / "framework-executorch", "framework-executorch", "1.5.1", "framework")
    return src
