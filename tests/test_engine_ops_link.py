"""The op families a firmware links (espnn_component/engine/src/registry.c).

An engine built with ESPNN_ENGINE_OPS_FROM_MODELS=1 links only the families some embedded
model's model_pte_data.S selects: here the real template, rendered for a model whose payloads
use FULLY_CONNECTED only, linked into ``espnn_run`` with --gc-sections.  That engine runs a
FULLY_CONNECTED payload bit-exactly as the Python reference does, carries no code of the other
families, and refuses an ADD payload at init with an error naming the op and the fix;
ESPNN_ENGINE_ALL_OPS=1 on the same build brings every family back.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
from pathlib import Path

import engine_helpers as eh
import numpy as np
import pytest

from devkit import payload_factory as pf
from executorch_espnn import rendering
from executorch_espnn.payload.format import Opcode
from executorch_espnn.reference import run_delegate

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("nm") is None,
                                reason="needs gcc and nm")

GC = ("-ffunction-sections", "-fdata-sections")


@functools.cache
def _selectors(ops: tuple[str, ...]) -> Path:
    """model_pte_data.S for a model whose payloads use ``ops`` (a 16-byte stand-in .pte)."""
    d = eh.cache_dir() / ("selectors-" + "-".join(ops))
    d.mkdir(exist_ok=True)
    (d / "model.pte").write_bytes(bytes(16))
    text = rendering.render("model_pte_data.S.j2", pte_path=str(d / "model.pte"),
                            pte={"engine_ops": list(ops)})
    rendering.write_if_changed(d / "model_pte_data.S", text)
    return d / "model_pte_data.S"


def _variant(name: str, *defines: str) -> eh.Variant:
    return eh.Variant(name, ("-O2", "-DESPNN_HOST_STRICT", *GC, *defines),
                      extra_sources=(_selectors(("fully_connected",)),),
                      ldflags=("-Wl,--gc-sections",))


SELECTED = _variant("ops_fc", "-DESPNN_ENGINE_OPS_FROM_MODELS=1")
ALL = _variant("ops_all", "-DESPNN_ENGINE_OPS_FROM_MODELS=1", "-DESPNN_ENGINE_ALL_OPS=1")
# the Kconfig switch (what menuconfig writes into the build's Kconfig header)
ALL_KCONFIG = eh.Variant("ops_all_kconfig", (*SELECTED.cflags, "-DCONFIG_ESPNN_ET_ALL_OPS=1"),
                         extra_sources=SELECTED.extra_sources, ldflags=SELECTED.ldflags)


@functools.cache
def _build(name: str) -> Path:
    return eh.build({v.name: v for v in (SELECTED, ALL, ALL_KCONFIG)}[name])


def _exe(v: eh.Variant) -> Path:
    return _build(v.name)


def _symbols(exe: Path) -> set[str]:
    out = subprocess.run(["nm", str(exe)], capture_output=True, text=True, check=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.strip()}


def _fc() -> pf.Case:
    return pf.fc_case("fc", in_shape=(2, 24), n_out=7, seed=3)


def _add() -> pf.Case:
    return pf.binary_case("add", Opcode.ADD, (1, 4, 4, 3), (1, 4, 4, 3))


def test_selected_engine_runs_its_model_bit_exactly() -> None:
    case = _fc()
    ref = run_delegate(case.payload, case.inputs)
    r = eh.run(_exe(SELECTED), SELECTED, case.payload, case.inputs, len(ref))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.outputs == [np.ascontiguousarray(a).tobytes() for a in ref]


def test_selected_engine_links_only_the_selected_family() -> None:
    syms = _symbols(_exe(SELECTED))
    assert "espnn_family_fully_connected" in syms
    for other in ("add", "conv2d", "depthwise_conv2d", "softmax", "batch_matmul", "layer_norm"):
        assert f"espnn_family_{other}" not in syms, other
    assert {f"espnn_family_{o}" for o in ("add", "conv2d", "softmax")} <= _symbols(_exe(ALL))


def test_an_op_not_linked_fails_init_naming_it_and_the_fix() -> None:
    case = _add()
    r = eh.run(_exe(SELECTED), SELECTED, case.payload, case.inputs, 1)
    assert r.returncode != 0
    fields = r.error_fields()
    assert fields["status"] == "ESPNN_ERR_UNSUPPORTED"
    assert fields["opcode"] == str(int(Opcode.ADD))
    text = r.stdout + r.stderr
    assert "op 0 (ADD)" in text and "not linked into this firmware" in text, text
    assert "CONFIG_ESPNN_ET_ALL_OPS=y" in text and "-DESPNN_ENGINE_ALL_OPS=1" in text


@pytest.mark.parametrize("variant", [ALL, ALL_KCONFIG], ids=lambda v: v.name)
def test_all_ops_brings_every_family_back(variant: eh.Variant) -> None:
    case = _add()
    ref = run_delegate(case.payload, case.inputs)
    r = eh.run(_exe(variant), variant, case.payload, case.inputs, len(ref))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.outputs == [np.ascontiguousarray(a).tobytes() for a in ref]
