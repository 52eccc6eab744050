"""Compile golden payloads and their vectors into C for the emulated bare-metal runs.

Each case's payload and inputs come from ``devkit/payload_factory.py`` (the golden suite);
the expected outputs come from ``executorch_espnn.reference.run_delegate``, the bit-exact
Python executor, never from the C engine.  ``render`` turns them into a C file through
``emulated/templates/golden_cases.c.j2``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from executorch_espnn import rendering
from executorch_espnn.payload import Payload, Storage, decode
from executorch_espnn.payload.state import state_bytes
from executorch_espnn.reference import run_delegate

TEMPLATES = Path(__file__).resolve().parent / "templates"
_NAME = re.compile(r"^[A-Za-z0-9_.+-]+$")
_BYTES_PER_LINE = 40


@dataclass(frozen=True)
class GoldenCase:
    name: str
    payload: bytes
    inputs: tuple[bytes, ...]
    expected: tuple[bytes, ...]
    multibyte_consts: bool  # int32/float32 constants: in place at an odd address is refused
    ram_bytes: int  # what one case needs from the pool (see golden_main.c)


def _align16(n: int) -> int:
    return (n + 15) & ~15


def make_case(name: str, payload: bytes, inputs: Sequence[npt.NDArray[np.generic]]) -> GoldenCase:
    """A case whose expected outputs are the reference executor's."""
    if not _NAME.match(name):
        raise ValueError(f"case name {name!r} may only use [A-Za-z0-9_.+-] (it becomes a C string literal)")
    p = decode(payload)
    expected = run_delegate(payload, list(inputs))
    multibyte = any(t.storage == Storage.CONST and t.dtype.size > 1 for t in p.tensors)
    ins = tuple(np.ascontiguousarray(x).tobytes() for x in inputs)
    outs = tuple(np.ascontiguousarray(y).tobytes() for y in expected)
    io = io_pool_bytes(p, ins, outs)
    # the odd-address placement holds the payload copy, a constants copy, state, arena and io
    ram = (
        _align16(len(payload) + 1) + 16 + _align16(len(p.constants)) + 16
        + _align16(state_bytes(p)) + 16 + _align16(p.arena_size) + 16 + io
    )
    return GoldenCase(name, payload, ins, outs, multibyte, ram)


def io_pool_bytes(p: Payload, inputs: Sequence[bytes], outputs: Sequence[bytes]) -> int:
    """Pool bytes golden_main.c takes for a case's io: none for a tensor with an io home (format
    2.4: it runs in the arena, as EspnnModel runs it), an aligned buffer for each other one."""
    homed = set(p.homes())
    tids = [*p.inputs, *p.outputs]
    return sum(_align16(len(b)) + 16 for tid, b in zip(tids, (*inputs, *outputs), strict=True) if tid not in homed)


def c_bytes(data: bytes) -> str:
    """Adjacent string literals of \\xHH escapes: compiles much faster than {0x.., ...}."""
    if not data:
        return '""'
    lines = []
    for i in range(0, len(data), _BYTES_PER_LINE):
        chunk = data[i : i + _BYTES_PER_LINE]
        lines.append('    "' + "".join(f"\\x{b:02x}" for b in chunk) + '"')
    return "\n".join(lines)


def render(cases: Iterable[GoldenCase], source: str, pool_bytes: int | None = None) -> str:
    """The C file of ``cases``; ``pool_bytes`` overrides the pool sized for every placement
    (a harness built GOLDEN_IN_PLACE_ONLY needs less)."""
    cases = list(cases)
    if not cases:
        raise ValueError("no golden cases to render")
    names = [c.name for c in cases]
    if len(set(names)) != len(names):
        raise ValueError("golden case names must be unique")
    env = rendering.environment(TEMPLATES)
    env.filters["c_bytes"] = c_bytes
    pool = pool_bytes or _align16(max(c.ram_bytes for c in cases) + 256)
    return env.get_template("golden_cases.c.j2").render(cases=cases, source=source,
                                                        pool_bytes=pool)


def factory_cases(seed: int = 0, *, mobilenet: bool = False) -> list[GoldenCase]:
    """The golden suite's cases (``devkit.payload_factory.all_cases``), optionally MobileNetV2."""
    from devkit.payload_factory import all_cases, mobilenet_v2_case

    src = list(all_cases(seed))
    if mobilenet:
        src.append(mobilenet_v2_case())
    return [make_case(c.name, c.payload, c.inputs) for c in src]
