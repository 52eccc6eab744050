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
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from devkit import pio_helpers as h

ESPRESSIF32_ENV = "ESPNN_ESPRESSIF32_DIR"
ARDUINO_ENV = "ESPNN_ARDUINO_ESP32_DIR"
IDF_ENV = "ESPNN_ESP_IDF_DIR"
LOG_ENV = "ESPNN_TOOL_LOG"  # where the wrappers append their invocations
# folders (os.pathsep-separated) whose sources may fail to compile for real without stopping the
# build: logged with their return code (an ESP-IDF submodule from another repository than the
# one ESP-IDF pins, e.g. upstream Mbed TLS for Espressif's fork)
TOLERATE_ENV = "ESPNN_TOOL_TOLERATE"

# The toolchain packages and the tool prefixes each holds.  Their owners and versions are read
# from the checkout (toolchain_packages), never written here: Arduino pins GCC 8.4 in
# platform.json; framework = espidf takes GCC 14 packages (ESP-IDF 5.x), the RISC-V one set in
# platform.py's configure_default_packages.  toolchain-xtensa-esp-elf is one GCC for every
# Xtensa chip, with the per-chip names ESP-IDF's toolchain files call (xtensa-esp32s3-elf-gcc).
TOOLCHAIN_PREFIXES = {
    "toolchain-xtensa-esp32": ("xtensa-esp32-elf",),
    "toolchain-xtensa-esp32s3": ("xtensa-esp32s3-elf",),
    "toolchain-riscv32-esp": ("riscv32-esp-elf",),
    "toolchain-xtensa-esp-elf": ("xtensa-esp-elf", "xtensa-esp32-elf", "xtensa-esp32s2-elf",
                                 "xtensa-esp32s3-elf"),
}
_IDF_RISCV = re.compile(r'\["toolchain-riscv32-esp"\]\["owner"\]\s*=\s*"([^"]+)"\s*'
                        r'self\.packages\["toolchain-riscv32-esp"\]\[\s*"version"\s*\]\s*=\s*"([^"]+)"')


@dataclass(frozen=True)
class Toolchain:
    name: str
    owner: str
    version: str
    prefixes: tuple[str, ...]


def toolchain_packages(platform_dir: Path) -> list[Toolchain]:
    """The toolchain packages espressif32 asks for (platform.json's, plus the RISC-V GCC that
    platform.py substitutes for framework = espidf), owners and versions as the checkout says."""
    manifest = json.loads((platform_dir / "platform.json").read_text())["packages"]
    found = [Toolchain(name, manifest[name]["owner"], manifest[name]["version"], prefixes)
             for name, prefixes in TOOLCHAIN_PREFIXES.items()]
    m = _IDF_RISCV.search((platform_dir / "platform.py").read_text())
    if m is None:
        raise ValueError(f"{platform_dir}/platform.py sets no toolchain-riscv32-esp owner and "
                         "version for framework = espidf; is it espressif32 6.x?")
    found.append(Toolchain("toolchain-riscv32-esp", m.group(1), m.group(2), ("riscv32-esp-elf",)))
    return found


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
if args == ["-dumpmachine"]:  # ESP-IDF asks the compiler's triplet (esp_common's version check)
    print(tool.rsplit("-", 1)[0])
    sys.exit(0)
binutil = {binutil!r}
if binutil:  # the chip's binutils exist (archives, ESP-IDF's ldgen reading their sections)
    import subprocess
    sys.exit(subprocess.run([binutil, *args]).returncode)
if tool.endswith("-objdump") and "-h" in args:  # ldgen: each archive's sections, none logged
    for a in args:
        if a.endswith(".a"):
            print("In archive " + a + ":")
    sys.exit(0)
real = {real!r}.get(tool.rsplit("-", 1)[-1])
XTENSA_CRASHES = {crashes!r}
xt = {xtensa!r}  # Xtensa: clang, its assembly text assembled by GNU as when one is configured
if real:
    args = [{rewrite!r}.get(a, a) for a in args]
    if not xt and not any(a.startswith("-march=") for a in args):  # ESP-IDF passes none for
        args.insert(0, {default_march!r})  # assembly: the ESP GCC's own default, not rv64
if real and xt:  # the GCC flags clang spells otherwise or lacks (XTENSA_FLAGS)
    asflags = [f for a in args for f in xt["asflags"].get(a, ())]
    args = [f for a in args
            for f in xt["translate"].get(a.split("=")[0] + "=" if "=" in a else a, (a,))]
if real and "-c" in args and not (xt and not xt["gas"] and args[-1].endswith(".S")):
    import subprocess  # a compiler for the chip's ISA exists: compile for real
    out = args[args.index("-o") + 1] if "-o" in args else None
    cc_args, as_call, stderr = args, None, ""
    if xt:  # clang's -S (-E for .S) text, then GNU as with the chip's plugin if there is one
        text = (out or "a") + ".s"
        step = "-E" if args[-1].endswith(".S") else "-S"
        cc_args = [step if a == "-c" else text if a == out else a for a in args]
        if xt["gas"] and out:
            as_call = [*xt["gas"], *asflags, "-o", out, text]
    proc = subprocess.run([*real, *cc_args], capture_output=True, text=True)
    stderr, retry = proc.stderr, None
    if xt and proc.returncode and any(m in stderr for m in XTENSA_CRASHES):  # LLVM 22's
        retry = "-O0"  # Xtensa backend dies optimising some functions: compiled unoptimised
        proc = subprocess.run([*real, *cc_args, retry], capture_output=True, text=True)
        stderr = proc.stderr if proc.returncode == 0 else stderr + proc.stderr
    if proc.returncode == 0 and as_call:  # less the CFI directives, which GNU as has not for
        with open(text, "rb") as fp:        # Xtensa (GCC writes .eh_frame itself): no unwind info
            lines = [ln for ln in fp if not ln.lstrip().startswith(b".cfi_")]
        with open(text, "wb") as fp:
            fp.writelines(lines)
        proc = subprocess.run(as_call, capture_output=True, text=True,
                              env={{**os.environ, **xt["env"]}})
        stderr += proc.stderr
    if log:
        with open(log, "a") as fp:
            fp.write(json.dumps({{"tool": "real:" + real[0], "args": args, "cwd": os.getcwd(),
                                  "returncode": proc.returncode, "stderr": stderr[-4000:],
                                  "assembler": as_call[0] if as_call else None,
                                  "retry": retry}}) + "\\n")
    source = os.path.realpath(args[-1])
    tolerated = [t for t in os.environ.get({tolerate_env!r}, "").split(os.pathsep) if t]
    if proc.returncode == 0 and out and xt and not as_call:  # code generation only: the
        open(out, "ab").close()                              # build waits for an object
    if proc.returncode and any(source.startswith(t) for t in tolerated):
        if out and xt and xt["gas"]:  # recorded as failed; the build goes on with an empty
            sys.exit(subprocess.run([*xt["gas"], "-o", out, os.devnull],  # object in its place
                                    env={{**os.environ, **xt["env"]}}).returncode)
        if out and xt:
            open(out, "ab").close()
        elif out:
            sys.exit(subprocess.run([*real, *[a for a in args if a.startswith(("-march", "-mabi"))],
                                     "-x", "c", "-c", os.devnull, "-o", out]).returncode)
        sys.exit(0)
    sys.stderr.write(stderr)
    sys.exit(proc.returncode)
ident = [a for a in args if os.path.basename(a).startswith(("CMakeCCompilerId.",
                                                            "CMakeCXXCompilerId."))]
if ident and "-c" not in args:  # CMake identifying the compiler: it reads the INFO strings of
    import subprocess           # what compiling its probe gives (the chip's GCC, else the host's:
    kind = tool.rsplit("-", 1)[-1]  # with clang too, so that ESP-IDF configures for GNU flags)
    probe = ([*real, *args, "-c", "-o", "a.out"] if real and not xt
             else [{host!r}.get(kind, "cc"), "-c", ident[0], "-o", "a.out"])
    sys.exit(subprocess.run(probe).returncode)
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
# where Espressif's newlib declares differently from Debian's (devkit/esp_newlib/sys/reent.h)
_ESP_NEWLIB = Path(__file__).resolve().parent / "esp_newlib"
_ARM_CXX = Path("/usr/lib/arm-none-eabi/include/c++")
# GCC 12 follows the 2019 RISC-V ISA spec, which moved the CSR and fence.i instructions out of
# the base ISA into zicsr/zifencei; the ESP toolchains' GCC 8 (Arduino-ESP32 2.x) still spells
# the same ISA rv32imc.  The wrapper spells it as GCC 12 needs (the same instructions).
MARCH_REWRITE = {"-march=rv32imc": "-march=rv32imc_zicsr_zifencei",
                 "-march=rv32imac": "-march=rv32imac_zicsr_zifencei"}


# with real RISC-V objects, real archives (Debian's binutils-riscv64-unknown-elf, which
# gcc-riscv64-unknown-elf depends on): ESP-IDF's ldgen reads their sections with objdump
RISCV_BINUTILS = {t: f"/usr/bin/riscv64-unknown-elf-{t.removeprefix('gcc-')}"
                  for t in ("ar", "gcc-ar", "ranlib", "gcc-ranlib", "objdump")}
# what the ESP RISC-V GCC compiles for when no -march is given (its configured default)
ESP_RISCV_DEFAULT_MARCH = "-march=rv32imac_zicsr_zifencei"


def riscv_compilers() -> dict[str, list[str]] | None:
    """{"gcc": [...], "g++": [...]}: the command lines that compile ESP RISC-V code for real,
    or None when Debian's RISC-V GCC, newlib's headers or the arm libstdc++ headers are
    missing (scripts/debian_packages.txt)."""
    import shutil

    gcc, gxx = shutil.which(RISCV_GCC), shutil.which("riscv64-unknown-elf-g++")
    cxx = sorted(_ARM_CXX.glob("*")) if _ARM_CXX.is_dir() else []
    if not gcc or not gxx or not cxx or not (_NEWLIB / "sys" / "reent.h").is_file():
        return None
    common = [*_RISCV_COMMON, "-idirafter", str(_ESP_NEWLIB), "-idirafter", str(_NEWLIB)]
    isystem = ["-isystem", str(cxx[-1]), "-isystem", str(cxx[-1] / "arm-none-eabi")]
    return {"gcc": [gcc, *common], "g++": [gxx, *common, *isystem]}


# A real compiler for the ESP Xtensa chips (ESP32, ESP32-S3: windowed ABI): Debian's clang-22,
# whose Xtensa backend knows the esp32 core; its driver takes no -mcpu=esp32, so the esp32
# core's options are given as target features (-Xclang -target-feature; both chips' cores have
# all of these, the S3's SIMD is reached through ESP-NN's assembly only).  Its integrated
# assembler rejects its own output on real files ("fixup value must be 4-byte aligned"): clang
# writes assembly text (-S; -E for .S files) that Debian's binutils-xtensa-lx106 GNU as
# assembles for the chip's core when the core's dynconfig plugin is given (XTENSA_DYNCONFIG_ENV:
# a folder with xtensa_esp32.so and xtensa_esp32s3.so, built from espressif/xtensa-dynconfig and
# espressif/xtensa-overlays outside the repository); without it, C and C++ go through code
# generation only (-S) and .S files are logged.  Headers as for RISC-V: newlib's (Debian's) and
# the arm-none-eabi libstdc++ headers, after clang's own (no host /usr/include: -nostdlibinc).
XTENSA_CLANG = "clang-22"
XTENSA_DYNCONFIG_ENV = "ESPNN_XTENSA_DYNCONFIG_DIR"
XTENSA_AS = "/usr/bin/xtensa-lx106-elf-as"
XTENSA_FEATURES = ("windowed", "fp", "density", "loop", "nsa", "minmax", "sext", "clamps",
                   "mul16", "mul32", "mul32high", "div32", "s32c1i", "threadptr", "bool", "mac16")
# The framework's GCC flags clang lacks: () drops one (a "-x=" key: any value), XTENSA_AS_FLAGS
# gives GNU as what GCC's driver would have given it for the same flag.
XTENSA_FLAGS: dict[str, tuple[str, ...]] = {
    "-mlongcalls": (),  # clang calls through l32r + callx8 anyway; gas gets --longcalls
    "-mtext-section-literals": (),  # literal placement is the assembler's (as GCC passes it)
    "-fstrict-volatile-bitfields": (),  # no clang flag: volatile bit-fields by clang's own rule
    "-fno-tree-switch-conversion": (),  # a GCC pass (-fno-jump-tables, kept, is clang's too)
    "-fno-shrink-wrap": (),  # GCC only; clang has no flag for it
    "-freorder-blocks": (),  # GCC's optimisation switches clang ignores with a warning
    "-fno-inline-small-functions": (),
    "-fno-inline-functions-called-once": (),
    "-Wno-old-style-declaration": (),  # a GCC-only warning (clang would warn it is unknown)
    "-Wno-frame-address": (),
    "-mfix-esp32-psram-cache-issue": (),  # ESP32 PSRAM workaround: not in clang (no PSRAM
    "-mfix-esp32-psram-cache-strategy=": (),  # board among the tested ones)
}
XTENSA_AS_FLAGS = {"-mlongcalls": ("--longcalls",),
                   "-mtext-section-literals": ("--text-section-literals",)}
XTENSA_CORES = {"xtensa-esp32-elf": "esp32", "xtensa-esp32s3-elf": "esp32s3"}
# How LLVM 22's Xtensa backend fails on code it should compile (not diagnostics): the register
# scavenger on a call with many stack arguments (add.c's 16-argument ESP-NN call at -O1 and up),
# a crash in a machine-function pass on C++ with -fexceptions (Arduino's) at -Os.  Such a
# compile is retried at -O0, which both pass, and logged as retried.
XTENSA_CRASHES = ("Cannot scavenge register", "PLEASE submit a bug report")


def xtensa_dynconfig(prefix: str) -> Path | None:
    """The chip's GNU as core plugin (XTENSA_DYNCONFIG_ENV), None when not given or absent."""
    folder = os.environ.get(XTENSA_DYNCONFIG_ENV)
    core = XTENSA_CORES.get(prefix)
    plugin = Path(folder) / f"xtensa_{core}.so" if folder and core else None
    return plugin if plugin and plugin.is_file() else None


def xtensa_compilers(prefix: str) -> tuple[dict[str, list[str]], dict[str, object]] | None:
    """({"gcc": [...], "g++": [...]}, the wrapper's Xtensa settings) for the chip of `prefix`
    (xtensa-esp32-elf, xtensa-esp32s3-elf), or None without clang-22, newlib's or the arm
    libstdc++ headers (scripts/debian_packages.txt)."""
    import shutil

    clang, clangxx = shutil.which(XTENSA_CLANG), shutil.which("clang++-22")
    cxx = sorted(_ARM_CXX.glob("*")) if _ARM_CXX.is_dir() else []
    if (prefix not in XTENSA_CORES or not clang or not clangxx or not cxx
            or not (_NEWLIB / "sys" / "reent.h").is_file()):
        return None
    features = [f for name in XTENSA_FEATURES for f in ("-Xclang", "-target-feature",
                                                        "-Xclang", f"+{name}")]
    # -fno-addrsig, -fno-dwarf-directory-asm: clang's .addrsig directive and its two-string
    # .file (DWARF 5 style), which GNU as for Xtensa does not take
    # -fno-integrated-as: inline assembly goes to GNU as unparsed (clang's parser knows no
    # ESP32-S3 ee.* instruction); with -S/-E only, clang never runs an assembler itself
    common = ["--target=xtensa", *features, "-fno-addrsig", "-fno-dwarf-directory-asm",
              "-fno-integrated-as", "-fno-crash-diagnostics", "-nostdlibinc",
              "-idirafter", str(_ESP_NEWLIB), "-idirafter", str(_NEWLIB)]
    isystem = ["-isystem", str(cxx[-1]), "-isystem", str(cxx[-1] / "arm-none-eabi")]
    plugin = xtensa_dynconfig(prefix)
    gas = [XTENSA_AS] if plugin and Path(XTENSA_AS).is_file() else None
    settings: dict[str, object] = {"translate": XTENSA_FLAGS, "asflags": XTENSA_AS_FLAGS,
                                   "gas": gas,
                                   "env": {"XTENSA_GNU_CONFIG": str(plugin)} if gas else {}}
    return {"gcc": [clang, *common], "g++": [clangxx, *common, *isystem]}, settings


def _wrapper(path: Path, name: str, real: dict[str, list[str]] | None = None,
             binutil: str | None = None, xtensa: dict[str, object] | None = None) -> None:
    path.write_text(_WRAPPER.format(python=sys.executable, name=name, log_env=LOG_ENV,
                                    real=real or {}, rewrite=MARCH_REWRITE, xtensa=xtensa,
                                    binutil=binutil,
                                    host={"gcc": "cc", "g++": "c++"},
                                    default_march=ESP_RISCV_DEFAULT_MARCH,
                                    tolerate_env=TOLERATE_ENV, crashes=XTENSA_CRASHES))
    path.chmod(0o755)


def seed_wrapper_packages(core: Path, platform_dir: Path,
                          riscv: dict[str, list[str]] | None = None,
                          xtensa: bool = False) -> None:
    """The toolchain packages espressif32 asks for (toolchain_packages: both RISC-V GCCs, as
    two installs of one package) and tool-esptoolpy, as logging wrappers at the versions the
    checkout pins; with `riscv` (riscv_compilers()) the RISC-V toolchains' gcc/g++ compile for
    real, with `xtensa` the ESP32's and ESP32-S3's gcc/g++ compile with clang-22 where
    xtensa_compilers() finds it."""
    seen: set[str] = set()
    for chain in toolchain_packages(platform_dir):
        folder = chain.name if chain.name not in seen else f"{chain.name}@{chain.version}"
        seen.add(chain.name)
        pkg = core / "packages" / folder
        _package(pkg, chain.name, chain.version, chain.owner)
        (pkg / "bin").mkdir(exist_ok=True)
        for prefix in chain.prefixes:
            for tool in TOOLS:
                real = riscv if prefix.startswith("riscv32") and tool in ("gcc", "g++") else None
                binutil = (RISCV_BINUTILS.get(tool) if riscv and prefix.startswith("riscv32")
                           else None)
                xt = xtensa_compilers(prefix) if xtensa and tool in ("gcc", "g++") else None
                if xt:
                    real = xt[0]
                _wrapper(pkg / "bin" / f"{prefix}-{tool}", f"{prefix}-{tool}", real, binutil,
                         xt[1] if xt else None)
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
    assembler: str | None = None  # what assembled the compiler's text (Xtensa: GNU as), if any
    retry: str | None = None  # the flag a real compile was retried with (xtensa_compilers)

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


# --- framework = espidf -------------------------------------------------------------------------
IDF_PYTHON_ENV = "ESPNN_IDF_PYTHON"  # a Python with ESP-IDF's build requirements (below)
# what espressif32 6.13's espidf.py installs into its IDF Python for ESP-IDF 5 (install_python_deps)
IDF_PYTHON_REQUIREMENTS = ("idf-component-manager~=2.2", "esp-idf-kconfig~=2.5.0",
                           "cryptography~=44.0.0", "pyparsing>=3.1.0,<4", "urllib3<2",
                           "pydantic<2.12.0", "cmake~=3.30.0")
IDF_VENV_FORMAT = "1.0.0"  # espidf.py's IDF_ENV_VERSION: the penv marker it accepts as ready


def idf_version(idf_dir: Path) -> str:
    """"5.5.3" from the tree's tools/cmake/version.cmake (what espidf.py falls back to)."""
    text = (idf_dir / "tools" / "cmake" / "version.cmake").read_text()
    parts = re.findall(r"set\(IDF_VERSION_(?:MAJOR|MINOR|PATCH) (\d+)\)", text)
    if len(parts) != 3:
        raise ValueError(f"{idf_dir} has no ESP-IDF version in tools/cmake/version.cmake")
    return ".".join(parts)


def _script(path: Path, target: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'#!/bin/sh\nexec "{target}" "$@"\n')
    path.chmod(0o755)


def seed_idf_packages(core: Path, idf_dir: Path, idf_python: Path) -> str:
    """What espidf.py needs for ESP-IDF 5 besides the toolchains, offline; returns the ESP-IDF
    version.  framework-espidf: the named tree as PlatformIO's package (its version encoded as
    the registry does, 5.5.3 -> 3.50503.0), a folder of links to the tree's top entries beside
    the two manifests, so the tree itself stays untouched; tool-cmake: the IDF Python's pip
    cmake 3.30 (espressif32 asks for ~3.30); tool-ninja: the system's; toolchain-esp32ulp,
    tool-esp-rom-elfs and the two GDB packages: empty (no ULP code, no debugging); the IDF Python
    environment espidf.py would create with pip (penv/.espidf-<version>, a real folder whose
    python runs `idf_python`, marked ready the way espidf.py marks the one it made)."""
    import shutil
    import subprocess

    version = idf_version(idf_dir)
    major, minor, patch = (int(v) for v in version.split("."))
    fw = core / "packages" / "framework-espidf"
    _package(fw, "framework-espidf", f"3.{major}{minor:02d}{patch:02d}.0", "platformio")
    # components/ one link per component: espidf.py adds a component of its own there (__pio_env)
    for entry in [*idf_dir.iterdir(), *(idf_dir / "components").iterdir()]:
        link = fw / entry.relative_to(idf_dir)
        if entry.name in ("package.json", ".piopm", "version.txt", "components") or link.exists():
            continue
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(entry.resolve())
    cmake = idf_python.parent / "cmake"
    out = subprocess.run([str(cmake), "--version"], capture_output=True, text=True).stdout
    m = re.match(r"cmake version (3\.\d+\.\d+)", out)
    if m is None:
        raise ValueError(f"{cmake} is not CMake 3.x ({out.strip()!r}): pip install 'cmake~=3.30.0' "
                         f"into {idf_python.parent.parent}")
    _package(core / "packages" / "tool-cmake", "tool-cmake", m.group(1), "platformio")
    _script(core / "packages" / "tool-cmake" / "bin" / "cmake", str(cmake))
    ninja = shutil.which("ninja")
    if ninja is None:
        raise ValueError("no ninja on PATH (Debian's ninja-build)")
    ninja_version = subprocess.run([ninja, "--version"], capture_output=True, text=True).stdout.strip()
    _package(core / "packages" / "tool-ninja", "tool-ninja", ninja_version, "platformio")
    _script(core / "packages" / "tool-ninja" / "ninja", ninja)
    for name, owner, pkg_version in (("toolchain-esp32ulp", "platformio", "1.23800.240113"),
                                     ("tool-esp-rom-elfs", "platformio", "0.0.1+20241011"),
                                     ("tool-xtensa-esp-elf-gdb", "espressif", "12.1.0+20221002"),
                                     ("tool-riscv32-esp-elf-gdb", "espressif", "12.1.0+20221002")):
        _package(core / "packages" / name, name, pkg_version, owner)
        (core / "packages" / name / "bin").mkdir(exist_ok=True)
    penv = core / "penv" / f".espidf-{version}"
    _script(penv / "bin" / "python", str(idf_python))
    py = subprocess.run([str(penv / "bin" / "python"), "-c",
                         "import sys;print('{0}.{1}.{2}-{3}.{4}'.format(*list(sys.version_info)))"],
                        capture_output=True, text=True, check=True).stdout.strip()
    (penv / "pio-idf-venv.json").write_text(json.dumps({"version": IDF_VENV_FORMAT,
                                                        "python_version": py}))
    return version
