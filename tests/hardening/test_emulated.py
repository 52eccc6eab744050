"""The engine on emulated 32-bit bare-metal targets: rv32imac and Xtensa lx106 under QEMU, the
ESP32-C3 in its own memory map on Espressif's QEMU (skipped without ESPNN_QEMU_ESP_DIR, naming
it; its own harness facts in test_esp32c3.py), and the golden suite on the Cortex-M7 of
tests/hardening/test_mcu_stack.py.

The golden suite's payloads, inputs and reference outputs (``run_delegate``) are compiled
into one program per target (``emulated/golden.py``); the run must print a passing verdict
naming every case and exit 0.  The same program also runs natively under ASan and UBSan,
built ``-m32`` (32-bit ``size_t``) and 64-bit, each buffer an exact-size allocation.  The harness itself is tested too: exit status propagation, a
trap (an unaligned load on the lx106) and a hang are each reported as failures, and a wrong
expected byte makes the golden run fail.  A missing cross tool fails the test (``.ci/run``
installs them), it never skips.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from emulated import esp_qemu, golden, targets

TARGET_NAMES = list(targets.TARGETS)  # the emulated targets and the host sanitizer builds
# the harness tests' targets: ours with a trap vector (the ESP32-C3's needs Espressif's QEMU)
HARNESS = {**targets.EMULATED, targets.ESP32C3.name: targets.ESP32C3}
EMULATED = list(HARNESS)
# The golden suite also runs on the Cortex-M7 of the firmware-stack tests (emulated/cortex_m/):
# its faults are picolibc's (no EMU TRAP), so the harness tests above do not cover it, and its
# 4 MiB of RAM cannot hold the MobileNetV2 case.
GOLDEN = {**HARNESS, **targets.TARGETS, targets.CORTEX_M7.name: targets.CORTEX_M7}


def target_named(name: str) -> targets.Target:
    """The target; one booted on Espressif's QEMU is skipped without it (naming the variable)."""
    t = GOLDEN[name]
    if t.esp_chip:
        try:
            esp_qemu.require(esp_qemu.CHIPS[t.esp_chip])
        except esp_qemu.QemuEspMissing as exc:
            pytest.skip(str(exc))
    return t
SMOKE = targets.EMU / "smoke.c"
LIBGCC_CHECK = Path(__file__).resolve().parent / "c" / "libgcc_extra_check.c"
GOLDEN_SOURCE = "devkit/payload_factory.py all_cases(seed=0)"
RUNS_PER_CASE = 4  # in place twice, constants copy, odd address (emulated/golden_main.c)


@pytest.fixture(scope="module")
def cases() -> list[golden.GoldenCase]:
    return golden.factory_cases(seed=0)


def _golden_elf(target: targets.Target, gen_dir: Path, cs: list[golden.GoldenCase],
                name: str) -> Path:
    gen = gen_dir / f"{name}.c"
    gen.write_text(golden.render(cs, GOLDEN_SOURCE))
    return targets.build_golden(target, gen, name)


def _smoke(target: targets.Target, *defines: str) -> targets.EmuRun:
    elf = targets.build(target, [SMOKE], "smoke", defines=defines)
    return targets.run(target, elf, timeout=30)


# ------------------------------------------------------------------------------- the harness


@pytest.mark.parametrize("full", [False, True], ids=["lx106", "full"])
def test_lx106_libgcc_supplements_match_host_fpu(tmp_path: Path, full: bool) -> None:
    """Our soft-float and integer helpers agree with the host bit for bit: the lx106's
    supplements, and with EMU_LIBGCC_FULL (the ESP32-S3, no libgcc at all) the 64-bit
    divide-with-remainder under the division helpers and __divsf3 too."""
    exe = tmp_path / "libgcc_check"
    subprocess.run(["gcc", "-O2", "-std=c11", "-Wall", "-Wextra", "-Werror",
                    "-DEMU_LIBGCC_HOST_TEST", *(["-DEMU_LIBGCC_FULL"] if full else []),
                    str(LIBGCC_CHECK), str(targets.EMU / "xtensa_lx106" / "libgcc_extra.c"),
                    "-o", str(exe)], check=True)
    r = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip().endswith("libgcc_extra: PASS")
    for helper in ("__addsf3", "__subsf3", "__mulsf3", "int->float", "integers",
                   *(("__divsf3",) if full else ())):
        assert f"{helper} ok" in r.stdout


@pytest.mark.parametrize("name", EMULATED)
def test_smoke_runs_and_exit_status_propagates(name: str) -> None:
    t = target_named(name)
    r = _smoke(t)
    assert r.returncode == 0, r.output
    assert f"smoke: hello from {name}" in r.output
    assert "smoke: PASS 0 failures" in r.output
    r7 = _smoke(t, "EMU_SMOKE_EXIT=7")
    assert r7.returncode == 7, r7.output
    assert "smoke: PASS 0 failures" in r7.output


@pytest.mark.parametrize("name", EMULATED)
def test_trap_fails_the_run(name: str) -> None:
    r = _smoke(target_named(name), "EMU_SMOKE_TRAP")
    assert r.returncode == targets.EXIT_TRAP, r.output
    assert f"EMU TRAP on {name}" in r.output
    assert "smoke: PASS" not in r.output


def test_lx106_traps_on_unaligned_load() -> None:
    """The premise of the alignment check: the emulated lx106 traps like the chip does."""
    r = _smoke(targets.LX106, "EMU_SMOKE_UNALIGNED")
    assert r.returncode == targets.EXIT_TRAP, r.output
    assert "EMU TRAP on lx106: cause 9 " in r.output  # LoadStoreAlignmentCause


@pytest.mark.parametrize("name", [targets.RV32.name, targets.ESP32C3.name])
def test_rv32_misaligned_load_is_silent(name: str) -> None:
    """Documented limit: QEMU's RISC-V (virt and Espressif's esp32c3 machine) does misaligned
    loads, so only lx106 proves alignment."""
    r = _smoke(target_named(name), "EMU_SMOKE_UNALIGNED")
    assert r.returncode == 0, r.output
    assert "smoke: unaligned load gives 0x05040302" in r.output


@pytest.mark.parametrize("name", EMULATED)
def test_hang_is_a_timeout_without_verdict(name: str) -> None:
    t = target_named(name)
    elf = targets.build(t, [SMOKE], "smoke", defines=["EMU_SMOKE_HANG"])
    r = targets.run(t, elf, timeout=3)
    assert r.timed_out, r.output
    assert r.verdict() is None


# ------------------------------------------------------------------------------- golden runs


@pytest.mark.parametrize("name", list(GOLDEN))
def test_golden_suite_bit_exact(name: str, cases: list[golden.GoldenCase],
                                tmp_path: Path) -> None:
    t = target_named(name)
    r = targets.run(t, _golden_elf(t, tmp_path, cases, "golden"), timeout=300)
    compared = RUNS_PER_CASE * sum(len(e) for c in cases for e in c.expected)
    want = (f"EMU VERDICT PASS target={name} cases={len(cases)} failed=0 "
            f"runs={RUNS_PER_CASE * len(cases)} compared_bytes={compared}")
    assert r.verdict() == want, r.output[-4000:]
    assert r.returncode == 0, r.output[-4000:]
    for c in cases:
        assert f"case {c.name}: ok ({RUNS_PER_CASE} runs, " in r.output
    # the odd-address placement was refused exactly where int32/float32 constants exist
    assert any(c.multibyte_consts for c in cases) and not all(c.multibyte_consts for c in cases)


@pytest.mark.parametrize("name", list(GOLDEN))
def test_golden_run_fails_on_a_wrong_expected_byte(name: str, cases: list[golden.GoldenCase],
                                                   tmp_path: Path) -> None:
    good, victim = cases[0], cases[1]
    flipped = bytearray(victim.expected[0])
    flipped[3] ^= 0x01
    bad = golden.GoldenCase(victim.name, victim.payload, victim.inputs,
                            (bytes(flipped), *victim.expected[1:]), victim.multibyte_consts,
                            victim.ram_bytes)
    t = target_named(name)
    r = targets.run(t, _golden_elf(t, tmp_path, [good, bad], "golden_bad"), timeout=120)
    assert r.returncode == 1, r.output
    verdict = r.verdict()
    assert verdict is not None and verdict.startswith(f"EMU VERDICT FAIL target={name} cases=2 failed=1")
    assert f"case {victim.name}: in place: MISMATCH output 0 byte 3 " in r.output
    assert f"case {good.name}: ok" in r.output


@pytest.mark.slow
@pytest.mark.parametrize("name", TARGET_NAMES)
def test_golden_mobilenet_v2_bit_exact(name: str, tmp_path: Path) -> None:
    from devkit.payload_factory import mobilenet_v2_case

    m = mobilenet_v2_case()
    case = golden.make_case(m.name, m.payload, m.inputs)
    t = targets.TARGETS[name]
    r = targets.run(t, _golden_elf(t, tmp_path, [case], "golden_mobilenet"), timeout=600)
    compared = RUNS_PER_CASE * sum(len(e) for e in case.expected)
    assert r.verdict() == (f"EMU VERDICT PASS target={name} cases=1 failed=0 "
                           f"runs={RUNS_PER_CASE} compared_bytes={compared}"), r.output[-4000:]
    assert r.returncode == 0
