"""Generate the C engine's copy of the payload format from ``format.py``.

The opcodes, the parameter layouts and names of every opcode, the dtype sizes and the
format's limits are written once, in ``format.py``; ``espnn_component/engine/include/
espnn_format.h`` and ``espnn_component/engine/src/registry.c`` are rendered from it with the
jinja2 templates in ``templates/engine/`` and committed, so that ESP-IDF, Arduino and
bare-metal builds need no Python.  ``tests/test_payload_format.py`` fails while a committed
copy differs from what this module renders.

    python -m executorch_espnn.payload.ctables          # rewrite the generated files
    python -m executorch_espnn.payload.ctables --check  # exit 1 naming any stale file
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .. import rendering
from . import format as spec

if TYPE_CHECKING:
    import jinja2

ROOT = Path(__file__).resolve().parents[2]
COMMAND = "python -m executorch_espnn.payload.ctables"

# generated file (relative to the checkout) -> its template (relative to templates/)
GENERATED = {
    "espnn_component/engine/include/espnn_format.h": "engine/espnn_format.h.j2",
    "espnn_component/engine/src/registry.c": "engine/registry.c.j2",
}

_WIDTH = 96  # the engine's sources stay within 100 columns


@dataclass
class _ParamArray:
    name: str
    lines: list[str]
    opcodes: list[str]  # the opcodes whose layout it is


@dataclass(frozen=True)
class _Spec:
    name: str
    lines: list[str]  # its espnn_op_spec_t initializer (designated, zero fields left out)


def _hex(v: int) -> str:
    return f"0x{v:X}"


def _c_int(v: int) -> str:
    return f"({v})" if v < 0 else str(v)


def _pow2_long(v: int) -> str:
    if v <= 0 or v & (v - 1):
        raise ValueError(f"{v} is not a power of two")
    return f"(1L << {v.bit_length() - 1})"


def _mask(slots: Sequence[int]) -> str:
    """A bit per input slot, as a C constant."""
    bits = sum(1 << s for s in slots)
    return f"0x{bits:02X}u" if bits else "0"


def _wrap(words: Sequence[str], quote: bool = True) -> list[str]:
    """``words`` (as C string literals when ``quote``), comma-separated, in lines of at most
    _WIDTH columns once indented by 4."""
    lines: list[str] = []
    cur = ""
    for w in words:
        item = f'"{w}",' if quote else w
        if cur and len(cur) + 1 + len(item) > _WIDTH - 4:
            lines.append(cur)
            cur = item
        else:
            cur = f"{cur} {item}" if cur else item
    if cur:
        lines.append(cur)
    return lines


def _tables() -> tuple[list[_ParamArray], list[_Spec]]:
    """One parameter-name array per distinct layout (shared by the opcodes that have it) and
    one spec row per opcode."""
    arrays: dict[tuple[str, ...], _ParamArray] = {}
    specs: list[_Spec] = []
    for op in spec.Opcode:
        s = spec.OP_SPECS[op]
        params = "NULL"
        if s.params:
            if s.params not in arrays:
                arrays[s.params] = _ParamArray(f"p_{op.name.lower()}", _wrap(s.params), [])
            arrays[s.params].opcodes.append(op.name)
            params = arrays[s.params].name
        optional = () if s.variadic_inputs else tuple(k for k, n in enumerate(s.inputs) if n.endswith("?"))
        fields = {
            "name": f'"{op.name}"',
            "n_inputs": "0" if s.variadic_inputs else str(len(s.inputs)),  # 0: variadic
            "n_params": f"ESPNN_PARAMS_{op.name}",
            "optional_mask": _mask(optional),
            "in_place_mask": _mask(s.in_place_slots),
            "in_place_any_dims": str(int(s.in_place_any_dims)),
            "since_minor": str(s.since_minor),
            "params": params,
        }
        items = [f".{k} = {v}," for k, v in fields.items() if v not in ("0", "NULL") or k == "n_inputs"]
        specs.append(_Spec(op.name, _wrap(items, quote=False)))
    return list(arrays.values()), specs


def _environment() -> jinja2.Environment:
    # the project's one configuration (executorch_espnn.rendering), plus the C tables' filters
    env = rendering.environment()
    env.filters.update(hex=_hex, c_int=_c_int, pow2_long=_pow2_long)
    return env


def render() -> dict[str, str]:
    """Generated file (relative to the checkout) -> its text."""
    env = _environment()
    arrays, specs = _tables()
    context = {
        "f": spec,
        "opcodes": list(spec.Opcode),
        "op_count": max(spec.Opcode) + 1,
        "param_arrays": arrays,
        "specs": specs,
    }
    return {out: env.get_template(tpl).render(**context) for out, tpl in GENERATED.items()}


def stale(root: Path = ROOT) -> list[str]:
    """The generated files under ``root`` whose content is not what ``render`` gives."""
    out = []
    for rel, text in render().items():
        path = root / rel
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            out.append(rel)
    return out


def write(root: Path = ROOT) -> list[str]:
    """Rewrite the stale generated files under ``root``; returns them."""
    changed = stale(root)
    texts = render()
    for rel in changed:
        (root / rel).write_text(texts[rel], encoding="utf-8")
    return changed


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog=COMMAND, description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="only report stale files (exit 1 if any)")
    ap.add_argument("--root", type=Path, default=ROOT, help="the checkout (default: this one)")
    args = ap.parse_args(argv)
    if args.check:
        bad = stale(args.root)
        for rel in bad:
            print(f"{rel} is stale: it differs from what executorch_espnn/payload/format.py and "
                  f"templates/{GENERATED[rel]} give; run `{COMMAND}` and commit the result", file=sys.stderr)
        return 1 if bad else 0
    for rel in write(args.root):
        print(f"wrote {rel}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
