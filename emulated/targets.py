"""Build C programs for the emulated 32-bit targets and run them under QEMU.

Three targets, one record each (add a target by adding a record):

- ``rv32imac``: ``riscv64-unknown-elf-gcc -march=rv32imac -mabi=ilp32`` with picolibc's libc,
  run on ``qemu-system-riscv32 -M virt -bios none`` with semihosting.  QEMU's RISC-V emulation
  performs misaligned loads silently, so this target proves 32-bit ``size_t``, not alignment.
- ``lx106``: ``xtensa-lx106-elf-gcc`` (call0 ABI, no FPU) with picolibc and our libgcc
  supplements, run on ``qemu-system-xtensa -M sim -cpu lx106`` with simulator calls.  An
  unaligned 32-bit load raises LoadStoreAlignmentCause (9) there, which our vector reports.

Both use our own startup code and linker script (``emulated/<arch>/``), print through
semihosting, and exit with ``main``'s return value; a trap exits with ``EMU_EXIT_TRAP``.

- ``cortex-m7``: ``arm-none-eabi-gcc``/``g++`` (Thumb-2, FPv5 double-precision FPU, hard float)
  with picolibc and its libstdc++, run on ``qemu-system-arm -M mps2-an500`` with semihosting.
  The one C++ target (Debian ships no libstdc++ for the other two): it runs ExecuTorch's runtime
  with the whole component (``emulated/mcu_stack.py``), and the golden suite like the others
  (``emulated/cortex_m/emu_glue.c`` puts the harness on picolibc's stdio).  picolibc's
  semihosting crt0 starts it, its stdio prints and ``main``'s return value is the exit status; a
  fault prints ``ARM fault: ...`` and exits 1.  Memory: 4 MiB at 0 (code, read-only data: the
  "flash") and 4 MiB at 0x20000000 (data, heap, stack).

Two hosted records run the same programs natively under AddressSanitizer and UBSan:
``host32`` (``gcc -m32``, gcc-multilib: 32-bit ``size_t``) and ``host64``; there every buffer
the engine gets is its own exact-size allocation (``EMU_HOSTED``), and UBSan's alignment
check turns any typed load from the odd-address payload into a failure.
Builds are cached by a hash of every source, flag and compiler version, under
``$ESPNN_EMU_CACHE`` or ``<tmp>/executorch_espnn_emu``.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from executorch_espnn import component_sources

EMU = Path(__file__).resolve().parent
ROOT = EMU.parent
COMPONENT = ROOT / "espnn_component"
ENGINE = COMPONENT / "engine"
HOST_ESPNN = COMPONENT / "host_espnn"

EXIT_TRAP = 3  # EMU_EXIT_TRAP in emulated/include/emu.h
EXIT_ABORT = 4  # abort() in emulated/common/emu_abort.c

WARNINGS = ("-std=c11", "-Wall", "-Wextra", "-Werror")
# bare metal: -fno-builtin keeps our libgcc supplements honest
BARE_CFLAGS = ("-O2", "-g", "-ffunction-sections", "-fdata-sections", "-fno-builtin",
               "-ffreestanding")
SANITIZE = ("-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
            "-fno-omit-frame-pointer", "-DEMU_HOSTED")
# the sanitizers' own exit codes, so a report is never mistaken for the program's status
SANITIZER_ENV = {
    "ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0:exitcode=86",
    "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1:exitcode=87",
}


class ToolMissing(RuntimeError):
    """A cross compiler or emulator is not installed; the message names the Debian package."""


@dataclass(frozen=True)
class Target:
    name: str
    cc: str
    cflags: tuple[str, ...]
    ldflags: tuple[str, ...]
    runtime: tuple[Path, ...]  # startup, semihosting and support sources
    qemu: tuple[str, ...]  # the command up to (not including) the ELF path; () runs natively
    packages: tuple[str, ...]  # Debian packages providing cc, libc and qemu
    env: tuple[tuple[str, str], ...] = ()
    cxx: str = ""  # the C++ compiler, when the target has a C++ library
    cxxflags: tuple[str, ...] = ()  # C++-only flags after cflags
    esp_chip: str = ""  # booted through the chip's ROM on Espressif's QEMU (emulated/esp_qemu.py)
    cxx_library: bool = True  # False: C++ headers only, so the C driver links (no -lstdc++)
    ar: str = ""  # the archiver, when not the cross compiler's own (<prefix>ar) or the host's

    @property
    def emulated(self) -> bool:
        return bool(self.qemu or self.esp_chip)

    @property
    def archiver(self) -> str:
        """``ar`` when set, else the archiver of the target's binutils (the host's for hosted
        targets)."""
        if self.ar:
            return self.ar
        return self.cc.removesuffix("gcc") + "ar" if self.cc.endswith("gcc") and self.emulated else "ar"

    def tools(self, *, emulator: bool = True) -> tuple[str, ...]:
        """The Debian-packaged tools (Espressif's QEMU is esp_qemu's to find)."""
        compilers = (self.cc, self.cxx) if self.cxx else (self.cc,)
        return (*compilers, self.qemu[0]) if self.qemu and emulator else compilers


RV32 = Target(
    name="rv32imac",
    cc="riscv64-unknown-elf-gcc",
    cflags=(*BARE_CFLAGS, "-march=rv32imac", "-mabi=ilp32", "-mcmodel=medany",
            "--specs=/usr/lib/picolibc/riscv64-unknown-elf/picolibc.specs"),
    ldflags=("-nostartfiles", "-T", str(EMU / "riscv32" / "link.ld"),
             "-Wl,--gc-sections", "-Wl,--no-warn-rwx-segments"),
    runtime=(EMU / "riscv32" / "start.S", EMU / "riscv32" / "semihost.c",
             EMU / "common" / "emu_print.c", EMU / "common" / "emu_abort.c"),
    qemu=("qemu-system-riscv32", "-M", "virt", "-m", "128M", "-nographic", "-monitor", "none",
          "-semihosting-config", "enable=on,target=native", "-bios", "none", "-kernel"),
    packages=("gcc-riscv64-unknown-elf", "picolibc-riscv64-unknown-elf", "qemu-system-misc"),
)

LX106 = Target(
    name="lx106",
    cc="xtensa-lx106-elf-gcc",
    cflags=(*BARE_CFLAGS, "-mtext-section-literals", "-mlongcalls",
            "--specs=/usr/lib/xtensa-lx106-elf/picolibc.specs"),
    ldflags=("-nostartfiles", "-T", str(EMU / "xtensa_lx106" / "link.ld"),
             "-Wl,--gc-sections", "-Wl,--no-warn-rwx-segments"),
    runtime=(EMU / "xtensa_lx106" / "start.S", EMU / "xtensa_lx106" / "semihost.c",
             EMU / "xtensa_lx106" / "libgcc_extra.c", EMU / "common" / "emu_print.c",
             EMU / "common" / "emu_abort.c"),
    qemu=("qemu-system-xtensa", "-M", "sim", "-cpu", "lx106", "-m", "128M", "-nographic",
          "-monitor", "none", "-semihosting", "-kernel"),
    packages=("gcc-xtensa-lx106", "picolibc-xtensa-lx106-elf", "qemu-system-misc"),
)

HOST32 = Target(
    name="host32",
    cc="gcc",
    cflags=("-m32", *SANITIZE),
    ldflags=("-m32", "-fsanitize=address,undefined"),
    runtime=(EMU / "host" / "host.c", EMU / "common" / "emu_print.c"),
    qemu=(),
    packages=("gcc-multilib",),
    env=tuple(SANITIZER_ENV.items()),
)

HOST64 = Target(
    name="host64",
    cc="gcc",
    cflags=SANITIZE,
    ldflags=("-fsanitize=address,undefined",),
    runtime=(EMU / "host" / "host.c", EMU / "common" / "emu_print.c"),
    qemu=(),
    packages=("gcc",),
    env=tuple(SANITIZER_ENV.items()),
)

# The MPS2 AN500 memory map QEMU emulates: SSRAM1 (4 MiB at 0) holds code and read-only data,
# SSRAM2/3 (4 MiB at 0x20000000) the rest; picolibc's linker script takes these as symbols.  The
# stack grows down from the top of RAM, the heap up from the end of .bss (picolibc keeps the
# 2 KiB below the stack out of the heap; nothing else bounds the stack, as on the chip).
_MPS2_AN500_MEMORY = ("-Wl,--defsym=__flash=0x0", "-Wl,--defsym=__flash_size=0x400000",
                      "-Wl,--defsym=__ram=0x20000000", "-Wl,--defsym=__ram_size=0x400000")

CORTEX_M7 = Target(
    name="cortex-m7",
    cc="arm-none-eabi-gcc",
    cxx="arm-none-eabi-g++",
    # -Os as firmware is built (ESP-IDF's default optimisation is for size too)
    cflags=("-Os", "-g", "-ffunction-sections", "-fdata-sections", "-mcpu=cortex-m7", "-mthumb",
            "-mfloat-abi=hard", "-mfpu=fpv5-d16",
            "--specs=/usr/lib/picolibc/arm-none-eabi/picolibcpp.specs"),
    cxxflags=("-fno-exceptions", "-fno-rtti"),
    # without picolibc's semihosting crt0 a program never exits and QEMU runs until the timeout
    ldflags=("--oslib=semihost", "--crt0=semihost", "-Wl,--gc-sections", *_MPS2_AN500_MEMORY),
    runtime=(EMU / "cortex_m" / "emu_glue.c", EMU / "common" / "emu_print.c"),
    qemu=("qemu-system-arm", "-M", "mps2-an500", "-cpu", "cortex-m7", "-nographic", "-monitor",
          "none", "-semihosting-config", "enable=on,target=native", "-kernel"),
    packages=("gcc-arm-none-eabi", "picolibc-arm-none-eabi", "libstdc++-arm-none-eabi-picolibc",
              "qemu-system-arm"),
)

ESP32C3_DIR = EMU / "esp32c3"
# header-only libstdc++ for a compiler that has none: newlib's arm-none-eabi build of GCC 12.2's
# headers (libstdc++-arm-none-eabi-dev) and their generic configuration folder
ARM_LIBSTDCXX = Path("/usr/include/newlib/c++/12.2.1")

ESP32C3 = Target(
    name="esp32c3",
    cc="riscv64-unknown-elf-gcc",
    cxx="riscv64-unknown-elf-g++",
    # -Os as ESP-IDF builds by default; rv32imc selects picolibc's rv32im variant (an ISA string
    # with _zicsr would select none: CSR instructions are in assembly with .option arch)
    cflags=("-Os", "-g", "-ffunction-sections", "-fdata-sections", "-march=rv32imc",
            "-mabi=ilp32", "--specs=/usr/lib/picolibc/riscv64-unknown-elf/picolibc.specs"),
    cxxflags=("-fno-exceptions", "-fno-rtti", "-fno-threadsafe-statics", "-isystem",
              str(ARM_LIBSTDCXX), "-isystem", str(ARM_LIBSTDCXX / "arm-none-eabi")),
    ldflags=("-nostartfiles", "-T", str(ESP32C3_DIR / "link.ld"), "-Wl,--gc-sections",
             "-Wl,--no-warn-rwx-segments"),
    runtime=(ESP32C3_DIR / "start.S", ESP32C3_DIR / "boot.c", ESP32C3_DIR / "console.c",
             EMU / "common" / "emu_print.c", EMU / "common" / "emu_abort.c"),
    qemu=(),
    packages=("gcc-riscv64-unknown-elf", "picolibc-riscv64-unknown-elf",
              "libstdc++-arm-none-eabi-dev"),
    esp_chip="esp32c3",
    cxx_library=False,
)

# The engine's golden-suite targets (tests/hardening/test_emulated.py runs every one).
TARGETS: dict[str, Target] = {t.name: t for t in (RV32, LX106, HOST32, HOST64)}
EMULATED: dict[str, Target] = {n: t for n, t in TARGETS.items() if t.emulated}
# The 32-bit bare-metal cross compilers every firmware source must build with (the
# cross-compile gate, tests/hardening/test_cross_compile.py); only cortex-m7 compiles C++.
CROSS: dict[str, Target] = {t.name: t for t in (RV32, LX106, CORTEX_M7)}


def require_tools(target: Target, *, emulator: bool = True) -> None:
    """Raise ToolMissing (never skip) when a tool of ``target`` is not installed (its compilers
    only, with ``emulator=False``)."""
    missing = [tool for tool in target.tools(emulator=emulator) if shutil.which(tool) is None]
    specs = [f for f in target.cflags if f.startswith("--specs=")]
    missing += [s.split("=", 1)[1] for s in specs if not Path(s.split("=", 1)[1]).exists()]
    if target.cxx and shutil.which(target.cxx) and not missing:
        missing += _missing_cxx_library(target)
    if missing:
        raise ToolMissing(
            f"{target.name}: {', '.join(missing)} not found; install the Debian packages "
            f"{' '.join(target.packages)} (.ci/run does)")


@functools.cache
def _missing_cxx_library(target: Target) -> tuple[str, ...]:
    """The C++ library's <cstddef>, when the compiler is there but its library is not."""
    r = subprocess.run([target.cxx, *target.cflags, *target.cxxflags, "-x", "c++", "-E", "-o",
                        os.devnull, "-"], input="#include <cstddef>\n", capture_output=True,
                       text=True, check=False)
    return () if r.returncode == 0 else (f"the C++ library of {target.cxx} (<cstddef>)",)


def engine_sources() -> list[Path]:
    """The engine and the host ESP-NN kernels, as every build of the engine compiles them (the
    component's CMake lists)."""
    lists = component_sources.load(COMPONENT)
    return sorted([*lists.engine_srcs, *lists.host_kernel_srcs])


def engine_includes() -> list[Path]:
    lists = component_sources.load(COMPONENT)
    return [*lists.engine_include_dirs, *lists.engine_priv_include_dirs,
            *lists.host_kernel_include_dirs, EMU / "include"]


def cache_dir() -> Path:
    env = os.environ.get("ESPNN_EMU_CACHE")
    base = Path(env) if env else Path(tempfile.gettempdir()) / "executorch_espnn_emu"
    base.mkdir(parents=True, exist_ok=True)
    return base


@functools.cache
def compiler_version(cc: str) -> str:
    r = subprocess.run([cc, "--version"], capture_output=True, text=True, check=False)
    return r.stdout.splitlines()[0] if r.stdout else cc


def _hash(target: Target, sources: Sequence[Path], includes: Sequence[Path],
          flags: Sequence[str]) -> str:
    """Content hash: file names and bytes (not paths, so generated files in temporary
    directories still hit the cache), flags, the target record and the compiler version."""
    h = hashlib.sha256()
    h.update(repr((target, list(flags), compiler_version(target.cc))).encode())
    headers = sorted({p for d in includes for p in d.glob("*.h")})
    files = [*sources, *target.runtime, *headers, *target_link_scripts(target)]
    for p in sorted(files, key=lambda q: (q.name, str(q))):
        h.update(p.name.encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


def target_link_scripts(target: Target) -> list[Path]:
    return [Path(target.ldflags[i + 1]) for i, f in enumerate(target.ldflags) if f == "-T"]


def _check(cmd: Sequence[str], what: str) -> None:
    r = subprocess.run(list(cmd), capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"{what} failed:\n{' '.join(cmd)}\n{r.stdout}{r.stderr}")


def _flags(target: Target, defines: Sequence[str]) -> list[str]:
    return [*WARNINGS, *target.cflags, *(f"-D{d}" for d in defines)]


def build_library(target: Target, sources: Sequence[Path], name: str,
                  includes: Sequence[Path] = (), defines: Sequence[str] = ()) -> Path:
    """Compile ``sources`` into a cached static library (the engine, built once per target)."""
    require_tools(target)
    incs = [EMU / "include", *includes]
    flags = _flags(target, defines)
    out = cache_dir() / f"lib{name}-{target.name}-{_hash(target, sources, incs, flags)}.a"
    if out.exists():
        return out
    ar = target.archiver
    with tempfile.TemporaryDirectory(dir=cache_dir()) as tmp:
        objs = []
        for i, src in enumerate(sources):
            obj = Path(tmp) / f"{i:03d}_{src.stem}.o"
            _check([target.cc, *flags, *(f"-I{d}" for d in incs), "-c", str(src), "-o",
                    str(obj)], f"{target.name} compile of {src.name}")
            objs.append(str(obj))
        lib = Path(tmp) / "lib.a"
        _check([ar, "rcs", str(lib), *objs], f"{target.name} archive of {name}")
        shutil.move(str(lib), out)  # same filesystem: atomic for concurrent sessions
    return out


def build(target: Target, sources: Sequence[Path], name: str,
          includes: Sequence[Path] = (), defines: Sequence[str] = (),
          libraries: Sequence[Path] = ()) -> Path:
    """Compile and link ``sources`` (plus the target's runtime) into a cached ELF."""
    require_tools(target)
    incs = [EMU / "include", *includes]
    flags = _flags(target, defines)
    key = _hash(target, [*sources, *libraries], incs, flags)
    out = cache_dir() / f"{name}-{target.name}-{key}.elf"
    if out.exists():
        return out
    with tempfile.TemporaryDirectory(dir=cache_dir()) as tmp:
        elf = Path(tmp) / "prog.elf"
        _check([target.cc, *flags, *(f"-I{d}" for d in incs), *map(str, target.runtime),
                *map(str, sources), *map(str, libraries), *target.ldflags, "-o", str(elf)],
               f"{target.name} build of {name}")
        shutil.move(str(elf), out)
    return out


def build_golden(target: Target, generated: Path, name: str = "golden") -> Path:
    """The golden runner (emulated/golden_main.c) over a generated cases file, linked with
    the engine and host ESP-NN kernels built in strict mode (a broken kernel promise aborts)."""
    strict = ["ESPNN_HOST_STRICT"]
    lib = build_library(target, engine_sources(), "espnn_engine",
                        includes=engine_includes(), defines=strict)
    return build(target, [EMU / "golden_main.c", generated], name,
                 includes=engine_includes(), defines=strict, libraries=[lib])


@dataclass(frozen=True)
class EmuRun:
    returncode: int | None  # None: killed by the timeout
    output: str  # console and semihosting output, in order

    @property
    def timed_out(self) -> bool:
        return self.returncode is None

    def verdict(self) -> str | None:
        """The last ``EMU VERDICT`` line, if the program got that far."""
        lines = [ln for ln in self.output.splitlines() if ln.startswith("EMU VERDICT ")]
        return lines[-1] if lines else None


def run(target: Target, elf: Path, timeout: float = 120.0) -> EmuRun:
    """Run ``elf`` under QEMU; a run past ``timeout`` seconds is killed and reported as such."""
    if target.esp_chip:
        from emulated import esp_qemu

        return esp_qemu.run_elf(esp_qemu.CHIPS[target.esp_chip], elf, timeout)
    require_tools(target)
    cmd = ["timeout", "--kill-after=5", str(timeout), *target.qemu, str(elf)]
    r = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, env={**os.environ, **dict(target.env)},
                       check=False)
    text = r.stdout.decode("utf-8", errors="replace").replace("\r\n", "\n")
    return EmuRun(None if r.returncode in (124, 137) else r.returncode, text)
