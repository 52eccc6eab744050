"""cached_cia_ops(): torch's CIA-op collection memoised inside a lowering, never stale, restored after."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import pytest
import torch

from executorch_espnn import cia_ops_cache
from executorch_espnn.cia_ops_cache import cached_cia_ops

HOMES = ("torch._export.utils", "torch.export.exported_program", "torch.export.decomp_utils")


def _collect() -> set[Any]:
    # looked up at call time, as torch's callers do
    return importlib.import_module("torch._export.utils")._collect_all_valid_cia_ops()  # type: ignore[no-any-return]


def _torch_original() -> Callable[[], set[Any]]:
    fn = importlib.import_module("torch._export.utils")._collect_all_valid_cia_ops
    return getattr(fn, "__wrapped__", fn)  # type: ignore[no-any-return]


def test_the_memo_answers_what_torch_answers_and_torch_is_restored_after() -> None:
    original = _torch_original()
    with cached_cia_ops():
        assert all(importlib.import_module(h)._collect_all_valid_cia_ops is not original for h in HOMES)
        first = _collect()
        second = _collect()
        assert first == second == original()
        second.clear()  # a caller's copy: clearing it must not empty the memo
        assert _collect() == first
    assert all(importlib.import_module(h)._collect_all_valid_cia_ops is original for h in HOMES)


def test_nested_blocks_share_one_patch_until_the_outermost_ends() -> None:
    original = _torch_original()
    with cached_cia_ops():
        patched = importlib.import_module("torch._export.utils")._collect_all_valid_cia_ops
        with cached_cia_ops():
            assert importlib.import_module("torch._export.utils")._collect_all_valid_cia_ops is patched
        assert importlib.import_module("torch._export.utils")._collect_all_valid_cia_ops is patched
    assert importlib.import_module("torch._export.utils")._collect_all_valid_cia_ops is original


def test_an_operator_registered_after_a_memoised_call_is_seen() -> None:
    """A new CIA op, in a new namespace and then in that same namespace, shows up at once."""
    lib = torch.library.Library("espnn_cia_probe", "DEF")
    try:
        with cached_cia_ops():
            before = {str(op) for op in _collect()}
            lib.define("scale2(Tensor x) -> Tensor")
            lib.impl("scale2", lambda x: x * 2, "CompositeImplicitAutograd")
            after_first = {str(op) for op in _collect()}
            lib.define("scale3(Tensor x) -> Tensor")
            lib.impl("scale3", lambda x: x * 3, "CompositeImplicitAutograd")
            after_second = {str(op) for op in _collect()}
        assert not any("espnn_cia_probe" in op for op in before)
        assert "espnn_cia_probe.scale2.default" in after_first
        assert {"espnn_cia_probe.scale2.default", "espnn_cia_probe.scale3.default"} <= after_second
        assert after_second == {str(op) for op in _torch_original()()}
    finally:
        lib._destroy()


def test_a_lowering_checks_each_operator_about_once_and_lowers_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """torch checks every overload of every namespace on each of a lowering's decompositions;
    inside the block only the namespaces that changed are checked again."""
    from torch._export import utils

    from executorch_espnn import lower

    checks: list[int] = []
    preservable = utils._is_preservable_cia_op

    def counting(op: Any) -> bool:
        checks.append(1)
        return preservable(op)  # type: ignore[no-any-return]

    monkeypatch.setattr(utils, "_is_preservable_cia_op", counting)
    net = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU())
    args = (net, (torch.randn(1, 4),), [(torch.randn(1, 4),)])
    lower(*args, target="esp32")  # warm-up: torch's aten cache, imports

    checks.clear()
    cached = lower(*args, target="esp32").pte
    with_block = len(checks)
    checks.clear()
    with monkeypatch.context() as m:
        m.setattr(cia_ops_cache, "_HOMES", ())  # nothing patched: torch's own function
        plain = lower(*args, target="esp32").pte
    assert len(checks) > 2 * with_block, f"{len(checks)} checks without the block, {with_block} with it"
    assert cached == plain
