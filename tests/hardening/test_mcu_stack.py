"""The whole firmware stack bare-metal on the emulated Cortex-M7 (emulated/mcu_stack.py):
ExecuTorch's runtime compiled from a source tree with the component, the bare-metal PAL, the
memory policy, the model's selected CPU kernels and their generated registration, running each
example's model and the zoo's CPU-island models (two delegates around CPU operators) through
EspnnModel under qemu-system-arm, every output byte compared with executorch_espnn.host.run on
the same inputs; on the host ESP-NN twin and, with ESPNN_ESP_NN_DIR, on ESP-NN's own ANSI C
kernels.  The header the firmware uses carries the pools measured on the target itself.

ExecuTorch's sources are on no registry CI reaches: without EXECUTORCH_SOURCE_DIR and
FLATBUFFERS_SOURCE_DIR these tests are skipped with exactly what to set.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from emulated import component, et_runtime, mcu_stack
from executorch_espnn import runtime_sources as rs

pytestmark = pytest.mark.slow

MODELS = mcu_stack.model_names()
KERNELS = [k.name for k in mcu_stack.kernel_variants()]
# island_net's `x - 0.5` is a delegated LUT since format 2.1: only abs stays on the CPU
CPU_MODELS = {"island_net": {"aten::abs.out"},
              "cumsum_net": {"aten::cumsum.out"}}  # its "/ 20" is a delegated LUT (rewrites/scalars.py)


@pytest.fixture(scope="module")
def tree() -> et_runtime.ExecutorchTree:
    if not (os.environ.get(rs.EXECUTORCH_SOURCE_ENV) and os.environ.get(rs.FLATBUFFERS_SOURCE_ENV)):
        pytest.skip(rs.how_to_set())
    return et_runtime.prepare()  # a tree that is set but unusable fails, it does not skip


_PREPARED: dict[str, mcu_stack.Prepared] = {}


def prepared(name: str, tree: et_runtime.ExecutorchTree) -> mcu_stack.Prepared:
    if name not in _PREPARED:
        _PREPARED[name] = mcu_stack.prepare_model(mcu_stack.load_model(name), tree)
    return _PREPARED[name]


def kernels_named(name: str) -> component.Kernels:
    return next(k for k in mcu_stack.kernel_variants() if k.name == name)


def _nm(elf: Path) -> str:
    return subprocess.run(["arm-none-eabi-nm", "-C", str(elf)], capture_output=True, text=True,
                          check=True).stdout


@pytest.mark.parametrize("kernels", KERNELS)
@pytest.mark.parametrize("name", MODELS)
def test_model_runs_bit_exact_through_espnn_model(name: str, kernels: str,
                                                  tree: et_runtime.ExecutorchTree) -> None:
    from executorch_espnn import host

    p = prepared(name, tree)
    run = mcu_stack.run_app(p, kernels_named(kernels), tree)
    # what the verdict must count, from host.run on the same inputs
    outputs = [host.run(p.model.pte, list(c)) for c in p.model.cases]
    compared = sum(np.ascontiguousarray(y).nbytes for ys in outputs for y in ys)
    assert run.verdict == (f"EMU VERDICT PASS target=cortex-m7 model={name} kernels={kernels} "
                           f"cases={len(p.model.cases)} failed=0 compared_bytes={compared}"), \
        run.output[-4000:]
    assert run.returncode == 0
    for i in range(len(p.model.cases)):
        assert re.search(rf"^case {i}: ok \(\d+ us emulated\)$", run.output, re.M), run.output
    # the bare-metal PAL's log line, through et_pal_emit_log_message
    assert re.search(rf"^I \d+\.\d{{6}} executorch model_main\.cpp:\d+\] emulated cortex-m7 "
                     rf"firmware for {name}$", run.output, re.M), run.output
    # the delegates hold what the target's measurement said, and nothing is copied
    mem = run.memory()
    s = p.sizes32
    assert (mem["delegates"], mem["handle_bytes"], mem["state_bytes"], mem["arena_bytes"],
            mem["weights_bytes"]) == (s.n_delegates, s.delegate_handle_bytes,
                                      s.delegate_state_bytes, s.delegate_arena_bytes, 0)
    if name in CPU_MODELS:
        assert set(p.operators) == CPU_MODELS[name]
        assert s.n_delegates == 2, "an island between two delegates"
        syms = _nm(run.firmware.elf)
        assert "executorch_espnn_register_kernels" in syms
        for kernel in ("abs_out",) if name == "island_net" else ("cumsum_out",):
            assert re.search(rf"torch::executor::native::{kernel}\(", syms), kernel
    else:
        assert p.operators == (), "fully delegated"


@pytest.mark.parametrize("name", MODELS)
def test_pools_on_the_32_bit_target(name: str, tree: et_runtime.ExecutorchTree) -> None:
    """The target's own measurement: 4-byte pointers; what depends on pointers (method
    allocator, delegate handles, temp allocator's routing floor) is smaller than the 64-bit
    host's figure, what the payload and the memory plan fix is the same."""
    p = prepared(name, tree)
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


def test_the_32_bit_method_allocator_figure_is_exact(tree: et_runtime.ExecutorchTree) -> None:
    """One byte less than the target measured and begin() refuses, naming the pool."""
    p = prepared("ds_cnn", tree)
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


def test_the_size_benchmark_adds_up(tree: et_runtime.ExecutorchTree) -> None:
    """benchmarks/mcu_sizes.py's per-part figures against the ELF and the .pte."""
    from benchmarks import mcu_sizes

    r = mcu_sizes.measure("island_net")
    parts, elf = r.parts, r.elf_totals
    flash = sum(v["text"] + v["rodata"] for v in parts.values())
    assert elf["flash_code_and_rodata"] <= flash <= 1.02 * elf["flash_code_and_rodata"]  # merged strings
    assert sum(v["data"] for v in parts.values()) == elf["data"]
    assert sum(v["bss"] for v in parts.values()) == elf["bss"]
    assert parts["model data"]["rodata"] == len(prepared("island_net", tree).model.pte)
    assert parts["ExecuTorch runtime"]["text"] > 10_000 and parts["engine"]["text"] > 10_000
    assert parts["selected kernels + registration"]["text"] > 0
    assert r.pools_target["method_allocator_bytes"] < r.pools_host["method_allocator_bytes"]
    assert r.policy_bytes >= sum(r.pools_target.values())  # every pool is held by the policy
