"""The real espressif32 builders in a test PlatformIO core (tests/test_real_builders.py).

Nothing here comes from those projects: the trees are named by environment variables (a
platform-espressif32 checkout, an Arduino-ESP32 framework package, an ESP-IDF tree), installed
the way a user installs a local platform (`pio pkg install -g -p file://...`) or overrides a
package (`platform_packages = framework-arduinoespressif32 @ symlink://...`).  What no public
tree carries (the Xtensa/RISC-V toolchains, esptool) is a package of logging wrappers: each
tool invocation is appended to a JSON-lines log and the output file it names is created, so the
real builder scripts run to the end and the test reads every command they ran.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from devkit import pio_helpers as h

ESPRESSIF32_ENV = "ESPNN_ESPRESSIF32_DIR"
ARDUINO_ENV = "ESPNN_ARDUINO_ESP32_DIR"
IDF_ENV = "ESPNN_ESP_IDF_DIR"
LOG_ENV = "ESPNN_TOOL_LOG"  # where the wrappers append their invocations

# espressif32 6.13's toolchain packages (platform.json: name -> owner, version), per tool prefix
TOOLCHAINS = {
    "toolchain-xtensa-esp32": ("espressif", "8.4.0+2021r2-patch5", "xtensa-esp32-elf"),
    "toolchain-xtensa-esp32s3": ("espressif", "8.4.0+2021r2-patch5", "xtensa-esp32s3-elf"),
    "toolchain-riscv32-esp": ("espressif", "8.4.0+2021r2-patch5", "riscv32-esp-elf"),
    "toolchain-xtensa-esp-elf": ("platformio", "14.2.0+20251107", "xtensa-esp-elf"),
}
TOOLS = ("gcc", "g++", "cpp", "as", "ld", "ar", "ranlib", "gcc-ar", "gcc-ranlib", "gcc-nm", "nm",
         "objcopy", "objdump", "size", "strip", "gdb", "readelf")

_WRAPPER = '''#!{python}
"""Logging stand-in of {name}: records the call, creates the output it names."""
import json, os, sys
tool = os.path.basename(sys.argv[0])
args = sys.argv[1:]
log = os.environ.get({log_env!r})
if log:
    with open(log, "a") as fp:
        fp.write(json.dumps({{"tool": tool, "args": args, "cwd": os.getcwd()}}) + "\\n")
real = {real!r}.get(tool.rsplit("-", 1)[-1])
if real and "-c" in args:  # a compiler for the chip's ISA exists: compile for real
    import subprocess
    args = [{rewrite!r}.get(a, a) for a in args]
    proc = subprocess.run([*real, *args], capture_output=True, text=True)
    if log:
        with open(log, "a") as fp:
            fp.write(json.dumps({{"tool": "real:" + real[0], "args": args, "cwd": os.getcwd(),
                                  "returncode": proc.returncode,
                                  "stderr": proc.stderr[-4000:]}}) + "\\n")
    sys.stderr.write(proc.stderr)
    sys.exit(proc.returncode)
out = None
for flag, value in zip(args, args[1:]):
    if flag == "-o":
        out = value
if tool.endswith(("-ar", "-gcc-ar")) and len(args) > 1:
    out = args[1]
if tool == "esptool.py" and "-o" in args:
    out = args[args.index("-o") + 1]
if out:
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    open(out, "ab").close()
if tool.endswith("-size"):  # what PlatformIO's size check parses (Berkeley format)
    print("   text\\t   data\\t    bss\\t    dec\\t    hex\\tfilename")
    print("      0\\t      0\\t      0\\t      0\\t      0\\t" + (args[-1] if args else ""))
'''


def _package(path: Path, name: str, version: str, owner: str) -> None:
    path.mkdir(parents=True, exist_ok=True)
    (path / "package.json").write_text(json.dumps({"name": name, "version": version}))
    (path / ".piopm").write_text(json.dumps({
        "type": "tool", "name": name, "version": version,
        "spec": {"owner": owner, "id": None, "name": name, "requirements": None, "uri": None},
    }))


# A real compiler for the ESP RISC-V chips (C3: rv32imc, C6: rv32imac): Debian's bare-metal
# RISC-V GCC 12 for the 32-bit ABI; newlib's headers (Debian's libnewlib-dev), searched after
# GCC's own, for the `#include_next` of the framework's newlib/platform_include (the ESP
# toolchains are newlib-based); and (Debian ships no C++ library for this target) the
# arm-none-eabi libstdc++ headers, header-only for what the sources use (DESIGN.md).  The
# framework's own flags (its -march, -std, ~190 include folders, warnings) follow these.
RISCV_GCC = "riscv64-unknown-elf-gcc"
_RISCV_COMMON = ["-mabi=ilp32"]
_NEWLIB = Path("/usr/include/newlib")
_ARM_CXX = Path("/usr/lib/arm-none-eabi/include/c++")
# GCC 12 follows the 2019 RISC-V ISA spec, which moved the CSR and fence.i instructions out of
# the base ISA into zicsr/zifencei; the ESP toolchains' GCC 8 (Arduino-ESP32 2.x) still spells
# the same ISA rv32imc.  The wrapper spells it as GCC 12 needs (the same instructions).
MARCH_REWRITE = {"-march=rv32imc": "-march=rv32imc_zicsr_zifencei",
                 "-march=rv32imac": "-march=rv32imac_zicsr_zifencei"}


def riscv_compilers() -> dict[str, list[str]] | None:
    """{"gcc": [...], "g++": [...]}: the command lines that compile ESP RISC-V code for real,
    or None when Debian's RISC-V GCC, newlib's headers or the arm libstdc++ headers are
    missing (scripts/debian_packages.txt)."""
    import shutil

    gcc, gxx = shutil.which(RISCV_GCC), shutil.which("riscv64-unknown-elf-g++")
    cxx = sorted(_ARM_CXX.glob("*")) if _ARM_CXX.is_dir() else []
    if not gcc or not gxx or not cxx or not (_NEWLIB / "sys" / "reent.h").is_file():
        return None
    common = [*_RISCV_COMMON, "-idirafter", str(_NEWLIB)]
    isystem = ["-isystem", str(cxx[-1]), "-isystem", str(cxx[-1] / "arm-none-eabi")]
    return {"gcc": [gcc, *common], "g++": [gxx, *common, *isystem]}


def _wrapper(path: Path, name: str, real: dict[str, list[str]] | None = None) -> None:
    path.write_text(_WRAPPER.format(python=sys.executable, name=name, log_env=LOG_ENV,
                                    real=real or {}, rewrite=MARCH_REWRITE))
    path.chmod(0o755)


def seed_wrapper_packages(core: Path, riscv: dict[str, list[str]] | None = None) -> None:
    """The toolchain packages espressif32 6.13 asks for, and tool-esptoolpy, as logging
    wrappers at the versions its platform.json pins; with `riscv` (riscv_compilers()) the
    RISC-V toolchain's gcc/g++ compile for real."""
    for name, (owner, version, prefix) in TOOLCHAINS.items():
        pkg = core / "packages" / name
        _package(pkg, name, version, owner)
        (pkg / "bin").mkdir(exist_ok=True)
        for tool in TOOLS:
            real = riscv if prefix.startswith("riscv32") and tool in ("gcc", "g++") else None
            _wrapper(pkg / "bin" / f"{prefix}-{tool}", f"{prefix}-{tool}", real)
    esptool = core / "packages" / "tool-esptoolpy"
    _package(esptool, "tool-esptoolpy", "2.41100.0", "platformio")
    _wrapper(esptool / "esptool.py", "esptool.py")


def install_platform(core: Path, platform_dir: Path) -> None:
    """The real espressif32 from its checkout, as a user installs a local platform."""
    h.pio(core, core.parent, "pkg", "install", "-g", "--skip-dependencies", "-p",
          f"file://{platform_dir}", timeout=300).check()


@dataclass(frozen=True)
class Call:
    tool: str
    args: list[str]
    cwd: str
    returncode: int = 0  # a real compile's ("real:<compiler>" tools)
    stderr: str = ""

    def output(self) -> str | None:
        return self.args[self.args.index("-o") + 1] if "-o" in self.args else None

    def _path(self, value: str) -> Path:
        return (Path(self.cwd) / value).resolve()

    def source(self) -> Path | None:
        """The compiled source of a `-c` call (its last argument), resolved."""
        return self._path(self.args[-1]) if "-c" in self.args else None

    def object(self) -> Path | None:
        out = self.output()
        return self._path(out) if out else None

    def includes(self) -> list[Path]:
        """Its -I folders, resolved, in order (the framework's long lists come as @files:
        read too)."""
        args: list[str] = []
        for a in self.args:
            if a.startswith("@") and self._path(a[1:]).is_file():
                args += self._path(a[1:]).read_text().split()
            else:
                args.append(a)
        return [self._path(a[2:].strip('"')) for a in args if a.startswith("-I")]


def read_log(path: Path) -> list[Call]:
    if not path.is_file():
        return []
    return [Call(**json.loads(line)) for line in path.read_text().splitlines() if line.strip()]


def missing_variables(*names: str) -> list[str]:
    return [n for n in names if not os.environ.get(n)]
