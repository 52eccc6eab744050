"""Boot an ELF on Espressif's QEMU (the ``esp32c3`` and ``esp32s3`` machines) through the chip's
own ROM, as the chip boots from flash.

    image = flash_image(CHIPS["esp32c3"], elf)      # esptool elf2image + merge-bin, cached
    run = run_image(CHIPS["esp32c3"], image, timeout=120)
    run.returncode, run.verdict(), instruction_counts(run.output)

- **The emulator** is found through ``$ESPNN_QEMU_ESP_DIR``: a folder holding
  ``qemu-system-riscv32`` (machine ``esp32c3``) and ``qemu-system-xtensa`` (``esp32s3``), checked
  with ``-M help``.  It is built from Espressif's QEMU fork, never by this project
  (docs/hardening.md); ``QemuEspMissing`` (tests skip on it) names the variable.
- **The image**: esptool's ``elf2image --chip <chip>`` at flash offset 0, then ``merge-bin``
  padded to 4 MB (the machine takes 2, 4, 8 or 16 MB).  The ROM loads only RAM segments; an ELF
  with code or data in the flash windows (IROM/DROM) is converted with ``--ram-only-header``:
  the ROM then sees the RAM segments only and the firmware maps its flash segments itself
  (``emulated/esp32c3/boot.c`` reads the image header like a second-stage bootloader).  That
  image has no appended SHA-256, and the C3 ROM checks one anyway: it prints ``SHA-256
  comparison failed`` and ``Attempting to boot anyway...`` (harmless without secure boot).
- **The run**: ``-M <machine> -nographic`` (UART0 on stdio) ``-no-reboot -drive
  file=IMG,if=mtd,format=raw`` and, by default, ``-icount shift=0,sleep=off``: one instruction
  is one nanosecond of virtual time, and the virtual clock never warps ahead with host time
  while the guest waits (without ``sleep=off`` it does, and one S3 firmware measured up to 5 %
  apart from run to run), so runs are deterministic and instruction counts exact.
- **How a run ends**: the machine has no semihosting exit.  The firmware prints ``EMU EXIT <n>``
  on UART0, waits for the FIFO to drain and requests a software system reset; ``-no-reboot``
  turns that reset into QEMU's exit.  ``<n>`` is the run's return code.  QEMU ending without that
  line (a watchdog or ROM reset, a firmware reset) is reported as ``ended="reset"``; a run past
  its timeout is killed (``ended="timeout"``).  Either way there is no return code, so a run can
  never pass silently.  After the line QEMU gets a grace period, then it is killed.
- **Instructions**: ``instruction_counts(output)`` reads the firmware's ``EMU INSN <label>
  <count>`` lines: ``minstret`` differences on the C3, CCOUNT differences times 25 on the S3
  (CCOUNT ticks at the core model's 40 MHz of virtual time: emulated/xtensa_s3/board.c).

Images are cached under ``$ESPNN_EMU_CACHE`` (``emulated/targets.py``) by a hash of the ELF, the
chip, the esptool version and the options.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import selectors
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from emulated.targets import EmuRun, cache_dir

QEMU_ENV = "ESPNN_QEMU_ESP_DIR"
FLASH_BYTES = "4MB"
EXIT_LINE = re.compile(r"^EMU EXIT (-?\d+)\s*$", re.M)
INSN_LINE = re.compile(r"^EMU INSN (\S+) (\d+)\s*$", re.M)
EXIT_GRACE_S = 5.0  # after EMU EXIT, how long QEMU may take to leave by itself


@dataclass(frozen=True)
class Chip:
    """An ESP chip as Espressif's QEMU emulates it."""

    name: str  # esptool's --chip and QEMU's -M
    qemu: str  # the QEMU binary in $ESPNN_QEMU_ESP_DIR
    flash_windows: tuple[tuple[int, int], ...]  # [start, end) of the cache-mapped flash buses
    image_options: tuple[str, ...] = ()  # elf2image options the chip's ROM needs


CHIPS: dict[str, Chip] = {
    # IROM 0x42000000 and DROM 0x3C000000, 8 MiB each, through one 128-entry MMU
    "esp32c3": Chip("esp32c3", "qemu-system-riscv32",
                    ((0x42000000, 0x42800000), (0x3C000000, 0x3C800000))),
    # IROM 0x42000000 and DROM 0x3C000000, 32 MiB each; the header says what the flash is
    "esp32s3": Chip("esp32s3", "qemu-system-xtensa",
                    ((0x42000000, 0x44000000), (0x3C000000, 0x3E000000)),
                    ("--flash-mode", "dio", "--flash-size", FLASH_BYTES)),
}


class QemuEspMissing(RuntimeError):
    """$ESPNN_QEMU_ESP_DIR is unset or does not hold a usable Espressif QEMU; says what to set."""


def how_to_set() -> str:
    """The sentence a skipped test or a refused run prints."""
    return (f"set {QEMU_ENV} to a folder with Espressif's QEMU binaries qemu-system-riscv32 "
            "(machine esp32c3) and qemu-system-xtensa (machine esp32s3), built from "
            "github.com/espressif/qemu (docs/hardening.md)")


@dataclass(frozen=True)
class EspRun(EmuRun):
    """A run on an ESP machine.  ``returncode`` is the ``EMU EXIT`` value, None when the run
    did not get that far (``ended`` says how it ended instead)."""

    ended: str = "exit"  # "exit", "timeout" (killed) or "reset" (QEMU left with no EMU EXIT)
    seconds: float = 0.0  # wall time of the run

    @property
    def timed_out(self) -> bool:
        return self.ended == "timeout"


def qemu_dir() -> Path:
    """The folder named by $ESPNN_QEMU_ESP_DIR; QemuEspMissing when unset or not a folder."""
    value = os.environ.get(QEMU_ENV)
    if not value:
        raise QemuEspMissing(f"{QEMU_ENV} is not set: {how_to_set()}")
    d = Path(value)
    if not d.is_dir():
        raise QemuEspMissing(f"{QEMU_ENV}={value} is not a folder: {how_to_set()}")
    return d


def qemu_binary(chip: Chip) -> Path:
    """The chip's QEMU, checked once per process to list the chip's machine."""
    return _checked_binary(qemu_dir(), chip)


@functools.cache
def _checked_binary(folder: Path, chip: Chip) -> Path:
    exe = folder / chip.qemu
    if not os.access(exe, os.X_OK):
        raise QemuEspMissing(f"{QEMU_ENV}={folder} has no executable {chip.qemu}: {how_to_set()}")
    r = subprocess.run([str(exe), "-M", "help"], capture_output=True, text=True, timeout=60,
                       check=False)
    if not re.search(rf"^{re.escape(chip.name)}\s", r.stdout, re.M):
        raise QemuEspMissing(f"{exe} does not list the {chip.name} machine in -M help (is it "
                             f"Debian's QEMU rather than Espressif's?): {how_to_set()}")
    return exe


def require(*chips: Chip) -> None:
    """QemuEspMissing unless every chip's emulator is there."""
    for chip in chips:
        qemu_binary(chip)


# --- the flash image --------------------------------------------------------------------------


def _esptool(*args: str) -> None:
    cmd = [sys.executable, "-m", "esptool", *args]
    r = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"esptool failed:\n{' '.join(cmd)}\n{r.stdout}{r.stderr}")


@functools.cache
def _esptool_version() -> str:
    from importlib.metadata import version

    return version("esptool")


def load_segments(elf: Path) -> list[tuple[int, int]]:
    """(address, size) of the ELF's loaded program segments with bytes in the file, as esptool
    reads them."""
    from esptool.bin_image import ELFFile

    return [(s.addr, len(s.data)) for s in ELFFile(str(elf)).segments if s.data]


def uses_flash(chip: Chip, elf: Path) -> bool:
    """Whether the ELF has code or data in the chip's flash windows (which its ROM cannot load)."""
    return any(lo <= addr < hi for addr, _ in load_segments(elf) for lo, hi in chip.flash_windows)


def flash_image(chip: Chip, elf: Path, extra: Sequence[str] = ()) -> Path:
    """A 4 MB flash image of ``elf`` for ``chip``'s ROM (cached); ``extra`` goes to elf2image."""
    ram_only = uses_flash(chip, elf)
    opts = [*(["--ram-only-header"] if ram_only else []), *chip.image_options, *extra]
    h = hashlib.sha256(repr((chip, opts, _esptool_version(), FLASH_BYTES)).encode())
    h.update(elf.read_bytes())
    out = cache_dir() / "esp-images" / f"{elf.stem}-{chip.name}-{h.hexdigest()[:16]}.img"
    if out.is_file():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
        app, img = Path(tmp) / "app.bin", Path(tmp) / "flash.img"
        _esptool("--chip", chip.name, "elf2image", *opts, "-o", str(app), str(elf))
        _esptool("--chip", chip.name, "merge-bin", "--pad-to-size", FLASH_BYTES, "-o", str(img),
                 "0x0", str(app))
        os.replace(img, out)  # atomic for concurrent sessions
    return out


# --- the run ----------------------------------------------------------------------------------


def qemu_command(chip: Chip, image: Path, *, icount: bool = True) -> list[str]:
    return [str(qemu_binary(chip)), "-M", chip.name, "-nographic", "-no-reboot",
            *(["-icount", "shift=0,sleep=off"] if icount else []),
            "-drive", f"file={image},if=mtd,format=raw"]


def run_image(chip: Chip, image: Path, timeout: float = 120.0, *, icount: bool = True) -> EspRun:
    """Boot ``image`` and collect UART0 until ``EMU EXIT``, QEMU's own end or ``timeout``."""
    cmd = qemu_command(chip, image, icount=icount)
    t0 = time.monotonic()
    # the image is opened read-write by QEMU: concurrent runs of one cached image each get a copy
    with tempfile.TemporaryDirectory(dir=cache_dir()) as tmp:
        private = Path(tmp) / image.name
        shutil.copyfile(image, private)
        cmd[-1] = f"file={private},if=mtd,format=raw"
        text, ended = _collect(cmd, timeout)
    m = EXIT_LINE.findall(text)
    code = int(m[-1]) if m else None
    if code is None and ended == "exit":
        ended = "reset"  # QEMU left by itself without the firmware's exit line
    return EspRun(code, text, ended, time.monotonic() - t0)


def _collect(cmd: list[str], timeout: float) -> tuple[str, str]:
    """Run QEMU, reading its output as it comes; (text, "exit" or "timeout")."""
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    assert proc.stdout is not None
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    exit_seen = eof = False
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    try:
        while time.monotonic() < deadline:
            if not sel.select(min(deadline - time.monotonic(), 1.0)):
                continue
            data = os.read(proc.stdout.fileno(), 65536)
            if not data:
                eof = True  # QEMU closed its output: it has ended
                break
            chunks.append(data)
            if not exit_seen and EXIT_LINE.search(_text(chunks[-2:])):
                # the firmware is done; QEMU should leave through the reset, but not wait for ever
                exit_seen = True
                deadline = min(deadline, time.monotonic() + EXIT_GRACE_S)
    finally:
        sel.close()
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        proc.stdout.close()
    return _text(chunks), "exit" if eof or exit_seen else "timeout"


def _text(chunks: list[bytes]) -> str:
    return b"".join(chunks).decode("utf-8", errors="replace").replace("\r\n", "\n")


def run_elf(chip: Chip, elf: Path, timeout: float = 120.0, *, icount: bool = True) -> EspRun:
    """``flash_image`` then ``run_image``."""
    return run_image(chip, flash_image(chip, elf), timeout, icount=icount)


def instruction_counts(output: str) -> dict[str, int]:
    """The firmware's ``EMU INSN <label> <count>`` lines (the last one per label)."""
    return {label: int(n) for label, n in INSN_LINE.findall(output)}
