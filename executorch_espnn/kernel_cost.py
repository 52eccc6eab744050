"""What a RAM-first kernel costs in instructions (``optimize="ram"``, executorch_espnn.kernel_choice):
measured figures, looked up by the content of the op, never estimated.

A CONV2D/DEPTHWISE_CONV2D moved to ESP-NN's ANSI kernel saves its fast kernel's scratch and
costs instructions.  That cost cannot be measured on this computer at lowering time: the fast
kernels are ESP32-S3/P4 assembly (the host runs ESP-NN's C for both, so host instruction counts
are equal by construction), and an emulator run per layer is far too slow for a build.  So the
figures are measured once per (target, op, shapes, parameters, kernel pair) by a benchmark on the
emulated chip and cached here by a content hash of exactly those; the report shows a figure only
when the cache has one for that op, with where it came from, and otherwise says it is not measured.

Two places hold figures, looked up in this order:

* the user's cache, one small JSON file per key under ``$ESPNN_CACHE_DIR/kernel-cost/`` (default
  ``~/.cache/executorch-espnn/kernel-cost/``, the host library's cache folder), where
  ``benchmarks/ram_first_cost.py`` records what it measures: a user's own measurement wins;
* the package's ``kernel_costs.json``, the figures that benchmark measured for the zoo's
  geometries (``--ship`` writes them), each entry with its layer and how it was measured.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from .payload import Payload, Storage

CACHE_ENV = "ESPNN_CACHE_DIR"  # the same variable as executorch_espnn.host's cache
SUBDIR = "kernel-cost"
NOT_MEASURED = ("not measured: the fast kernel is chip assembly, so host counts would be equal; "
                "a benchmark on the emulated chip fills the cost cache (executorch_espnn/kernel_cost.py)")


@dataclass(frozen=True)
class KernelCost:
    """Instructions of one op per invoke with the chip's fast kernel and with ESP-NN's ANSI kernel."""

    fast_instructions: int
    ansi_instructions: int
    source: str  # how it was measured: "emulated esp32s3 (QEMU -icount), ESP-NN 1.2.3, ..."

    @property
    def extra_instructions(self) -> int:
        return self.ansi_instructions - self.fast_instructions


# Quantization values among the parameters: the kernels' instruction counts do not depend on
# them beyond noise (DS-CNN's four depthwise layers, one geometry with four sets of offsets and
# clamps: 2,002,050 to 2,002,600 ANSI instructions, 0.03 %), so a figure serves every model
# with the layer's geometry, not only the calibration it was measured with.
QUANT_PARAMS = frozenset({"in_offset", "out_offset", "act_min", "act_max"})


def cost_key(p: Payload, op: int) -> str:
    """The content hash of what an op's instruction count depends on: the target, the opcode,
    its geometry parameters (not ``QUANT_PARAMS``) and the dims and dtypes of its operands
    (constants by dims, not values: a kernel's instruction count does not depend on weight
    values)."""
    o = p.ops[op]
    operands: list[list[object] | None] = []
    for tid in o.inputs:
        if tid is None:
            operands.append(None)
            continue
        t = p.tensors[tid]
        operands.append([int(t.dtype), list(t.dims), t.storage == Storage.CONST])
    out = p.tensors[o.output]
    geometry = {k: v for k, v in sorted(o.params.items()) if k not in QUANT_PARAMS}
    doc = {"target": p.target.name.lower(), "opcode": o.opcode.name, "params": geometry,
           "operands": operands, "output": [int(out.dtype), list(out.dims)]}
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


def cache_dir() -> Path:
    base = os.environ.get(CACHE_ENV)
    root = Path(base) if base else Path.home() / ".cache" / "executorch-espnn"
    return root / SUBDIR


SHIPPED = Path(__file__).with_name("kernel_costs.json")


def _cost(d: object) -> KernelCost | None:
    if not isinstance(d, dict):
        return None
    try:
        return KernelCost(int(d["fast_instructions"]), int(d["ansi_instructions"]), str(d["source"]))
    except (ValueError, KeyError, TypeError):
        return None


@functools.lru_cache(maxsize=4)
def _parsed(path: Path, version: tuple[int, int]) -> dict[str, dict[str, object]]:
    """``path``'s table as of ``version`` (mtime, size): a report looks up every moved layer,
    and the table is read once per version of the file, not once per layer."""
    del version  # part of the cache key only: a file edited since is read again
    try:
        table = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return table if isinstance(table, dict) else {}


def shipped(path: Path = SHIPPED) -> dict[str, dict[str, object]]:
    """The package's measured figures by key (empty if the file is missing or unreadable: a
    report then says "not measured", it never fails over a cost figure).  A copy: the caller
    may change it."""
    try:
        st = path.stat()
    except OSError:
        return {}
    return dict(_parsed(path, (st.st_mtime_ns, st.st_size)))


def lookup(key: str) -> KernelCost | None:
    """The measured cost for ``key``: the user's cache first, then the package's figures; None
    when neither has it (or the entry is unreadable)."""
    path = cache_dir() / f"{key}.json"
    try:
        own = _cost(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        own = None
    return own if own is not None else _cost(shipped().get(key))


def record(key: str, cost: KernelCost) -> Path:
    """Store a measurement (what the benchmark calls), atomically."""
    folder = cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{key}.json"
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(asdict(cost), indent=1) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def ship(entries: dict[str, tuple[KernelCost, str]], path: Path = SHIPPED) -> int:
    """Merge measurements (key -> (cost, layer label)) into the package's table; returns how
    many keys it now holds.  Keys are sorted so a re-measurement changes only its lines."""
    table = shipped(path)
    for key, (cost, layer) in entries.items():
        table[key] = {"layer": layer, **asdict(cost)}
    path.write_text(json.dumps(dict(sorted(table.items())), indent=1) + "\n", encoding="utf-8")
    _parsed.cache_clear()  # a rewrite within the clock's tick keeps its mtime
    return len(table)
