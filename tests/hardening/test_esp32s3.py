"""The engine with ESP-NN's ESP32-S3 kernels (SIMD assembly) on Espressif's emulated ESP32-S3.

Gated: the firmware needs ``ESPNN_XTENSA_S3_GNU_CONFIG`` (the esp32s3 core plugin for GNU as/ld),
``ESPNN_ESP_NN_DIR`` (an ESP-NN 1.2.x checkout) and ``ESPNN_QEMU_ESP_DIR`` (Espressif's QEMU);
each test skips with a message naming every missing one.  What needs only Debian's clang-22
(the stack-pointer check of emulated/xtensa_s3/s3cc.py) runs wherever clang-22 is installed.

- the golden suite as ESP32-S3 payloads (scratch sized for the S3 kernels) is bit-exact with the
  reference executor on the S3 kernels and on ESP-NN's ANSI kernels, in every placement;
- the depthwise layers the S3 can run in bands (optimize="speed"), given one band's scratch of
  1 and of 2 output rows, are bit-exact on the S3 assembly too;
- the same suite with the engine's S3 routing switched off (``ESPNN_S3_KERNELS=0``: every
  call goes to the S3 kernel) fails in exactly the cases whose operands break an S3 kernel's
  contract (src/espnn_s3_kernels.h): the golden suite covers every contract;
- without the driver's call-frame rounding, the build is refused, and forced through, the S3
  depthwise kernels compute garbage or trap (the "depthwise crash");
- zoo models lowered for the esp32s3 run bit-exact, with their instructions per inference;
- the S3 runs through the same runner as the C3 (emulated/esp_qemu.py): its exit status comes
  from the ``EMU EXIT`` line and the reset after it, a trap is a failed run, a hang a timeout.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from emulated import build, esp32s3, esp_qemu, golden, targets
from emulated.build import Unit
from emulated.xtensa_s3 import s3cc

GOLDEN_SOURCE = "devkit/payload_factory.py all_cases(seed=0), retargeted to esp32s3"
RUNS_PER_CASE = 4  # emulated/golden_main.c: in place twice, constants copy, odd address

# The golden cases whose operands break an ESP-NN 1.2.3 S3 kernel's contract: what the S3
# kernels compute for them when the engine does not route them to ANSI (measured, see
# docs/engine.md "ESP32-S3 kernels").
# mul_simd_and_tail is not among them: its 7-element tail happens to round right on these
# inputs (the leftover path's wrong nudge changes an output only when it carries through the
# final shift, ~1/64 of elements here); tests/test_s3_contracts.py proves its routing.
CONTRACT_CASES = {
    "mul_per_channel",  # the mul's scalar leftover path (runs of 7)
    "fc_3d", "matmul_broadcast_a", "matmul_broadcast_b",  # FC input rows not 8-byte aligned
    "maxpool_3x3_s2_pad1",  # max pool channels % 4 != 0
    "conv_ch_not_mult8", "conv_3x3_right_pad_past_left",  # right pad > left pad
    "dw_ch8_right_pad_past_left",
    "avgpool_ceil_no_pad", "avgpool_ch8_ceil_no_pad",  # windows past the mirrored pad
}
# Zoo models whose delegates fit the S3's internal SRAM with their arena (no flash mapping here:
# mobilenet_v1_0.25_96_gray overflows it by ~100 KiB, the MobileNetV2s by far more).
ZOO_S3 = ("ds_cnn_kws", "resnet8", "island_net", "cumsum_net", "tiny_vit", "dense_autoencoder")


def _need_firmware() -> None:
    gaps = esp32s3.missing()
    if gaps:
        pytest.skip("ESP32-S3 firmware needs " + "; ".join(gaps))


ILLEGAL = r"""
#include "emu.h"
int main(void)
{
    emu_puts("trap: next\n");
    __asm__ volatile("ill"); /* IllegalInstructionCause (0) */
    emu_puts("trap: survived\n");
    return 0;
}
"""


def _s3_run(src: Path, name: str, *defines: str, timeout: float = 60.0) -> esp_qemu.EspRun:
    """One C file as an S3 firmware (start-up, console, exit and libgcc helpers only)."""
    _need_firmware()
    flags = (*targets.WARNINGS, f"-I{targets.EMU / 'include'}", *(f"-D{d}" for d in defines))
    objs = build.compile_units(esp32s3.S3, [Unit(src, flags), *esp32s3.runtime_units()])
    r = esp32s3.run(build.link(esp32s3.S3, objs, name), timeout=timeout)
    assert isinstance(r, esp_qemu.EspRun)
    return r


def test_s3_runs_end_as_the_c3s(tmp_path: Path) -> None:
    """One runner for both chips: the ROM boots the image, main's status comes back through
    the EMU EXIT line and the software reset after it (no semihosting), a trap is a failed run
    naming the cause, a hang is killed at the timeout with no status."""
    smoke = targets.EMU / "smoke.c"
    ok = _s3_run(smoke, "smoke")
    assert (ok.returncode, ok.ended) == (0, "exit"), ok.output
    assert "rst:0x1 (POWERON),boot:0x4 (SPI_FLASH_BOOT)" in ok.output
    assert "load:0x40374000," in ok.output  # IRAM: the ROM loads the image (link.ld)
    assert "smoke: hello from esp32s3" in ok.output and "smoke: PASS 0 failures" in ok.output
    seven = _s3_run(smoke, "smoke_exit7", "EMU_SMOKE_EXIT=7")
    assert (seven.returncode, seven.ended) == (7, "exit"), seven.output
    # clang lowers __builtin_trap() on Xtensa to a call of abort()
    aborted = _s3_run(smoke, "smoke_trap", "EMU_SMOKE_TRAP")
    assert aborted.returncode == 4 and "EMU ABORT on esp32s3" in aborted.output, aborted.output
    src = tmp_path / "ill.c"
    src.write_text(ILLEGAL)
    trap = _s3_run(src, "ill")
    assert trap.returncode == targets.EXIT_TRAP, trap.output
    assert "EMU TRAP on esp32s3: cause 0 pc 0x4037" in trap.output, trap.output
    assert "trap: survived" not in trap.output
    hang = _s3_run(smoke, "smoke_hang", "EMU_SMOKE_HANG", timeout=5)
    assert (hang.returncode, hang.ended, hang.verdict()) == (None, "timeout", None), hang.output


SPIN = r"""
#include <stdint.h>
#include "emu.h"
int main(void)
{
    uint32_t k = SPIN_ITERATIONS;
    const uint32_t before = emu_insn_count();
    __asm__ volatile("1: addi %0, %0, -1\n bnez %0, 1b" : "+r"(k)); /* two instructions a turn */
    const uint32_t spent = emu_insn_count() - before;
    emu_puts("spin: ");
    emu_put_u32(spent);
    emu_puts(" insns\n");
    return 0;
}
"""
SPIN_ITERATIONS = 150_000_000  # 0.3 s of virtual time: several of QEMU's round-robin slices


def test_instruction_counts_are_core_0s_alone(tmp_path: Path) -> None:
    """The S3 is dual-core and QEMU runs both cores on one virtual clock, so CCOUNT under
    -icount counts every core's instructions: with the APP CPU left polling in the ROM, one
    layer measured 2.0 M or 4.8 M "instructions" depending on the firmware's layout.  The board
    parks core 1 (board.c), so a loop of known length measures its own length."""
    src = tmp_path / "spin.c"
    src.write_text(SPIN)
    r = _s3_run(src, "spin", f"SPIN_ITERATIONS={SPIN_ITERATIONS}u", timeout=120)
    assert r.returncode == 0, r.output
    m = re.search(r"spin: (\d+) insns", r.output)
    assert m is not None, r.output
    # CCOUNT ticks every 25 instructions; the two reads add a few dozen
    assert abs(int(m.group(1)) - 2 * SPIN_ITERATIONS) <= 100, r.output


@pytest.fixture(scope="module")
def s3_cases() -> list[golden.GoldenCase]:
    _need_firmware()
    return esp32s3.golden_cases(seed=0)


def _golden_run(cases: list[golden.GoldenCase], tmp: Path, kernels: str, **kw: object) -> str:
    gen = tmp / f"golden_{kernels}.c"
    gen.write_text(golden.render(cases, GOLDEN_SOURCE))
    elf = esp32s3.golden_firmware(gen, kernels, **kw)  # type: ignore[arg-type]
    r = esp32s3.run(elf, timeout=900)
    assert not r.timed_out, r.output[-3000:]
    return r.output


def _failed(output: str) -> set[str]:
    return set(re.findall(r"^case (\S+): FAILED$", output, re.M))


@pytest.mark.slow
@pytest.mark.parametrize("kernels", esp32s3.KERNEL_SETS)
def test_golden_suite_bit_exact_on_s3(kernels: str, s3_cases: list[golden.GoldenCase],
                                      tmp_path: Path) -> None:
    out = _golden_run(s3_cases, tmp_path, kernels)
    assert f"EMU VERDICT PASS target=esp32s3 cases={len(s3_cases)} failed=0" in out, out[-3000:]
    for c in s3_cases:
        assert f"case {c.name}: ok ({RUNS_PER_CASE} runs, " in out, c.name


@pytest.mark.slow
def test_golden_suite_covers_every_s3_contract(s3_cases: list[golden.GoldenCase],
                                               tmp_path: Path) -> None:
    """Without the engine's routing the S3 kernels miss exactly the contract cases."""
    out = _golden_run(s3_cases, tmp_path, esp32s3.KERNELS_S3, name="golden_unrouted",
                      engine_flags=("-DESPNN_S3_KERNELS=0",))
    assert "EMU VERDICT FAIL" in out
    assert _failed(out) == CONTRACT_CASES, out[-4000:]


@pytest.mark.slow
def test_ram_first_convolutions_bit_exact_on_s3(tmp_path: Path) -> None:
    """optimize="ram" on the real chip's kernels: every golden convolution as an S3 payload
    without scratch runs ESP-NN's ANSI kernel (its S3 kernel would return without computing on
    the NULL scratch) and is bit-exact with the reference executor."""
    from devkit import payload_factory as pf
    from devkit.scratch_helpers import retarget, without_conv_scratch
    from executorch_espnn.payload.format import Target as PayloadTarget

    _need_firmware()
    cases = []
    for c in pf.all_cases(0):
        data, moved = without_conv_scratch(retarget(c.payload, PayloadTarget.ESP32S3))
        if moved:
            cases.append(golden.make_case(c.name, data, c.inputs))
    assert len(cases) >= 5
    out = _golden_run(cases, tmp_path, esp32s3.KERNELS_S3, name="golden_ram_first")
    assert f"EMU VERDICT PASS target=esp32s3 cases={len(cases)} failed=0" in out, out[-3000:]


@pytest.mark.slow
@pytest.mark.parametrize("rows", [1, 2])
def test_depthwise_bands_bit_exact_on_s3(rows: int, tmp_path: Path) -> None:
    """optimize="speed"'s bands on the real chip's assembly: every golden depthwise the S3 can
    band, given one band's scratch of ``rows`` output rows (docs/engine.md "Depthwise bands"),
    runs ESP-NN's S3 kernel band by band and is bit-exact with the reference executor."""
    from devkit import payload_factory as pf
    from devkit.scratch_helpers import banded

    _need_firmware()
    cases = []
    for c in pf.all_cases(0):
        data, n = banded(c.payload, rows)
        if n:
            cases.append(golden.make_case(f"{c.name}_bands{rows}", data, c.inputs))
    assert len(cases) >= 3
    out = _golden_run(cases, tmp_path, esp32s3.KERNELS_S3, name=f"golden_bands{rows}")
    assert f"EMU VERDICT PASS target=esp32s3 cases={len(cases)} failed=0" in out, out[-3000:]


@pytest.mark.slow
def test_depthwise_needs_the_call_frame_rounding(s3_cases: list[golden.GoldenCase],
                                                 tmp_path: Path) -> None:
    """clang's unrounded call-frame SP moves (ESP-NN's S3 depthwise dispatcher keeps a frame
    pointer for its VLAs) corrupt the S3 assembly's 128-bit frame stores."""
    dw = [c for c in s3_cases if c.name.startswith("dw_")]
    assert dw
    out = _golden_run(dw, tmp_path, esp32s3.KERNELS_S3, name="golden_dw_unrounded",
                      cc_flags=("--s3cc-no-stack-fix", "--s3cc-no-stack-check"))
    assert "EMU VERDICT PASS" not in out, out[-3000:]
    assert _failed(out) or "EMU TRAP" in out, out[-3000:]


@pytest.mark.slow
@pytest.mark.parametrize("name", ZOO_S3)
def test_zoo_bit_exact_on_s3(name: str, tmp_path: Path) -> None:
    _need_firmware()
    cases = esp32s3.zoo_cases(name)
    gen = tmp_path / "zoo.c"
    gen.write_text(golden.render(cases, f"devkit.lowered_zoo {name}",
                                 esp32s3.in_place_pool_bytes(cases)))
    elf = esp32s3.golden_firmware(gen, esp32s3.KERNELS_S3, name=f"zoo_{name}",
                                  defines=("GOLDEN_IN_PLACE_ONLY",))
    r = esp32s3.run(elf, timeout=1800)
    assert f"EMU VERDICT PASS target=esp32s3 cases={len(cases)} failed=0" in r.output, \
        r.output[-3000:]
    for c in cases:
        assert re.search(rf"^case {re.escape(c.name)}: ok \(2 runs, \d+ bytes, \d+ insns/invoke\)$",
                         r.output, re.M), r.output[-3000:]


@pytest.mark.slow
def test_symmetric_attention_matmul_bit_exact_on_s3(tmp_path: Path) -> None:
    """An attention block whose ``q @ k^T`` (head dim 64) the quantizer made symmetric: its
    BATCH_MATMUL has both offsets 0, so ESP-NN's S3 kernel runs its s8 MAC path (the offsets
    and geometry decide it, src/espnn_s3_kernels.h), bit-exact with the reference executor on
    the S3 and the ANSI kernels."""
    import numpy as np
    import torch

    from devkit.lowering_helpers import lower
    from executorch_espnn.payload import Opcode, decode
    from tests.test_symmetric_matmul import SharedProjection

    _need_firmware()
    torch.manual_seed(0)
    low = lower(SharedProjection(shared_v=False).eval(), (torch.randn(1, 24, 64),), target="esp32s3")
    (data,) = low.payloads
    p = decode(data)
    mm = [op for op in p.ops if op.opcode == Opcode.BATCH_MATMUL]
    assert (mm[0].params["a_offset"], mm[0].params["b_offset"]) == (0, 0)
    assert p.tensors[mm[0].inputs[0]].dims[-1] == 64  # K: the s8 path's row
    x = np.random.default_rng(0).standard_normal(p.tensors[p.inputs[0]].dims).astype(np.float32)
    cases = [golden.make_case("attention_qk64", data, [x])]
    gen = tmp_path / "attn.c"
    gen.write_text(golden.render(cases, "tests/test_symmetric_matmul.py SharedProjection",
                                 esp32s3.in_place_pool_bytes(cases)))
    for kernels in esp32s3.KERNEL_SETS:
        elf = esp32s3.golden_firmware(gen, kernels, name=f"attn_{kernels}",
                                      defines=("GOLDEN_IN_PLACE_ONLY",))
        r = esp32s3.run(elf, timeout=1800)
        assert "EMU VERDICT PASS target=esp32s3 cases=1 failed=0" in r.output, r.output[-3000:]


# --------------------------------------------------------------- the stack check (clang-22 only)

STACK_ARGS_WITH_VLA = r"""
extern int callee(int a, int b, int c, int d, int e, int f, int g, int h, int i);
int caller(int n, int x)
{
    volatile char vla[n];
    vla[0] = (char)x;
    return callee(x, 1, 2, 3, 4, 5, 6, 7, vla[0]) + 1;
}
"""


def _clang_s(tmp: Path, *flags: str) -> str:
    if shutil.which(s3cc.CLANG) is None:
        pytest.skip(f"{s3cc.CLANG} not installed (Debian package clang-22)")
    src = tmp / "sp.c"
    src.write_text(STACK_ARGS_WITH_VLA)
    out = tmp / "sp.s"
    subprocess.run([s3cc.CLANG, *s3cc.TARGET_FLAGS, "-O2", *flags, "-S", str(src), "-o",
                    str(out)], check=True, capture_output=True)
    return out.read_text()


def test_stack_check_finds_clangs_unaligned_call_frames(tmp_path: Path) -> None:
    """A VLA keeps a frame pointer even with -fomit-frame-pointer; clang then moves SP by the
    12 bytes of the three stack arguments around the call.  The check names it; the rounding
    removes it."""
    asm = _clang_s(tmp_path, "-fomit-frame-pointer")
    problems = s3cc.stack_problems(asm)
    assert problems and all(p.startswith("caller: line ") for p in problems), problems
    fixed, n = s3cc.round_call_frames(asm)
    assert n == 2, fixed  # the adjustment before the call and the one after it
    assert s3cc.stack_problems(fixed) == []
    moves = re.findall(r"addi\s+a\d+, a1, (-?\d+)\s+# s3cc: was (-?\d+)", fixed)
    assert sorted(moves) == [("-16", "-12"), ("16", "12")], moves


def test_stack_check_accepts_aligned_code(tmp_path: Path) -> None:
    """Reserved call frames (no VLA) and VLA allocations masked to 32 bytes prove aligned."""
    asm = _clang_s(tmp_path, "-fomit-frame-pointer")
    fixed, _ = s3cc.round_call_frames(asm)
    assert s3cc.stack_problems(fixed) == []
    plain = STACK_ARGS_WITH_VLA.replace("volatile char vla[n];", "volatile char vla[4];")
    (tmp_path / "sp.c").write_text(plain)
    src = tmp_path / "plain.c"
    src.write_text(plain)
    r = subprocess.run([s3cc.CLANG, *s3cc.TARGET_FLAGS, "-O2", "-fomit-frame-pointer", "-S",
                        str(src), "-o", "-"], check=True, capture_output=True, text=True)
    assert "movsp" not in r.stdout
    assert s3cc.stack_problems(r.stdout) == []


def test_driver_refuses_an_unaligned_stack(tmp_path: Path) -> None:
    """With the rounding off, s3cc.py fails the compile naming the function."""
    if shutil.which(s3cc.CLANG) is None:
        pytest.skip(f"{s3cc.CLANG} not installed (Debian package clang-22)")
    src = tmp_path / "sp.c"
    src.write_text(STACK_ARGS_WITH_VLA)
    r = subprocess.run([str(Path(s3cc.__file__)), "--s3cc-no-stack-fix", "-O2", "-c", str(src),
                        "-o", str(tmp_path / "sp.o")], capture_output=True, text=True,
                       env={"PATH": "/usr/bin:/bin", s3cc.CONFIG_ENV: "/nonexistent"})
    assert r.returncode == 1
    assert "the stack pointer would leave 16-byte alignment" in r.stderr, r.stderr
    assert "caller: line " in r.stderr, r.stderr


# ------------------------------------------------------------ the whole stack on the S3

LIBC_CHECK = Path(__file__).resolve().parent / "c" / "s3_libc_check.c"


def test_s3_libc_and_binary64_helpers_match_the_host(tmp_path: Path) -> None:
    """emulated/xtensa_s3/softdouble.c against the host FPU bit for bit (add, sub, div, the
    compares, conversions, nearbyint/nearbyintf on random and special values) and
    stack_libc.c's formatter against the host C library's snprintf byte for byte."""
    exe = tmp_path / "libc_check"
    subprocess.run(["gcc", "-O1", "-std=c11", "-Wall", "-Wextra", "-Werror", "-Wno-format",
                    "-DEMU_SOFTDOUBLE_HOST_TEST", "-DEMU_S3_LIBC_HOST_TEST",
                    str(esp32s3.S3_DIR / "softdouble.c"), str(esp32s3.S3_DIR / "stack_libc.c"),
                    str(LIBC_CHECK), "-lm", "-o", str(exe)], check=True)
    r = subprocess.run([str(exe)], capture_output=True, text=True, check=False)
    assert (r.returncode, r.stdout.strip().splitlines()[-1]) == (0, "bad=0"), r.stdout


@pytest.mark.slow
@pytest.mark.parametrize("esp_nn", [False, True], ids=["host-espnn", "esp-nn-esp32s3"])
@pytest.mark.parametrize("name", ["ds_cnn", "gru_rows", "lstm_rows"])
def test_whole_stack_on_s3(name: str, esp_nn: bool) -> None:
    """ExecuTorch's runtime + adapter + EspnnModel + memory policy + engine + kernels (the host
    twin, or ESP-NN's S3 SIMD kernels as its build selects them) on the emulated S3: the
    examples' keyword spotter and the zoo's unrolled GRU and LSTM, each with its self-test
    bit-exact and every output byte equal to host.run's."""
    import numpy as np

    from emulated import et_runtime, mcu_stack
    from executorch_espnn import host
    from executorch_espnn import runtime_sources as rs

    _need_firmware()
    if not (os.environ.get(rs.EXECUTORCH_SOURCE_ENV) and os.environ.get(rs.FLATBUFFERS_SOURCE_ENV)):
        pytest.skip(rs.how_to_set())
    tree = et_runtime.prepare()
    st = mcu_stack.ESP32S3
    p = mcu_stack.prepare_model(mcu_stack.load_model(name, st), tree, 600, st)
    assert p.sizes32.pointer_bytes == 4
    kernels = mcu_stack.kernel_variants(stack=st)[-1 if esp_nn else 0]
    run = mcu_stack.run_app(p, kernels, tree, timeout=900)
    outputs = [host.run(p.model.pte, list(c)) for c in p.model.cases]
    compared = sum(np.ascontiguousarray(y).nbytes for ys in outputs for y in ys)
    assert run.verdict == (f"EMU VERDICT PASS target=esp32s3 model={name} kernels={kernels.name} "
                           f"cases={len(p.model.cases)} failed=0 compared_bytes={compared}"), \
        run.output[-4000:]
    assert run.returncode == 0
    n = mcu_stack.SELFTEST_CASES
    assert run.selftest is not None and run.selftest.startswith(
        f"selftest: {n}/{n} bit-exact (worst 0 LSB)"), run.output
    assert re.search(r"^I \d+\.\d{6} executorch model_main\.cpp:\d+\] emulated esp32s3 firmware "
                     rf"for {name}$", run.output, re.M), run.output
    insns = run.instructions()
    assert len(insns) == len(p.model.cases) and all(i > 0 for i in insns), run.output
