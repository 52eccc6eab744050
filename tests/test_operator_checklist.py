"""docs/adding-an-operator.md's checklist, opcode by opcode: every piece it names for a payload
opcode exists for each ``Opcode``.  A failure names the opcode, the step and the missing piece,
so a new opcode cannot land with a step forgotten (the other steps' tests are in the
checklist's last table)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from executorch_espnn import component_sources
from executorch_espnn.payload import decode
from executorch_espnn.payload.checks import CHECKS
from executorch_espnn.payload.format import OP_SPECS, Opcode
from executorch_espnn.reference import KERNELS

ROOT = Path(__file__).resolve().parents[1]
ENGINE = ROOT / "espnn_component" / "engine"
FAMILIES = "executorch_espnn.payload.families"


@cache
def _text(rel: str) -> str:
    path = ROOT / rel
    if path.is_dir():
        return "\n".join(p.read_text(encoding="utf-8") for p in sorted(path.glob("*.py")))
    return path.read_text(encoding="utf-8")


@cache
def _family_files() -> dict[str, Path]:
    """``espnn_family_<x>`` -> the engine/ops/*.c file defining it."""
    out: dict[str, Path] = {}
    for path in sorted((ENGINE / "ops").glob("*.c")):
        for name in re.findall(r"const espnn_op_family_t (espnn_family_\w+)\s*=", path.read_text(encoding="utf-8")):
            out[name] = path
    return out


def _c_file(op: Opcode) -> Path | None:
    return _family_files().get(f"espnn_family_{op.name.lower()}")


def _family(fn: Callable[..., None] | None, twin: str) -> str | None:
    """``<family>`` of a check or kernel defined in ``payload/families/<family>/<twin>.py``."""
    m = re.fullmatch(rf"{re.escape(FAMILIES)}\.(\w+)\.{twin}", getattr(fn, "__module__", ""))
    return m.group(1) if m else None


@cache
def _golden_opcodes() -> frozenset[Opcode]:
    from devkit.payload_factory import all_cases  # builds the cases with torch: only when asked

    return frozenset(op.opcode for case in all_cases() for op in decode(case.payload).ops)


def _table_rows(rel: str) -> list[str]:
    return [line for line in _text(rel).splitlines() if line.startswith("|")]


@dataclass(frozen=True)
class Piece:
    step: int
    what: str  # "{x}"/"{X}": the opcode's names, "{value}" its number, "{c}" its C file
    present: Callable[[Opcode], bool]


PIECES = (
    Piece(2, "an emit of Opcode.{X} by a lowering in executorch_espnn/ops/ (QUANTIZE and "
             "DEQUANTIZE: payload_builder.py, at a partition's boundary)",
          lambda op: f"Opcode.{op.name}" in _text("executorch_espnn/ops")
          or f"Opcode.{op.name}" in _text("executorch_espnn/payload_builder.py")),
    Piece(3, "its OpSpec in OP_SPECS of executorch_espnn/payload/format.py",
          lambda op: op in OP_SPECS),
    Piece(4, "ESPNN_OP_{X} in the generated espnn_component/engine/include/espnn_format.h",
          lambda op: re.search(rf"\bESPNN_OP_{op.name}\b", _text("espnn_component/engine/include/espnn_format.h"))
          is not None),
    Piece(4, "&espnn_family_{x} in the generated espnn_component/engine/src/registry.c",
          lambda op: f"&espnn_family_{op.name.lower()}" in _text("espnn_component/engine/src/registry.c")),
    Piece(5, "an espnn_component/engine/ops/*.c defining const espnn_op_family_t espnn_family_{x}",
          lambda op: _c_file(op) is not None),
    Piece(5, "engine/ops/{c} in ESPNN_ENGINE_SRCS of espnn_component/engine/sources.cmake",
          lambda op: (path := _c_file(op)) is not None
          and path.resolve() in {p.resolve() for p in component_sources.load().engine_srcs}),
    Piece(6, "ESPNN_FAMILY_STATE(<state type>, ESPNN_STATE_BYTES_{X}) in engine/ops/{c}",
          lambda op: (path := _c_file(op)) is not None
          and re.search(rf"ESPNN_FAMILY_STATE\(\s*\w+\s*,\s*ESPNN_STATE_BYTES_{op.name}\s*\)",
                        path.read_text(encoding="utf-8")) is not None),
    Piece(7, "a reference kernel @kernel(Opcode.{X}) in executorch_espnn/payload/families/<family>/reference.py",
          lambda op: _family(KERNELS.by_opcode.get(op), "reference") is not None),
    Piece(8, "a validator check @check(Opcode.{X}) in executorch_espnn/payload/families/<family>/check.py, "
             "the same <family> as its reference kernel's",
          lambda op: (fam := _family(CHECKS.by_opcode.get(op), "check")) is not None
          and fam == _family(KERNELS.by_opcode.get(op), "reference")),
    Piece(9, "a golden case using {X} in all_cases() of devkit/payload_factory.py",
          lambda op: op in _golden_opcodes()),
    Piece(12, "the operator table row '| {value} | {X} |' in docs/payload-format.md",
          lambda op: any(re.match(rf"\|\s*{int(op)}\s*\|\s*{op.name}\s*\|", r) for r in _table_rows("docs/payload-format.md"))),
    Piece(12, "the op's arithmetic, a '- **{X}**' paragraph, in docs/payload-format.md",
          lambda op: re.search(rf"^- \*\*{op.name}\*\*", _text("docs/payload-format.md"), re.M) is not None),
    Piece(12, "{X} in the kernel table of docs/engine.md",
          lambda op: any(re.search(rf"\b{op.name}\b", r) for r in _table_rows("docs/engine.md"))),
    Piece(12, "`{X}` in the operator table of docs/operators.md",
          lambda op: any(f"`{op.name}`" in r for r in _table_rows("docs/operators.md"))),
)


@pytest.mark.parametrize("op", list(Opcode), ids=lambda op: op.name)
def test_every_opcode_has_every_piece_the_checklist_names(op: Opcode) -> None:
    c = (path.name if (path := _c_file(op)) else f"{op.name.lower()}.c")
    missing = [f"step {p.step}: " + p.what.format(x=op.name.lower(), X=op.name, value=int(op), c=c)
               for p in PIECES if not p.present(op)]
    assert missing == [], (f"{op.name} lacks what docs/adding-an-operator.md asks of an opcode:\n  "
                           + "\n  ".join(missing))


def test_the_checklist_names_the_files_this_test_checks() -> None:
    """The steps numbered above are the checklist's: each piece's file is named in its step."""
    doc = _text("docs/adding-an-operator.md")
    steps = dict(re.findall(r"^(\d+)\. \*\*[^*]+\*\*(.*?)(?=^\d+\. \*\*|^\*\*|^## )", doc, re.M | re.S))
    names = {2: ("executorch_espnn/ops/", "payload_builder.py"),
             3: ("payload/format.py",), 4: ("include/espnn_format.h", "src/registry.c"),
             5: ("ops/x.c", "ESPNN_ENGINE_SRCS"), 6: ("ESPNN_FAMILY_STATE",),
             7: ("payload/families/<family>/reference.py",), 8: ("payload/families/<family>/check.py",),
             9: ("devkit/payload_factory.py", "all_cases"),
             12: ("docs/payload-format.md", "docs/engine.md", "docs/operators.md")}
    absent = {n: [s for s in want if s not in steps.get(str(n), "")] for n, want in names.items()}
    assert {n: a for n, a in absent.items() if a} == {}
    assert {p.step for p in PIECES} <= set(names)
