"""The ESP32-C3 target (emulated/esp32c3/, emulated/esp_qemu.py): firmware in the chip's own
memory map, booted by the C3's ROM from a flash image on Espressif's QEMU.

The harness: exit status through the ``EMU EXIT`` line, a trap, a hang and a reset without the
line are each reported, never a pass.  The engine's golden suite bit-exact on the esp32c3
machine, and a wrong expected byte fails it.  Espressif's QEMU is built outside this project:
without ``$ESPNN_QEMU_ESP_DIR`` these tests skip with what to set (the message itself is tested
without it).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from emulated import esp_qemu, golden, targets

C3 = targets.ESP32C3
CHIP = esp_qemu.CHIPS["esp32c3"]
SMOKE = targets.EMU / "smoke.c"
RESET = Path(__file__).resolve().parent / "c" / "esp32c3_reset.c"
GOLDEN_SOURCE = "devkit/payload_factory.py all_cases(seed=0)"
RUNS_PER_CASE = 4  # emulated/golden_main.c


@pytest.fixture(scope="module")
def qemu() -> None:
    try:
        esp_qemu.require(CHIP)
    except esp_qemu.QemuEspMissing as exc:
        pytest.skip(str(exc))


def _smoke(*defines: str, timeout: float = 30) -> esp_qemu.EspRun:
    elf = targets.build(C3, [SMOKE], "smoke", defines=defines)
    r = targets.run(C3, elf, timeout=timeout)
    assert isinstance(r, esp_qemu.EspRun)
    return r


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


# ------------------------------------------------------------------ the harness


def test_smoke_runs_and_exit_status_propagates(qemu: None) -> None:
    r = _smoke()
    assert (r.returncode, r.ended) == (0, "exit"), r.output
    assert "smoke: hello from esp32c3" in r.output
    assert "smoke: PASS 0 failures" in r.output
    # booted by the ROM, which loaded only the RAM segments (the IRAM one at SRAM1's start)
    assert "rst:0x1 (POWERON),boot:0x8 (SPI_FAST_FLASH_BOOT)" in r.output
    assert "load:0x40380000," in r.output
    r7 = _smoke("EMU_SMOKE_EXIT=7")
    assert r7.returncode == 7, r7.output
    assert "smoke: PASS 0 failures" in r7.output


def test_trap_fails_the_run(qemu: None) -> None:
    r = _smoke("EMU_SMOKE_TRAP")
    assert r.returncode == targets.EXIT_TRAP, r.output
    # ebreak in code fetched from flash (IROM): cause 3, the PC in the IROM window
    assert "EMU TRAP on esp32c3: cause 3 pc 0x420" in r.output
    assert "smoke: PASS" not in r.output


def test_rv32_misaligned_load_is_silent(qemu: None) -> None:
    """As on QEMU's virt machine: the emulated C3 performs misaligned loads (lx106 proves
    alignment)."""
    r = _smoke("EMU_SMOKE_UNALIGNED")
    assert r.returncode == 0, r.output
    assert "smoke: unaligned load gives 0x05040302" in r.output


def test_hang_is_a_timeout_without_verdict(qemu: None) -> None:
    r = _smoke("EMU_SMOKE_HANG", timeout=3)
    assert r.timed_out and r.ended == "timeout", r.output
    assert r.returncode is None and r.verdict() is None


def test_reset_without_exit_line_is_no_pass(qemu: None) -> None:
    """A watchdog or a crash-and-reboot ends QEMU (-no-reboot) with no EMU EXIT line."""
    elf = targets.build(C3, [RESET], "c3_reset")
    r = targets.run(C3, elf, timeout=30)
    assert isinstance(r, esp_qemu.EspRun)
    assert "reset: about to reset without an exit line" in r.output
    assert (r.returncode, r.ended, r.timed_out) == (None, "reset", False), r.output


# ------------------------------------------------------------------ golden runs


@pytest.fixture(scope="module")
def cases() -> list[golden.GoldenCase]:
    return golden.factory_cases(seed=0)


def _golden_elf(gen_dir: Path, cs: list[golden.GoldenCase], name: str) -> Path:
    gen = gen_dir / f"{name}.c"
    gen.write_text(golden.render(cs, GOLDEN_SOURCE))
    return targets.build_golden(C3, gen, name)


def test_golden_suite_bit_exact(qemu: None, cases: list[golden.GoldenCase],
                                tmp_path: Path) -> None:
    r = targets.run(C3, _golden_elf(tmp_path, cases, "golden"), timeout=300)
    compared = RUNS_PER_CASE * sum(len(e) for c in cases for e in c.expected)
    want = (f"EMU VERDICT PASS target=esp32c3 cases={len(cases)} failed=0 "
            f"runs={RUNS_PER_CASE * len(cases)} compared_bytes={compared}")
    assert r.verdict() == want, r.output[-4000:]
    assert r.returncode == 0, r.output[-4000:]
    for c in cases:
        assert f"case {c.name}: ok ({RUNS_PER_CASE} runs, " in r.output


def test_golden_run_fails_on_a_wrong_expected_byte(qemu: None, cases: list[golden.GoldenCase],
                                                   tmp_path: Path) -> None:
    good, victim = cases[0], cases[1]
    flipped = bytearray(victim.expected[0])
    flipped[3] ^= 0x01
    bad = golden.GoldenCase(victim.name, victim.payload, victim.inputs,
                            (bytes(flipped), *victim.expected[1:]), victim.multibyte_consts,
                            victim.ram_bytes)
    r = targets.run(C3, _golden_elf(tmp_path, [good, bad], "golden_bad"), timeout=120)
    assert r.returncode == 1, r.output
    verdict = r.verdict()
    assert verdict is not None and verdict.startswith("EMU VERDICT FAIL target=esp32c3 cases=2 failed=1")
    assert f"case {victim.name}: in place: MISMATCH output 0 byte 3 " in r.output
    assert f"case {good.name}: ok" in r.output
