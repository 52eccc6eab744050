"""The whole firmware stack bare-metal on an emulated MCU (emulated/mcu_stack.py): ExecuTorch's
runtime compiled from a source tree with the component, the bare-metal PAL, the memory policy,
the model's selected CPU kernels and their generated registration, running each example's model
and the zoo's CPU-island models (two delegates around CPU operators) through EspnnModel, with
EspnnModel::self_test() on the cases the header embeds, every output byte compared with
executorch_espnn.host.run on the same inputs.  On the Cortex-M7 (qemu-system-arm) with the host
ESP-NN twin and, with ESPNN_ESP_NN_DIR, ESP-NN's own ANSI C kernels; on the ESP32-C3 in its own
memory map, booted by its ROM on Espressif's QEMU, with the twin and ESP-NN as its build selects
it for the C3, instructions counted per inference.  The header the firmware uses carries the
pools measured on the target itself.

ExecuTorch's sources are on no registry CI reaches: without EXECUTORCH_SOURCE_DIR and
FLATBUFFERS_SOURCE_DIR these tests are skipped with exactly what to set; the ESP32-C3's also
without ESPNN_QEMU_ESP_DIR (Espressif's QEMU).
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from emulated import component, esp_qemu, et_runtime, mcu_stack
from executorch_espnn import runtime_sources as rs
from executorch_espnn.firmware import pte_meta

pytestmark = pytest.mark.slow

MODELS = mcu_stack.model_names()
STACKS = list(mcu_stack.STACKS)
# (stack, kernels) pairs: each stack's kernel sets (ESP-NN's need ESPNN_ESP_NN_DIR)
RUNS = [(st.name, k.name) for st in mcu_stack.STACKS.values()
        for k in mcu_stack.kernel_variants(stack=st)]
# island_net's `x - 0.5` is a delegated LUT since format 2.1: only abs stays on the CPU
CPU_MODELS = {"island_net": {"aten::abs.out"},
              "cumsum_net": {"aten::cumsum.out"}}  # its "/ 20" is a delegated LUT (rewrites/scalars.py)


@pytest.fixture(scope="module")
def tree() -> et_runtime.ExecutorchTree:
    if not (os.environ.get(rs.EXECUTORCH_SOURCE_ENV) and os.environ.get(rs.FLATBUFFERS_SOURCE_ENV)):
        pytest.skip(rs.how_to_set())
    return et_runtime.prepare()  # a tree that is set but unusable fails, it does not skip


_PREPARED: dict[tuple[str, str], mcu_stack.Prepared] = {}


def stack_named(name: str) -> mcu_stack.StackTarget:
    """The stack; an ESP chip's is skipped without its emulator (naming ESPNN_QEMU_ESP_DIR)."""
    st = mcu_stack.STACKS[name]
    if st.target.esp_chip:
        try:
            esp_qemu.require(esp_qemu.CHIPS[st.target.esp_chip])
        except esp_qemu.QemuEspMissing as exc:
            pytest.skip(str(exc))
    return st


def prepared(name: str, tree: et_runtime.ExecutorchTree, stack: str = "cortex-m7") -> mcu_stack.Prepared:
    if (stack, name) not in _PREPARED:
        st = stack_named(stack)
        _PREPARED[stack, name] = mcu_stack.prepare_model(mcu_stack.load_model(name, st), tree, stack=st)
    return _PREPARED[stack, name]


def kernels_named(name: str, stack: str = "cortex-m7") -> component.Kernels:
    return next(k for k in mcu_stack.kernel_variants(stack=mcu_stack.STACKS[stack]) if k.name == name)


def _nm(elf: Path, stack: str = "cortex-m7") -> str:
    nm = mcu_stack.STACKS[stack].target.cc.removesuffix("gcc") + "nm"
    return subprocess.run([nm, "-C", str(elf)], capture_output=True, text=True, check=True).stdout


@pytest.mark.parametrize(("stack", "kernels"), RUNS)
@pytest.mark.parametrize("name", MODELS)
def test_model_runs_bit_exact_through_espnn_model(name: str, stack: str, kernels: str,
                                                  tree: et_runtime.ExecutorchTree) -> None:
    from executorch_espnn import host

    p = prepared(name, tree, stack)
    run = mcu_stack.run_app(p, kernels_named(kernels, stack), tree)
    # what the verdict must count, from host.run on the same inputs
    outputs = [host.run(p.model.pte, list(c)) for c in p.model.cases]
    compared = sum(np.ascontiguousarray(y).nbytes for ys in outputs for y in ys)
    assert run.verdict == (f"EMU VERDICT PASS target={stack} model={name} kernels={kernels} "
                           f"cases={len(p.model.cases)} failed=0 compared_bytes={compared}"), \
        run.output[-4000:]
    assert run.returncode == 0
    for i in range(len(p.model.cases)):
        assert re.search(rf"^case {i}: ok \(\d+ us emulated\)$", run.output, re.M), run.output
    # the self-test the header embeds: the reference's outputs (delegates by the Python
    # reference, CPU operators by PyTorch), every case bit-exact on the target
    n = mcu_stack.SELFTEST_CASES
    assert p.model.selftest is not None and p.model.selftest["n_cases"] == n
    assert run.selftest is not None and run.selftest.startswith(
        f"selftest: {n}/{n} bit-exact (worst 0 LSB), latency "), run.output
    # the bare-metal PAL's log line, through et_pal_emit_log_message
    assert re.search(rf"^I \d+\.\d{{6}} executorch model_main\.cpp:\d+\] emulated {stack} "
                     rf"firmware for {name}$", run.output, re.M), run.output
    # instructions per inference where the board counts them (the C3 under QEMU -icount)
    insns = run.instructions()
    if mcu_stack.STACKS[stack].target.esp_chip:
        assert len(insns) == len(p.model.cases) and all(i > 0 for i in insns), run.output
    else:
        assert insns == []
    # the delegates hold what the target's measurement said, nothing is copied, and no arena
    # is their own: EspnnModel lends them one, the largest payload's (espnn_arena_lease.h)
    mem = run.memory()
    s = p.sizes32
    assert (mem["delegates"], mem["handle_bytes"], mem["state_bytes"], mem["arena_bytes"],
            mem["weights_bytes"]) == (s.n_delegates, s.delegate_handle_bytes,
                                      s.delegate_state_bytes, 0, 0)
    from executorch_espnn.payload import decode
    from executorch_espnn.pte import delegate_payloads

    assert s.delegate_arena_bytes == max(decode(d).arena_size for d in delegate_payloads(p.model.pte))
    # the program's inputs and outputs live in that arena (lower()'s io_arena default): the
    # firmware ran with them there, ExecuTorch planning none of them
    from executorch_espnn.io_arena import program_homes
    from executorch_espnn.pte import read_program

    info = read_program(p.model.pte)
    ins, outs = program_homes(info)
    assert None not in ins + outs, (ins, outs)
    assert not set(info.input_values + info.output_values) & set(info.planned_values)
    if name in CPU_MODELS:
        assert set(p.operators) == CPU_MODELS[name]
        assert s.n_delegates == 2, "an island between two delegates"
        syms = _nm(run.firmware.elf, stack)
        assert "executorch_espnn_register_kernels" in syms
        for kernel in ("abs_out",) if name == "island_net" else ("cumsum_out",):
            assert re.search(rf"torch::executor::native::{kernel}\(", syms), kernel
    else:
        assert p.operators == (), "fully delegated"


def test_the_c3_counts_the_same_instructions_run_to_run(tree: et_runtime.ExecutorchTree) -> None:
    """Under -icount shift=0,sleep=off (emulated/esp_qemu.py) the virtual clock never warps
    with host time: the same firmware retires the same instructions per inference every run."""
    p = prepared("ds_cnn", tree, "esp32c3")
    kernels = mcu_stack.kernel_variants(stack=mcu_stack.ESP32C3)[-1]
    first = mcu_stack.run_app(p, kernels, tree)
    second = mcu_stack.run_app(p, kernels, tree)
    assert first.passed and second.passed, first.output[-3000:] + second.output[-3000:]
    assert first.firmware.elf == second.firmware.elf
    assert len(first.instructions()) == len(p.model.cases) and all(first.instructions())
    assert first.instructions() == second.instructions()


@pytest.mark.parametrize("stack", STACKS)
@pytest.mark.parametrize("name", MODELS)
def test_pools_on_the_32_bit_target(name: str, stack: str, tree: et_runtime.ExecutorchTree) -> None:
    """The target's own measurement: 4-byte pointers; what depends on pointers (method
    allocator, delegate handles, temp allocator's routing floor) is smaller than the 64-bit
    host's figure, what the payload and the memory plan fix is the same."""
    p = prepared(name, tree, stack)
    s32, s64 = p.sizes32, p.sizes_host
    assert (s32.pointer_bytes, s64.pointer_bytes) == (4, 8)
    for same in ("planned_bytes", "delegate_state_bytes", "delegate_arena_bytes",
                 "delegate_weights_bytes", "n_planned_buffers", "n_delegates"):
        assert getattr(s32, same) == getattr(s64, same), same
    assert 0 < s32.method_allocator_bytes < s64.method_allocator_bytes
    assert 0 < s32.delegate_handle_bytes < s64.delegate_handle_bytes
    assert s32.temp_allocator_bytes <= s64.temp_allocator_bytes
    header = (p.work / "target" / "espnn_model" / "model_pte.h").read_text()
    assert "#define ESPNN_MODEL_SIZES_POINTER_BYTES 4u" in header
    assert f"#define ESPNN_MODEL_METHOD_ALLOCATOR_BYTES {s32.method_allocator_bytes}u" in header


@pytest.mark.parametrize("stack", STACKS)
def test_the_32_bit_method_allocator_figure_is_exact(stack: str, tree: et_runtime.ExecutorchTree) -> None:
    """One byte less than the target measured and begin() refuses, naming the pool."""
    p = prepared("ds_cnn", tree, stack)
    short = p.sizes32.method_allocator_bytes - 1
    run = mcu_stack.run_app(p, component.Kernels(), tree,
                            edit={"sizes.method_allocator_bytes": short})
    assert run.returncode == 1
    assert run.verdict is not None and run.verdict.startswith("EMU VERDICT FAIL ")
    assert (f"begin failed: loading method 'forward': the method allocator pool of {short} bytes "
            "(model_pte.h method_allocator_bytes) is too small") in run.output, run.output


def test_without_the_u_rule_the_registration_is_dropped(tree: et_runtime.ExecutorchTree) -> None:
    """docs/component.md's rule: the registration in a static library needs
    -u executorch_espnn_register_kernels, or the linker drops it and the CPU operators are
    missing at load time."""
    p = prepared("island_net", tree)
    run = mcu_stack.run_app(p, component.Kernels(), tree, keep_registration=False)
    assert "executorch_espnn_register_kernels" not in _nm(run.firmware.elf)
    assert run.returncode == 1 and run.verdict is not None
    assert run.verdict.startswith("EMU VERDICT FAIL "), run.output
    assert "begin failed: loading method 'forward' failed with " in run.output, run.output
    assert re.search(r"aten::abs\.out", run.output), run.output  # the runtime names it


@pytest.mark.parametrize("stack", STACKS)
def test_the_size_benchmark_adds_up(stack: str, tree: et_runtime.ExecutorchTree) -> None:
    """benchmarks/mcu_sizes.py's per-part figures against the ELF and the .pte."""
    from benchmarks import mcu_sizes

    stack_named(stack)
    r = mcu_sizes.measure("island_net", stack)
    parts, elf = r.parts, r.elf_totals
    flash = sum(v["text"] + v["rodata"] + v["iram"] for v in parts.values())
    assert elf["flash_code_and_rodata"] <= flash <= 1.02 * elf["flash_code_and_rodata"]  # merged strings
    assert sum(v["data"] for v in parts.values()) == elf["data"]
    assert sum(v["bss"] for v in parts.values()) == elf["bss"]
    assert sum(v["iram"] for v in parts.values()) == elf["iram"]
    # the .pte, and a 4-byte op-family selector for each opcode its payloads use (the engine
    # links only those families: docs/engine.md)
    pte = prepared("island_net", tree, stack).model.pte
    assert parts["model data"]["rodata"] == len(pte) + 4 * len(pte_meta.read(pte).engine_ops)
    if mcu_stack.STACKS[stack].target.esp_chip:
        # only the C3's start-up, trap vector and flash mapping (board support) run from IRAM
        assert parts["board support"]["iram"] > 0
        assert elf["iram"] == parts["board support"]["iram"] + parts[mcu_sizes.PADDING]["iram"]
        assert set(r.instructions) == {k.name for k in mcu_stack.kernel_variants(stack=mcu_stack.STACKS[stack])}
    assert parts["ExecuTorch runtime"]["text"] > 10_000 and parts["engine"]["text"] > 10_000
    assert parts["selected kernels + registration"]["text"] > 0
    assert r.pools_target["method_allocator_bytes"] < r.pools_host["method_allocator_bytes"]
    assert r.policy_bytes >= sum(r.pools_target.values())  # every pool is held by the policy


def test_the_profiler_counts_each_layer_on_the_cortex_m7(tree: et_runtime.ExecutorchTree) -> None:
    """custom_executorch_profile on the target: the component built with the profiler, the layer
    table in the header, EspnnModel::profile() after the last case; outputs still bit-exact.
    QEMU's mps2 Cortex-M7 has no counting DWT, so the clock is the SysTick fallback (the
    emulator's virtual clock at the board's 25 MHz): counts are emulation figures."""
    import executorch_espnn as ee
    from devkit.zoo import ZOO
    from executorch_espnn.report.profile import check_against, parse_log

    p = prepared("island_net", tree)
    z = ZOO["island_net"]
    low = ee.lower(z.model(), z.example_inputs(), calibration=z.calibration_data(8),
                   target=mcu_stack.CORTEX_M7.lower_for, selftest=mcu_stack.SELFTEST_CASES, profile=True)
    assert low.profile is not None and low.pte == p.model.pte  # the same program, now with its table
    run = mcu_stack.run_app(p, component.Kernels(), tree, profile=low.profile.to_dict())
    assert run.returncode == 0 and run.passed, run.output[-4000:]
    prof = parse_log(run.output, "the Cortex-M7's output")
    check_against(prof, low.report.to_dict(), "the Cortex-M7's output")
    assert prof.unit == "cycles" and len(prof.delegates) == 2  # an island between two delegates
    assert "aten.abs.default" in prof.cpu[1].detail
    assert sum(x.ticks for x in (*prof.layers, *prof.delegates, *prof.cpu)) == prof.total
    # every op that computes something takes time at the SysTick's resolution
    assert all(x.ticks > 0 for x in prof.layers if x.family not in ("RESHAPE", "QUANTIZE", "DEQUANTIZE")), \
        run.output[-4000:]
    assert sum(x.ticks for x in prof.layers) > 0
