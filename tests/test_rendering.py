"""executorch_espnn.rendering: the one jinja2 configuration and the one template lookup."""

from __future__ import annotations

import re
from pathlib import Path

import jinja2
import pytest

from executorch_espnn import rendering

ROOT = Path(__file__).resolve().parents[1]


def test_no_other_module_configures_jinja2() -> None:
    """Every generated file goes through rendering.environment(): a second configuration
    would render the same template differently (trim_blocks, undefined names)."""
    pattern = re.compile(r"jinja2\.(Environment|FileSystemLoader)\(")
    offenders = [
        str(p.relative_to(ROOT))
        for folder in ("executorch_espnn", "builder", "benchmarks", "devkit", "emulated", "fuzz")
        for p in sorted((ROOT / folder).rglob("*.py"))
        if p.name != "rendering.py" and pattern.search(p.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_every_template_renders_through_the_one_lookup() -> None:
    names = sorted(p.relative_to(rendering.templates_dir()).as_posix()
                   for p in rendering.templates_dir().rglob("*.j2"))
    assert "model_pte.h.j2" in names and "kconfig/espnn_sdkconfig.h.j2" in names
    from executorch_espnn.payload import ctables

    env = rendering.environment()
    engine = ctables._environment()  # the one configuration plus the C tables' own filters
    for name in names:
        # parses: no template is written for another configuration's syntax
        (engine if name.startswith("engine/") else env).get_template(name)


def test_undefined_names_are_errors(tmp_path: Path) -> None:
    (tmp_path / "t.j2").write_text("{{ missing }}\n")
    with pytest.raises(jinja2.UndefinedError, match="missing"):
        rendering.environment(tmp_path).get_template("t.j2").render()


def test_block_tags_take_their_line_and_the_final_newline_stays(tmp_path: Path) -> None:
    (tmp_path / "t.j2").write_text("a\n  {% for x in xs %}\n{{ x }}\n  {% endfor %}\nb\n")
    assert rendering.environment(tmp_path).get_template("t.j2").render(xs=[1, 2]) == "a\n1\n2\nb\n"


def test_c_literals() -> None:
    assert rendering.c_string('a"b\\c') == '"a\\"b\\\\c"'
    assert rendering.c_float(0.5) == "0.5f"
    assert rendering.c_float(2.0) == "2.0f"
    assert rendering.c_float(1e-10) == "1e-10f"
    assert float(rendering.c_float(0.1)[:-1]) == 0.1  # shortest form that reads back exactly
    with pytest.raises(ValueError, match="non-finite"):
        rendering.c_float(float("inf"))


def test_write_if_changed_leaves_an_unchanged_file_alone(tmp_path: Path) -> None:
    path = tmp_path / "out.h"
    assert rendering.write_if_changed(path, "x\n")
    before = path.stat().st_mtime_ns
    assert not rendering.write_if_changed(path, "x\n")
    assert path.stat().st_mtime_ns == before
    assert rendering.write_if_changed(path, "y\n") and path.read_text() == "y\n"


def test_text_table_pads_columns_and_drops_trailing_blanks() -> None:
    from executorch_espnn.report.text import table

    assert table(["a", "bb", "c"], [["xxx", "y", ""], ["z", "", ""]]) == (
        "  a    bb  c\n"
        "  ---  --  -\n"
        "  xxx  y\n"
        "  z"
    )
    assert table(["only"], []) == "  only\n  ----"


def test_the_model_pte_initializer_lists_the_struct_fields_in_order() -> None:
    # the initializer is positional: a field added to espnn_pte_desc_t but not to the one list
    # both model_pte.h variants render would shift every later value into the wrong field
    header = (ROOT / "espnn_component/include/espnn_pte.h").read_text()
    body = header.split("typedef struct espnn_pte_desc {", 1)[1].split("} espnn_pte_desc_t;", 1)[0]
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    fields = [re.findall(r"\w+", decl)[-1] for decl in body.split(";") if decl.strip()]
    module = rendering.environment().get_template("model_pte_desc.j2").module
    assert list(module.FIELDS) == fields  # type: ignore[attr-defined]
    line = module.pte_desc({"n_inputs": "2"}, {"data": "why"})  # type: ignore[attr-defined]
    assert line.count(", /* ") == len(fields) and "    2, /* n_inputs */" in line and "0, /* data: why */" in line
