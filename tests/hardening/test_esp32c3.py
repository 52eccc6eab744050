"""What is particular to the ESP32-C3 target (emulated/esp32c3/, emulated/esp_qemu.py): firmware
in the chip's own memory map, booted by the C3's ROM from a flash image on Espressif's QEMU.

Finding the emulator (the messages name ESPNN_QEMU_ESP_DIR; tested without it), the layout of
the image, the ROM's boot, and a reset without the ``EMU EXIT`` line reported as no pass.  The
exit status, trap, hang and golden-suite tests run on this target with the others
(test_emulated.py); the whole stack in test_mcu_stack.py.  Without ``$ESPNN_QEMU_ESP_DIR``
the emulator's tests skip with what to set.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from emulated import esp_qemu, targets

C3 = targets.ESP32C3
CHIP = esp_qemu.CHIPS["esp32c3"]
SMOKE = targets.EMU / "smoke.c"
RESET = Path(__file__).resolve().parent / "c" / "esp32c3_reset.c"


@pytest.fixture(scope="module")
def qemu() -> None:
    try:
        esp_qemu.require(CHIP)
    except esp_qemu.QemuEspMissing as exc:
        pytest.skip(str(exc))


# ------------------------------------------------------------------ finding the emulator


def test_missing_emulator_names_the_variable(monkeypatch: pytest.MonkeyPatch,
                                             tmp_path: Path) -> None:
    monkeypatch.delenv(esp_qemu.QEMU_ENV, raising=False)
    with pytest.raises(esp_qemu.QemuEspMissing, match=f"^{esp_qemu.QEMU_ENV} is not set: set "
                       f"{esp_qemu.QEMU_ENV} to a folder with Espressif's QEMU"):
        esp_qemu.require(CHIP)
    monkeypatch.setenv(esp_qemu.QEMU_ENV, str(tmp_path / "nowhere"))
    with pytest.raises(esp_qemu.QemuEspMissing, match="nowhere is not a folder"):
        esp_qemu.require(CHIP)
    monkeypatch.setenv(esp_qemu.QEMU_ENV, str(tmp_path))
    with pytest.raises(esp_qemu.QemuEspMissing, match="has no executable qemu-system-riscv32"):
        esp_qemu.require(CHIP)


def test_an_emulator_without_the_machine_is_refused(monkeypatch: pytest.MonkeyPatch,
                                                    tmp_path: Path) -> None:
    """A QEMU that does not list esp32c3 (Debian's, say) is named as such."""
    fake = tmp_path / "qemu-system-riscv32"
    fake.write_text("#!/bin/sh\necho 'virt                 RISC-V VirtIO board'\n")
    fake.chmod(0o755)
    monkeypatch.setenv(esp_qemu.QEMU_ENV, str(tmp_path))
    with pytest.raises(esp_qemu.QemuEspMissing, match="does not list the esp32c3 machine"):
        esp_qemu.require(CHIP)


def test_firmware_puts_code_and_read_only_data_in_flash() -> None:
    """The layout link.ld promises, read from the ELF (no emulator needed)."""
    elf = targets.build(C3, [SMOKE], "smoke")
    segs = esp_qemu.load_segments(elf)
    windows = {"IROM": (0x42000000, 0x42800000), "DROM": (0x3C000000, 0x3C800000),
               "IRAM": (0x40380000, 0x403E0000), "DRAM": (0x3FC80000, 0x3FCDC710)}
    where = {name for addr, _ in segs for name, (lo, hi) in windows.items() if lo <= addr < hi}
    assert where == set(windows), segs
    for addr, size in segs:  # what the ROM loads ends below its loader's stack
        if 0x3FC80000 <= addr < 0x3FCE0000:
            assert addr + size <= 0x3FCDC710
    assert esp_qemu.uses_flash(CHIP, elf)


@pytest.mark.parametrize(("decl", "message"), [
    # initialised data the ROM would have to load over its own stack
    ("volatile unsigned char big[380000] = {1};",
     "ESP32-C3: .data/.tdata end past 0x3FCDC710, where the ROM loader's stack is"),
    # zeroed data that leaves no heap below the stack
    ("volatile unsigned char big[350000];",
     "ESP32-C3: .bss leaves less than 4 KiB of heap below the stack"),
])
def test_a_firmware_too_big_for_sram1_fails_to_link(decl: str, message: str, tmp_path: Path) -> None:
    """The memory map's limits are link-time errors that say which, not a boot that corrupts
    the ROM's stack or a heap that is silently empty."""
    src = tmp_path / "big.c"
    src.write_text(f"{decl}\nint main(void) {{ return big[1]; }}\n")
    with pytest.raises(RuntimeError, match=re.escape(message)):
        targets.build(C3, [src], "too_big")


# ------------------------------------------------------------------ the harness


def test_the_rom_boots_the_image(qemu: None) -> None:
    """The C3's ROM loads the image's RAM segments only (the IRAM one at SRAM1's start) and
    jumps to _start; boot.c maps flash and the smoke program runs from it."""
    elf = targets.build(C3, [SMOKE], "smoke")
    r = targets.run(C3, elf, timeout=30)
    assert isinstance(r, esp_qemu.EspRun)
    assert (r.returncode, r.ended) == (0, "exit"), r.output
    assert "rst:0x1 (POWERON),boot:0x8 (SPI_FAST_FLASH_BOOT)" in r.output
    assert "load:0x40380000," in r.output
    assert "load:0x3c" not in r.output and "load:0x42" not in r.output  # flash: mapped, not loaded
    assert "Attempting to boot anyway..." in r.output  # the ROM's SHA-256 quirk (esp_qemu.py)
    assert "smoke: PASS 0 failures" in r.output


def test_reset_without_exit_line_is_no_pass(qemu: None) -> None:
    """A watchdog or a crash-and-reboot ends QEMU (-no-reboot) with no EMU EXIT line."""
    elf = targets.build(C3, [RESET], "c3_reset")
    r = targets.run(C3, elf, timeout=30)
    assert isinstance(r, esp_qemu.EspRun)
    assert "reset: about to reset without an exit line" in r.output
    assert (r.returncode, r.ended, r.timed_out) == (None, "reset", False), r.output
