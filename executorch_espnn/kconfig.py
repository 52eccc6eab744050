"""Resolve the component's Kconfig outside ESP-IDF (Arduino and host builds).

ESP-IDF reads ``espnn_component/Kconfig`` itself (menuconfig, ``sdkconfig.h``).  Everywhere
else the builder calls :func:`resolve` with the project's ``sdkconfig.defaults`` /
``sdkconfig.<env>`` files and :func:`render_header` to get the same ``CONFIG_ESPNN_ET_*`` macros
in ``espnn_sdkconfig.h``, so one Kconfig is the single source of the memory policy.

The component's Kconfig depends on ESP-IDF's ``SPIRAM``; :func:`standalone_kconfig` renders a
small wrapper that defines it and sources the component's Kconfig unchanged.  That wrapper is
also what kconfiglib's menuconfig should be pointed at for Arduino and host environments.
"""

from __future__ import annotations

import difflib
import re
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import kconfiglib

from . import rendering
from .errors import KconfigError

PREFIX = "ESPNN_ET_"
_ASSIGN = re.compile(r"^\s*CONFIG_(?P<name>[A-Za-z0-9_]+)=(?P<value>.*)$")
_SYMBOL_IN_WARNING = re.compile(r"\b(ESPNN_ET_\w+|SPIRAM)\b")

Value = str | int | bool


@dataclass(frozen=True)
class Assignment:
    """Where a CONFIG_ line of an sdkconfig file (or an override) set a symbol."""

    name: str  # without CONFIG_
    value: str
    origin: str  # "sdkconfig.defaults:3" or "overrides"


def _render(template: str, **context: object) -> str:
    folder = rendering.templates_dir() / "kconfig"
    if not folder.is_dir():
        raise KconfigError(
            f"the Kconfig templates are missing from {folder}; "
            "reinstall executorch-espnn from a complete checkout"
        )
    return rendering.render(f"kconfig/{template}", **context)


def standalone_kconfig(kconfig: Path, out_dir: Path, *, spiram_default: bool = False) -> Path:
    """Write ``Kconfig.standalone`` into out_dir: ESP-IDF's SPIRAM stand-in + the component's Kconfig.

    ``spiram_default`` is SPIRAM's default (True for a board with PSRAM), so kconfiglib's
    menuconfig on this file offers the PSRAM placements exactly when the board has PSRAM.
    """
    kconfig = Path(kconfig).resolve()
    if not kconfig.is_file():
        raise KconfigError(f"Kconfig file {kconfig} does not exist; pass espnn_component/Kconfig")
    if any(c in str(kconfig) for c in '"$'):
        raise KconfigError(
            f"Kconfig path {kconfig} contains '\"' or '$', which Kconfig's source statement "
            "cannot quote; move the component to a plainer path"
        )
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / "Kconfig.standalone"
    text = _render("Kconfig.standalone.j2", kconfig=kconfig.as_posix(), spiram_default=spiram_default)
    rendering.write_if_changed(out, text)
    return out


def _scan(path: Path) -> list[Assignment]:
    found = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        m = _ASSIGN.match(line)
        if m:
            found.append(Assignment(m["name"], m["value"].strip(), f"{path}:{lineno}"))
    return found


def _override_text(value: Value) -> str:
    if isinstance(value, bool):
        return "y" if value else "n"
    if isinstance(value, int):
        return str(value)
    return f'"{value}"'


def _typed(sym: kconfiglib.Symbol) -> Value:
    if sym.orig_type in (kconfiglib.BOOL, kconfiglib.TRISTATE):
        return bool(sym.tri_value)
    if sym.orig_type == kconfiglib.INT:
        return int(sym.str_value or "0")
    if sym.orig_type == kconfiglib.HEX:
        return int(sym.str_value or "0", 16)
    return str(sym.str_value)


def _refusal(sym: kconfiglib.Symbol, a: Assignment) -> str | None:
    """Why the value the user assigned did not take effect, or None when it did."""
    if sym.user_value is None:
        return None
    if sym.orig_type in (kconfiglib.BOOL, kconfiglib.TRISTATE):
        if sym.choice is not None:
            # Only the member assigned y last is the user's wish; it is refused when the
            # choice ended up selecting another member.
            if sym.choice.user_selection is not sym or sym.choice.selection is sym:
                return None
        elif sym.user_value == sym.tri_value:
            return None
        off = sorted(
            d.name
            for d in kconfiglib.expr_items(sym.direct_dep)
            if isinstance(d, kconfiglib.Symbol) and d.tri_value == 0
        )
        if off:
            needs = " and ".join(f"CONFIG_{n}" for n in off)
            return (
                f"it needs {needs}, which is off; set {needs.replace(' and ', '=y and ')}=y "
                "when the board has it, or choose another option"
            )
        return "it is not selectable in this configuration"
    if sym.orig_type in (kconfiglib.INT, kconfiglib.HEX):
        base = 16 if sym.orig_type == kconfiglib.HEX else 10
        try:
            if int(str(sym.user_value), base) == int(sym.str_value, base):
                return None
        except ValueError:
            return "it is not a number"
        ranges = [
            f"{kconfiglib.expr_str(lo)}..{kconfiglib.expr_str(hi)}"
            for lo, hi, cond in sym.ranges
            if kconfiglib.expr_value(cond)
        ]
        return f"it is outside the allowed range {', '.join(ranges) or '(none)'}"
    return None if sym.user_value == sym.str_value else "it was not accepted"


def resolve(
    kconfig: Path,
    sdkconfig_files: Sequence[Path],
    overrides: Mapping[str, Value] | None = None,
) -> dict[str, Value]:
    """Resolve every ``ESPNN_ET_*`` option.

    ``sdkconfig_files`` are read in order, later ones overriding earlier ones (as ESP-IDF reads
    ``sdkconfig.defaults`` then ``sdkconfig``); ``overrides`` (e.g. ``{"SPIRAM": True}`` from the
    board definition) come last.  Options of other components in those files are ignored.
    Returns ``{"CONFIG_ESPNN_ET_X": value}`` with bools as ``bool`` and ints as ``int``.

    Raises KconfigError for a missing file, an unknown ``CONFIG_ESPNN_ET_*`` name, a value the
    Kconfig refuses (e.g. a PSRAM placement without ``SPIRAM``, a number out of range), naming
    the file and line and what to change.
    """
    paths = [Path(p) for p in sdkconfig_files]
    for p in paths:
        if not p.is_file():
            raise KconfigError(f"sdkconfig file {p} does not exist")
    assigned: dict[str, Assignment] = {}
    for p in paths:
        for a in _scan(p):
            assigned[a.name] = a
    override_items = {k.removeprefix("CONFIG_"): v for k, v in (overrides or {}).items()}
    for name, value in override_items.items():
        assigned[name] = Assignment(name, _override_text(value), "overrides")

    with tempfile.TemporaryDirectory(prefix="espnn-kconfig-") as tmp:
        wrapper = standalone_kconfig(Path(kconfig), Path(tmp))
        try:
            kconf = kconfiglib.Kconfig(str(wrapper), warn_to_stderr=False)
        except kconfiglib.KconfigError as e:
            raise KconfigError(f"{kconfig} is not a valid Kconfig file: {e}") from e
        for w in kconf.warnings:
            raise KconfigError(f"{kconfig} loads with a warning: {w}")
        referenced: set[str] = set()
        for node in kconf.node_iter():
            if isinstance(node.item, kconfiglib.Symbol | kconfiglib.Choice):
                referenced.update(
                    r.name for r in node.item.referenced if isinstance(r, kconfiglib.Symbol)
                )
        undefined = sorted(
            n
            for n in referenced
            if n in kconf.syms and not kconf.syms[n].nodes and not _is_number(n)
        )
        if undefined:
            raise KconfigError(
                f"{kconfig} refers to symbols nothing defines: {', '.join(undefined)}"
            )

        for name, a in assigned.items():
            if name.startswith(PREFIX) and name not in kconf.syms:
                known = sorted(s for s in kconf.syms if s.startswith(PREFIX))
                near = difflib.get_close_matches(name, known, n=1)
                hint = (
                    f"did you mean CONFIG_{near[0]}?"
                    if near
                    else "known options: " + ", ".join(f"CONFIG_{k}" for k in known)
                )
                raise KconfigError(f"{a.origin}: unknown option CONFIG_{name}; {hint}")
        if override_items:
            unknown = [k for k in override_items if k not in kconf.syms]
            if unknown:
                raise KconfigError(
                    f"overrides name options the Kconfig does not define: {', '.join(unknown)}"
                )

        kconf.warn_assign_undef = False  # other components' options: ESP-IDF's business
        for i, p in enumerate(paths):
            kconf.load_config(str(p), replace=i == 0)
        for name, value in override_items.items():
            sym = kconf.syms[name]
            text = _override_text(value)
            if sym.orig_type == kconfiglib.STRING:
                text = str(value)
            sym.set_value(text)

        for w in kconf.warnings:
            m = _SYMBOL_IN_WARNING.search(w)
            if m is None:
                continue
            if ": warning: " in w:  # kconfiglib named the file and line itself
                raise KconfigError(w.replace("warning: ", "", 1))
            origin = assigned[m[1]].origin if m[1] in assigned else "sdkconfig"
            raise KconfigError(f"{origin}: {w.removeprefix('warning: ')}")
        for name, a in assigned.items():
            if name not in kconf.syms or not (name.startswith(PREFIX) or name == "SPIRAM"):
                continue
            why = _refusal(kconf.syms[name], a)
            if why is not None:
                raise KconfigError(f"{a.origin}: CONFIG_{name}={a.value} cannot be used: {why}")
        return {
            f"CONFIG_{name}": _typed(sym)
            for name, sym in sorted(kconf.syms.items())
            if name.startswith(PREFIX) and sym.orig_type != kconfiglib.UNKNOWN
        }


def _is_number(name: str) -> bool:
    # kconfiglib keeps numeric literals of ranges and defaults as undefined symbols
    try:
        int(name, 0)
    except ValueError:
        return False
    return True


def _macro_value(value: Value) -> str | None:
    if isinstance(value, bool):
        return "1" if value else None
    if isinstance(value, int):
        return str(value)
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def render_header(
    values: Mapping[str, Value],
    out: Path,
    *,
    kconfig: Path | None = None,
    sources: Sequence[Path] = (),
) -> Path:
    """Write an ``sdkconfig.h``-style header (``#define CONFIG_ESPNN_ET_X 1``) for ``values``.

    Only ``CONFIG_ESPNN_ET_*`` entries are written (the framework's own sdkconfig.h owns the
    rest); bools that are off are left undefined, as ESP-IDF does.  The file is rewritten only
    when its text changes, so a no-op build does not recompile.
    """
    macros: list[tuple[str, str]] = []
    for name in sorted(values):
        if not name.startswith("CONFIG_" + PREFIX):
            continue
        text = _macro_value(values[name])
        if text is not None:
            macros.append((name, text))
    if not macros:
        raise KconfigError("no CONFIG_ESPNN_ET_* values to write; pass the dict resolve() returned")
    text = _render(
        "espnn_sdkconfig.h.j2",
        macros=macros,
        kconfig=str(kconfig) if kconfig else "espnn_component/Kconfig",
        sources=[str(s) for s in sources],
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    rendering.write_if_changed(out, text)
    return out
