"""The engine's ESP32-S3 routing (engine/src/espnn_s3_kernels.h), on the host.

Built as an ESP32-S3 optimised runtime (``ESPNN_S3_KERNELS=1``) over host stand-ins of ESP-NN's
``*_esp32s3`` and ``*_ansi`` kernels (``host_espnn/src/s3_contracts.c``): the S3 ones abort when
called with operands outside the S3 kernel's contract (what ESP-NN 1.2.3's S3 kernels compute
bit-exactly, measured on the emulated ESP32-S3: tests/hardening/test_esp32s3.py).  Every golden
case, as an S3 payload, in place and with its constants copied, must run without an abort and
equal the reference executor, so the contracts hold for every golden payload and the ANSI
remainder (e.g. the mul's tail after the S3 SIMD prefix) computes the twin's result.
"""

from __future__ import annotations

import engine_helpers as eh
import numpy as np
import pytest

from devkit import payload_factory as pf
from devkit.scratch_helpers import retarget, without_conv_scratch
from executorch_espnn.payload.format import Target
from executorch_espnn.reference import run_delegate

V = eh.S3_CONTRACTS
CASES = {c.name: c for c in pf.all_cases(0)}


@pytest.fixture(scope="module")
def exe() -> object:
    return eh.build(V)


@pytest.mark.parametrize("placement", [(), ("--copy-consts",)], ids=["in_place", "consts_copy"])
def test_golden_suite_keeps_every_s3_contract(exe: object, placement: tuple[str, ...]) -> None:
    bad = []
    for name, c in CASES.items():
        data = retarget(c.payload, Target.ESP32S3)
        ref = run_delegate(data, c.inputs)
        r = eh.run(exe, V, data, c.inputs, len(ref), extra=placement)  # type: ignore[arg-type]
        if r.returncode != 0:
            bad.append(f"{name}: exit {r.returncode} {r.stderr[-300:]}")
            continue
        if [np.ascontiguousarray(w).tobytes() for w in ref] != r.outputs:
            bad.append(f"{name}: differs from the reference")
    assert not bad, "\n".join(bad)


def test_mul_tail_runs_on_ansi(exe: object) -> None:
    """A 135-element MUL: the S3 stand-in accepts only its 128-element SIMD prefix (it aborts
    otherwise), and the whole output equals the reference's."""
    c = CASES["mul_simd_and_tail"]
    data = retarget(c.payload, Target.ESP32S3)
    ref = run_delegate(data, c.inputs)
    assert ref[0].size == 135
    r = eh.run(exe, V, data, c.inputs, 1)  # type: ignore[arg-type]
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.outputs == [np.ascontiguousarray(ref[0]).tobytes()]


def test_ram_first_convolutions_run_on_ansi(exe: object) -> None:
    """Every golden convolution as an S3 payload without scratch: the engine accepts it (a
    short scratch is refused, a zero one chooses the kernel), routes it to ESP-NN's ANSI kernel
    (the S3 stand-ins abort on a NULL scratch the S3 kernel would not run with) and computes
    the reference's bytes."""
    moved = 0
    bad = []
    for name, c in CASES.items():
        data, n = without_conv_scratch(retarget(c.payload, Target.ESP32S3))
        if n == 0:
            continue
        moved += n
        ref = run_delegate(data, c.inputs)
        r = eh.run(exe, V, data, c.inputs, len(ref))  # type: ignore[arg-type]
        if r.returncode != 0:
            bad.append(f"{name}: exit {r.returncode} {r.stderr[-300:]}")
        elif [np.ascontiguousarray(w).tobytes() for w in ref] != r.outputs:
            bad.append(f"{name}: differs from the reference")
    assert moved >= 8 and not bad, "\n".join(bad)


def test_a_short_nonzero_scratch_is_still_refused(exe: object) -> None:
    """Only 0 means the ANSI kernel: one byte short of the rule stays an error."""
    c = CASES["conv_3x3_s2_odd"]
    data = retarget(c.payload, Target.ESP32S3, short_by=1)
    r = eh.run(exe, V, data, c.inputs, 1)  # type: ignore[arg-type]
    assert r.returncode != 0 and "scratch_size" in r.stderr, r.stderr[-2000:]
