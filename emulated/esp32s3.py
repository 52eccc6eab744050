"""The engine with ESP-NN's ESP32-S3 kernels (its SIMD assembly and the C around it) as a
bare-metal firmware for Espressif's QEMU ``-M esp32s3``.

Tools, all found by name or environment variable and never part of this repository:

- ``clang-22`` (Debian ``clang-22``) compiles C for the windowed Xtensa ABI, GNU as/ld from
  Debian's ``binutils-xtensa-lx106`` assemble and link it with the esp32s3 core plugin named
  by ``ESPNN_XTENSA_S3_GNU_CONFIG``; ``emulated/xtensa_s3/s3cc.py`` joins them into one
  compiler driver (and holds the stack-alignment check);
- ``ESPNN_ESP_NN_DIR``: an ESP-NN checkout (1.2.x), compiled as ESP-NN's own build selects its
  sources for the esp32s3 (``executorch_espnn/firmware/esp_nn_sources.py``);
- ``ESPNN_QEMU_ESP_DIR``: Espressif's QEMU (``qemu-system-xtensa`` with the esp32s3 machine).

Our own parts (``emulated/xtensa_s3/``): startup and vectors, the linker script in the S3's
SRAM map, UART console, watchdogs off, a minimal C library, and the libgcc helpers of
``emulated/xtensa_lx106/libgcc_extra.c`` (``EMU_LIBGCC_FULL``: there is no libgcc at all).

Two kernel sets from one ESP-NN tree: ``KERNELS_S3`` (``CONFIG_NN_OPTIMIZED``: ``esp_nn.h``
maps every public name to its ``*_esp32s3`` kernel) and ``KERNELS_ANSI`` (ESP-NN's reference C on
the same chip).  The engine is built as an ESP32-S3 runtime (``ESPNN_BUILD_TARGET`` 3): it
refuses payloads lowered for another chip and checks their scratch against the S3 kernels.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path

from emulated import build, esp_qemu, golden, targets
from emulated.build import Unit
from emulated.targets import EMU, EmuRun, Target
from executorch_espnn import component_sources

S3_DIR = EMU / "xtensa_s3"
ENV_GNU_CONFIG = "ESPNN_XTENSA_S3_GNU_CONFIG"
ENV_ESP_NN = "ESPNN_ESP_NN_DIR"
ENV_QEMU = "ESPNN_QEMU_ESP_DIR"
PACKAGES = ("clang-22", "llvm-22", "binutils-xtensa-lx106")

KERNELS_S3 = "s3"
KERNELS_ANSI = "ansi"
KERNEL_SETS = (KERNELS_S3, KERNELS_ANSI)

# Not CONFIG_IDF_TARGET_ARCH_XTENSA: under it ESP-NN's common_functions.h uses two inline-asm
# helpers (nsau, and clamps with GCC's Xtensa "a" register constraint, which clang lacks); its
# C fallbacks compute the same (__builtin_clz, which clang emits as nsau; a clamp to int8).
CHIP_DEFINES = ("CONFIG_IDF_TARGET_ESP32S3=1",)
CLANG_ESP_NN_WITHOUT = ("CONFIG_IDF_TARGET_ARCH_XTENSA",)  # the same, for ESP-NN's own build
ENGINE_DEFINES = ("ESPNN_BUILD_TARGET=3",)  # ESPNN_TARGET_ESP32S3

S3 = Target(
    name="esp32s3",
    cc=str(S3_DIR / "s3cc.py"),
    cflags=("-O2", "-ffunction-sections", "-fdata-sections", "-isystem",
            str(S3_DIR / "include"), "-DEMU_LIBGCC_FULL", "-DEMU_INSN_COUNT"),
    ldflags=("-T", str(S3_DIR / "link.ld"), "-Wl,--gc-sections"),
    runtime=(S3_DIR / "start.S", S3_DIR / "board.c", S3_DIR / "libc.c",
             EMU / "xtensa_lx106" / "libgcc_extra.c", EMU / "common" / "emu_print.c",
             EMU / "common" / "emu_abort.c"),
    qemu=(),  # booted from a flash image through the ROM: run() below
    packages=PACKAGES,
    ar="llvm-ar-22",
)

# The whole firmware stack on the S3 (emulated/mcu_stack.py): C and C++ on picolibc's Xtensa
# headers (its library is call0 code: only the headers are used, stack_libc.c is the library)
# and the arm-none-eabi libstdc++ headers, header-only as on the C3 (emulated/targets.py).
# -nostdlibinc: clang's Xtensa driver would otherwise search this computer's /usr/include.
# -fhosted for C++: clang mangles main() in a freestanding C++ unit.
PICOLIBC_XTENSA = Path("/usr/lib/xtensa-lx106-elf/include")
STACK = Target(
    name="esp32s3",
    cc=str(S3_DIR / "s3cc.py"),
    cxx=str(S3_DIR / "s3cc.py"),
    cflags=("-O2", "-ffunction-sections", "-fdata-sections", "-nostdlibinc", "-isystem",
            str(PICOLIBC_XTENSA), "-DEMU_LIBGCC_FULL", "-DEMU_S3_STACK_LIBC"),
    cxxflags=("-fhosted", "-fno-exceptions", "-fno-rtti", "-fno-threadsafe-statics",
              "-isystem", str(targets.ARM_LIBSTDCXX),
              "-isystem", str(targets.ARM_LIBSTDCXX / "arm-none-eabi")),
    ldflags=S3.ldflags,
    runtime=(*S3.runtime, S3_DIR / "stack_libc.c", S3_DIR / "stack_board.c", S3_DIR / "softdouble.c"),
    qemu=(),
    packages=(*PACKAGES, "picolibc-xtensa-lx106-elf", "libstdc++-arm-none-eabi-dev"),
    esp_chip="esp32s3",
    cxx_library=False,
    ar="llvm-ar-22",
)


class S3ToolsMissing(RuntimeError):
    """A tool or tree this target needs is not there; the message names every variable or
    Debian package to set or install."""


def missing() -> list[str]:
    """What is missing, one phrase each (empty: the S3 firmware can be built and run)."""
    out = []
    cfg = os.environ.get(ENV_GNU_CONFIG, "")
    if not cfg or not Path(cfg).is_file():
        out.append(f"{ENV_GNU_CONFIG} (the esp32s3 core plugin .so for GNU as/ld)")
    nn = os.environ.get(ENV_ESP_NN, "")
    if not nn or not (Path(nn) / "include" / "esp_nn.h").is_file():
        out.append(f"{ENV_ESP_NN} (an ESP-NN 1.2.x checkout)")
    q = os.environ.get(ENV_QEMU, "")
    if not q or not (Path(q) / "qemu-system-xtensa").is_file():
        out.append(f"{ENV_QEMU} (a folder with Espressif's qemu-system-xtensa)")
    tools = [t for t in ("clang-22", "llvm-ar-22", "xtensa-lx106-elf-as", "xtensa-lx106-elf-ld")
             if shutil.which(t) is None]
    if tools:
        out.append(f"{', '.join(tools)} (Debian packages {' '.join(PACKAGES)})")
    return out


def require() -> None:
    gaps = missing()
    if gaps:
        raise S3ToolsMissing("ESP32-S3 firmware needs " + "; ".join(gaps))


def esp_nn_dir() -> Path:
    return Path(os.environ[ENV_ESP_NN])


def _kernel_defines(kernels: str) -> tuple[str, ...]:
    if kernels not in KERNEL_SETS:
        raise ValueError(f"kernels must be one of {KERNEL_SETS}, not {kernels!r}")
    return (*CHIP_DEFINES, *(("CONFIG_NN_OPTIMIZED=1",) if kernels == KERNELS_S3 else ()))


def _dflags(defines: Sequence[str]) -> tuple[str, ...]:
    return tuple(f"-D{d}" for d in defines)


def esp_nn_units(kernels: str, root: Path | None = None,
                 cc_flags: Sequence[str] = ()) -> list[Unit]:
    """ESP-NN's sources for the esp32s3 with ESP-NN's own compile options (warnings are
    ESP-NN's, not ours: -w)."""
    from executorch_espnn.firmware import esp_nn_sources

    root = root or esp_nn_dir()
    absent = esp_nn_sources.missing_sources(root, "esp32s3")
    if absent:
        raise S3ToolsMissing(f"{root} lacks ESP-NN's esp32s3 sources {absent[:3]}: "
                             f"{ENV_ESP_NN} must be an ESP-NN 1.2.x checkout")
    incs = tuple(f"-I{root / d}" for d in esp_nn_sources.INCLUDE_DIRS)
    flags = (*esp_nn_sources.flags_for("esp32s3"), "-std=gnu11", "-w", *incs,
             *_dflags(_kernel_defines(kernels)), *cc_flags)
    return [Unit(root / s, flags, label=f"esp-nn/{s}")
            for s in esp_nn_sources.sources_for("esp32s3")]


def engine_includes(root: Path | None = None) -> tuple[str, ...]:
    root = root or esp_nn_dir()
    lists = component_sources.load(targets.COMPONENT)
    return (*(f"-I{d}" for d in (*lists.engine_include_dirs, *lists.engine_priv_include_dirs)),
            f"-I{EMU / 'include'}", f"-I{root / 'include'}")


def engine_units(kernels: str, root: Path | None = None,
                 cc_flags: Sequence[str] = ()) -> list[Unit]:
    """The engine as an ESP32-S3 runtime, on ESP-NN's headers (never the host kernels)."""
    flags = (*targets.WARNINGS, *engine_includes(root),
             *_dflags((*ENGINE_DEFINES, *_kernel_defines(kernels))), *cc_flags)
    srcs = sorted(component_sources.load(targets.COMPONENT).engine_srcs)
    return [Unit(s, flags) for s in srcs]


def runtime_units() -> list[Unit]:
    flags = (*targets.WARNINGS, f"-I{EMU / 'include'}")
    return [Unit(s, () if s.suffix == ".S" else flags) for s in S3.runtime]


def firmware(name: str, main_units: Sequence[Unit], kernels: str,
             engine_flags: Sequence[str] = (), cc_flags: Sequence[str] = ()) -> Path:
    """Compile (cached) and link one firmware ELF: ``main_units`` + runtime + engine + ESP-NN.
    ``engine_flags`` go to the engine only (e.g. ``-DESPNN_S3_KERNELS=0``), ``cc_flags`` to the
    engine and ESP-NN (e.g. s3cc.py's ``--s3cc-*`` switches)."""
    require()
    root = esp_nn_dir()
    main_objs = build.compile_units(S3, [*main_units, *runtime_units()])
    engine = build.archive(
        S3, build.compile_units(S3, engine_units(kernels, root, (*engine_flags, *cc_flags))),
        f"espnn_engine_{kernels}")
    espnn = build.archive(S3, build.compile_units(S3, esp_nn_units(kernels, root, cc_flags)),
                          f"esp_nn_{kernels}")
    return build.link(S3, [*main_objs, engine, espnn], f"{name}_{kernels}")


def golden_firmware(generated: Path, kernels: str, name: str = "golden",
                    defines: Sequence[str] = (), engine_flags: Sequence[str] = (),
                    cc_flags: Sequence[str] = ()) -> Path:
    """emulated/golden_main.c over a generated cases file (emulated/golden.py); ``defines``
    for the harness (GOLDEN_IN_PLACE_ONLY)."""
    flags = (*targets.WARNINGS, *engine_includes(), *_dflags(defines))
    # the generated byte arrays are sized without a terminating NUL on purpose
    gen_flags = (*flags, "-Wno-unterminated-string-initialization")
    return firmware(name, [Unit(EMU / "golden_main.c", flags), Unit(generated, gen_flags)],
                    kernels, engine_flags, cc_flags)


# ------------------------------------------------------------------------- image and QEMU


def run(elf: Path, timeout: float = 300.0) -> EmuRun:
    """Boot ``elf`` through the S3 ROM as every ESP chip is run (emulated/esp_qemu.py: a flash
    image, ``-icount shift=0,sleep=off``, UART0 on stdio, the ``EMU EXIT`` line and a software
    reset to end); a run past ``timeout`` seconds is killed."""
    require()
    return esp_qemu.run_elf(esp_qemu.CHIPS["esp32s3"], elf, timeout)


# ------------------------------------------------------------------------------ golden suite


def golden_cases(seed: int = 0) -> list[golden.GoldenCase]:
    """The golden suite (devkit/payload_factory.py all_cases) as ESP32-S3 payloads: target S3
    and each op's scratch sized for the S3 kernels (devkit/scratch_helpers.retarget), the
    expected outputs the reference executor's on those bytes."""
    from devkit.payload_factory import all_cases
    from devkit.scratch_helpers import retarget
    from executorch_espnn.payload.format import Target as PayloadTarget

    return [golden.make_case(c.name, retarget(c.payload, PayloadTarget.ESP32S3), c.inputs)
            for c in all_cases(seed)]


def zoo_cases(name: str, seed: int = 0) -> list[golden.GoldenCase]:
    """Each delegate payload of a zoo model lowered for the esp32s3 (devkit.lowered_zoo), with
    random inputs and the reference executor's outputs."""
    import numpy as np

    from devkit.lowered_zoo import lowered_zoo
    from executorch_espnn.payload import decode
    from executorch_espnn.payload.format import DType
    from executorch_espnn.pte import delegate_payloads

    out = []
    for k, data in enumerate(delegate_payloads(lowered_zoo(name, "esp32s3").pte)):
        p = decode(data)
        rng = np.random.default_rng(seed + k)
        inputs = [rng.standard_normal(p.tensors[t].dims).astype(np.float32)
                  if p.tensors[t].dtype == DType.FLOAT32
                  else rng.integers(-128, 128, p.tensors[t].dims, dtype=np.int8)
                  for t in p.inputs]
        out.append(golden.make_case(f"{name}.{k}", data, inputs))
    return out


def in_place_pool_bytes(cases: Sequence[golden.GoldenCase]) -> int:
    """The harness pool for GOLDEN_IN_PLACE_ONLY: state, arena and io of the largest case."""
    from executorch_espnn.payload import decode
    from executorch_espnn.payload.state import state_bytes

    def a16(n: int) -> int:
        return (n + 15) & ~15

    need = 0
    for c in cases:
        p = decode(c.payload)
        io = golden.io_pool_bytes(p, c.inputs, c.expected)
        need = max(need, a16(state_bytes(p)) + 16 + a16(p.arena_size) + 16 + io)
    return a16(need + 256)
