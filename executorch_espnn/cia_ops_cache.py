"""One walk over torch's CompositeImplicitAutograd operators per lowering, not five.

Every ``ExportedProgram.run_decompositions`` (torch.export, ``to_edge``, the quantizer's
re-export: about five per lowering) asks ``torch._export.utils._collect_all_valid_cia_ops``
for the set of CIA operators it may keep whole.  The function materialises the C++ CIA
registrations once for each of the ~40 ``torch.ops`` namespaces and checks every overload of
every operator in them: a fifth of a single-operator lowering's time, recomputed each time
with the same answer.

``cached_cia_ops()`` replaces it, while the ``with`` block runs, by the same walk done
incrementally: a namespace is walked again only when its answer can have changed, that is
when it has materialised more operators (``len(namespace._dir)``: a new operator, or a new
namespace) or its entries in the C++ dispatcher's CompositeImplicitAutograd registrations
changed (a ``torch.library`` CIA kernel).  aten goes through torch's own cache, as in torch's
function.  What this key cannot see is a Python-only CIA kernel (``py_impl``) added to an
operator the block already walked; torch's aten cache has the same blind spot for the life of
the process, and here it lasts one block: the memo is dropped when the outermost block ends and
torch's function is put back.  Re-entrant and thread-safe: nested or concurrent lowerings
share one patch.
"""


from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

# where torch looks the function up by name at call time (each imports it into its globals)
_HOMES = ("torch._export.utils", "torch.export.exported_program", "torch.export.decomp_utils")
_NAME = "_collect_all_valid_cia_ops"

_lock = threading.RLock()
_depth = 0
_saved: dict[str, Callable[[], set[Any]]] = {}
# namespace -> ((materialised operators, its CIA registrations), its preservable CIA overloads)
_memo: dict[str, tuple[tuple[int, frozenset[str]], frozenset[Any]]] = {}


def _registrations_by_namespace() -> dict[str, frozenset[str]]:
    import torch

    names: dict[str, set[str]] = {}
    for entry in torch._C._dispatch_get_registrations_for_dispatch_key("CompositeImplicitAutograd"):
        names.setdefault(entry.split("::", 1)[0], set()).add(entry)
    return {ns: frozenset(entries) for ns, entries in names.items()}


def _collect() -> set[Any]:
    """torch's ``_collect_all_valid_cia_ops``, walking only the namespaces that changed."""
    import torch
    from torch._export import utils

    registrations = _registrations_by_namespace()
    utils._materialize_cpp_cia_ops()  # once, not once per namespace
    found: set[Any] = set()
    for name in list(torch.ops._dir):
        if name == "aten":
            found |= utils._collect_all_valid_cia_ops_for_aten_namespace()
            continue
        if not hasattr(torch.ops, name):
            raise AssertionError(f"torch.ops does not have attribute {name!r}")
        namespace = getattr(torch.ops, name)
        if not isinstance(namespace, torch._ops._OpNamespace):
            continue
        key = (len(namespace._dir), registrations.get(name, frozenset()))
        hit = _memo.get(name)
        if hit is None or hit[0] != key:
            ops = frozenset(
                overload
                for op in namespace
                for overload in getattr(namespace, op).op_overloads()
                if utils._is_preservable_cia_op(overload)
            )
            hit = (key, ops)
            _memo[name] = hit
        found |= hit[1]
    return found


@contextmanager
def cached_cia_ops() -> Iterator[None]:
    """Memoise torch's CIA-op collection inside the block (see the module docstring)."""
    global _depth
    import importlib

    with _lock:
        if _depth == 0:
            original: Callable[[], set[Any]] = importlib.import_module("torch._export.utils").__dict__[_NAME]
            for home in _HOMES:
                module = importlib.import_module(home)
                if module.__dict__.get(_NAME) is original:
                    _saved[home] = original
                    setattr(module, _NAME, _collect)
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                for home, fn in _saved.items():
                    setattr(importlib.import_module(home), _NAME, fn)
                _saved.clear()
                _memo.clear()
