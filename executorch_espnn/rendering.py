"""The one way generated files are rendered: jinja2 with one configuration, templates found by
one lookup.

:func:`templates_dir` is the only code that knows where the templates are (it asks
:mod:`executorch_espnn.resources`, which finds them in the package, checkout or wheel alike).  :func:`environment` is the one configured environment: undefined
names are errors, block tags take their line with them (``trim_blocks``/``lstrip_blocks``), a
template's final newline is kept, nothing is HTML-escaped, and the C filters every generated
C file uses are registered.  Dev tools that keep their own templates beside them (emulated/,
benchmarks/) pass those folders as extra search paths; the package's templates stay visible,
so they can import its macros.

jinja2 is imported on first use, so importing this module costs nothing (the builder does, in
SCons, on every build).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import jinja2


def templates_dir() -> Path:
    """Where the project's templates are."""
    from . import resources

    return resources.templates_dir()


def c_string(s: str) -> str:
    """A C string literal of ``s``."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def c_float(x: float) -> str:
    """A C float literal of ``x`` in its shortest round-trip form."""
    text = repr(float(x))
    if "inf" in text or "nan" in text:
        raise ValueError(f"non-finite quantization scale {x}")
    if "." not in text and "e" not in text:
        text += ".0"
    return text + "f"


def column_widths(headers: list[str], rows: list[list[str]]) -> list[int]:
    """The width of each column of a text table (templates/text/table.j2): its widest cell."""
    return [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]


def environment(*search: Path) -> jinja2.Environment:
    """The configured environment over ``search`` (looked in first) and :func:`templates_dir`."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader([str(p) for p in (*search, templates_dir())]),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )
    env.filters["c_string"] = c_string
    env.filters["c_float"] = c_float
    env.globals["column_widths"] = column_widths
    return env


def render(template: str, /, **context: Any) -> str:
    """``template`` (a path under :func:`templates_dir`) rendered with ``context``."""
    text: str = environment().get_template(template).render(**context)
    return text


def write_if_changed(path: Path, text: str) -> bool:
    """Write ``text`` to ``path`` unless it already holds it, so that a no-op build recompiles
    nothing; True when it wrote."""
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return False
    path.write_text(text, encoding="utf-8")
    return True
