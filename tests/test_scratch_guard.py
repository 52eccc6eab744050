"""The scratch guard mode (espnn_component/host_espnn/include/esp_nn_host_guard.h): the host
kernels write the scratch regions ESP-NN's ESP32-S3 (or P4) kernels write, into a side buffer of each
op's scratch_size followed by guard bytes, checked after every op.  Payloads sized by
executorch_espnn/scratch.py must never reach a guard; a deliberately short one must."""

from __future__ import annotations

import functools
from pathlib import Path

import engine_helpers as eh
import numpy as np
import numpy.typing as npt
import pytest

from devkit import payload_factory as pf
from devkit.scratch_helpers import banded, op_scratch, retarget
from devkit.single_op import random_inputs
from devkit.zoo import ZOO
from executorch_espnn.payload import decode
from executorch_espnn.payload.format import Opcode, Target
from executorch_espnn.reference import run_delegate

pytestmark = pytest.mark.skipif(__import__("shutil").which("gcc") is None, reason="needs gcc")

S3 = Target.ESP32S3


P4 = Target.ESP32P4
GUARDS = {S3: eh.GUARD_S3, P4: eh.GUARD_P4}


# the S3 guards in an engine that knows its chip, for payloads the lowering sized: it reads a
# depthwise scratch short of the whole map as bands, as an S3 build does
CHIP_GUARDS = {S3: eh.GUARD_S3_CHIP, P4: eh.GUARD_P4}


@functools.cache
def _exe(target: Target = S3, chip: bool = False) -> Path:
    return eh.build((CHIP_GUARDS if chip else GUARDS)[target])


def _run_exact(name: str, data: bytes, inputs: list[npt.NDArray[np.generic]], target: Target = S3,
               chip: bool = False) -> None:
    ref = run_delegate(data, inputs)
    r = eh.run(_exe(target, chip), (CHIP_GUARDS if chip else GUARDS)[target], data, inputs, len(ref))
    assert r.returncode == 0, f"{name}: exit {r.returncode}\n{r.stderr[-3000:]}"
    for got, want in zip(r.outputs, ref, strict=True):
        assert got == np.ascontiguousarray(want).tobytes(), name


def _uses_scratch(data: bytes) -> bool:
    p = decode(data)
    return any(op_scratch(p, i, S3) for i in range(len(p.ops)))


@pytest.mark.parametrize("rows", [1, 2])
def test_depthwise_bands_stay_inside_their_scratch(rows: int) -> None:
    """Banded depthwise payloads (docs/engine.md, "Depthwise bands"): the band copies and the
    S3 kernel's writes for each band stay inside the band's scratch, and the result is exact."""
    n = 0
    for c in pf.all_cases():
        data, k = banded(c.payload, rows)
        if k:
            n += k
            _run_exact(c.name, data, c.inputs, chip=True)
    assert n >= 3


@pytest.mark.parametrize("target", [S3, P4], ids=["esp32s3", "esp32p4"])
def test_golden_suite_stays_inside_its_scratch(target: Target) -> None:
    """Every golden payload, lowered for the chip (scratch by the lowering's rule), runs
    exactly with every guard intact."""
    cases = pf.all_cases()
    assert sum(_uses_scratch(c.payload) for c in cases) >= 8
    for c in cases:
        _run_exact(c.name, retarget(c.payload, target), c.inputs, target)


@pytest.mark.parametrize(("target", "name"), [
    *((S3, n) for n in ("conv_1x1", "conv_3x3_s2_odd", "conv_ch_not_mult8", "conv_batch2", "dw_mult1",
                        "softmax_rows")),
    *((P4, n) for n in ("conv_1x1", "conv_3x3_s2_odd", "float_conv_chain", "softmax_rows"))])
def test_short_scratch_is_caught(target: Target, name: str) -> None:
    case = {c.name: c for c in pf.all_cases()}[name]
    data = retarget(case.payload, target, short_by=1)
    op = next(i for i, o in enumerate(decode(data).ops) if o.opcode in (
        Opcode.CONV2D, Opcode.DEPTHWISE_CONV2D, Opcode.SOFTMAX))
    r = eh.run(_exe(target), GUARDS[target], data, case.inputs, 1)
    assert r.returncode != 0, name
    assert f"scratch guard: op {op} wrote 1 bytes past its scratch_size" in r.stderr, r.stderr[-2000:]
    assert "fix the scratch rule" in r.stderr


@pytest.mark.parametrize("name", ["dw_mult2_s2", "conv_3x3_s2_odd"])
def test_no_scratch_where_the_kernel_needs_a_pointer_is_caught(name: str) -> None:
    """ESP-NN's S3 depthwise and general conv return without computing on a NULL scratch
    (what the engine passes for scratch_size 0), even where they would write nothing."""
    case = {c.name: c for c in pf.all_cases()}[name]
    p = decode(case.payload)
    assert op_scratch(p, 0, S3) > 0, "the rule gives it a region"
    r = eh.run(_exe(), eh.GUARD_S3, retarget(case.payload, S3, short_by=1 << 20), case.inputs, 1)
    assert r.returncode != 0, name
    assert "gets a NULL scratch (scratch_size 0) and would not compute" in r.stderr, r.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.parametrize(("target", "name"), [
    # the S3 lowerings are the ones test_zoo.py shares (devkit.lowered_zoo); two small P4 ones
    *((S3, n) for n, z in ZOO.items() if not z.large), (P4, "ds_cnn_kws"), (P4, "resnet8")])
def test_zoo_stays_inside_its_scratch(target: Target, name: str) -> None:
    """Zoo models lowered for the chip: each delegate runs (random inputs) with guards intact
    and matches the reference."""
    from devkit.lowered_zoo import lowered_zoo
    from executorch_espnn.pte import delegate_payloads

    payloads = delegate_payloads(lowered_zoo(name, target.name.lower()).pte)
    assert payloads
    convs = with_scratch = 0
    for k, data in enumerate(payloads):
        p = decode(data)
        assert p.target == target
        for op in p.ops:
            if op.opcode in (Opcode.CONV2D, Opcode.DEPTHWISE_CONV2D):
                convs += 1
                with_scratch += op.scratch_size > 0
        _run_exact(f"{name}[{k}]", data, random_inputs(data, k), target, chip=True)
    assert with_scratch > 0 or convs == 0, "a conv model reaches ESP-NN's scratch-using kernels"
