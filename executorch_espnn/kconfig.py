"""Resolve the component's Kconfig outside ESP-IDF (Arduino and host builds): the one home of
that resolution, of the header format and of the menuconfig setup.

ESP-IDF reads ``espnn_component/Kconfig`` itself (menuconfig, ``sdkconfig.h``).  Everywhere
else :func:`resolve` reads the project's ``sdkconfig.defaults`` / ``sdkconfig.<env>`` files and
:func:`render_header` writes the same ``CONFIG_ESPNN_ET_*`` macros into ``espnn_sdkconfig.h``,
so one Kconfig is the single source of the memory policy.

The component's Kconfig depends on ESP-IDF's ``SPIRAM``; :func:`standalone_kconfig` renders a
small wrapper that defines it and sources the component's Kconfig unchanged.  That wrapper is
also what kconfiglib's menuconfig is pointed at for Arduino and host environments
(:func:`menuconfig`).

The PlatformIO builder runs this module as a program (``python -m executorch_espnn.kconfig
header|menuconfig ...``, see :func:`main`), as it runs the lowering: SCons never imports
kconfiglib, and ``header`` reports every file it read, so the builder's no-op check hashes
exactly those instead of guessing where the package keeps them.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import subprocess
import sys
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
    return _resolve(kconfig, sdkconfig_files, overrides)[0]


def _resolve(
    kconfig: Path, sdkconfig_files: Sequence[Path], overrides: Mapping[str, Value] | None
) -> tuple[dict[str, Value], list[Path]]:
    """resolve(), and the Kconfig files it parsed (the component's and what it sources)."""
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
        values: dict[str, Value] = {
            f"CONFIG_{name}": _typed(sym)
            for name, sym in sorted(kconf.syms.items())
            if name.startswith(PREFIX) and sym.orig_type != kconfiglib.UNKNOWN
        }
        read = [Path(f).resolve() for f in kconf.kconfig_filenames]
        return values, [f for f in read if not f.is_relative_to(Path(tmp).resolve())]


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


def menuconfig(
    kconfig: Path,
    out_dir: Path,
    sdkconfig: Path,
    sdkconfig_files: Sequence[Path] = (),
    overrides: Mapping[str, Value] | None = None,
) -> int:
    """kconfiglib's menuconfig in this terminal over the component's Kconfig (through the
    standalone wrapper written into ``out_dir``), saved to ``sdkconfig``.  A new ``sdkconfig``
    starts from ``sdkconfig_files`` and ``overrides``, as ESP-IDF starts from sdkconfig.defaults.
    Returns menuconfig's exit status."""
    items = {k.removeprefix("CONFIG_"): v for k, v in (overrides or {}).items()}
    wrapper = standalone_kconfig(kconfig, out_dir, spiram_default=bool(items.get("SPIRAM", False)))
    if not sdkconfig.is_file():
        kconf = kconfiglib.Kconfig(str(wrapper), warn_to_stderr=False)
        kconf.warn_assign_undef = False
        for p in sdkconfig_files:
            kconf.load_config(str(p))
        for name, value in items.items():
            kconf.syms[name].set_value(_override_text(value) if not isinstance(value, str) else value)
        kconf.write_config(str(sdkconfig), save_old=False)
    env = dict(os.environ)
    env["KCONFIG_CONFIG"] = str(sdkconfig)
    env.setdefault("MENUCONFIG_STYLE", "aquatic")
    return subprocess.call([sys.executable, "-m", "menuconfig", str(wrapper)], env=env)


def inputs(kconfig_files: Sequence[Path], sdkconfig_files: Sequence[Path]) -> list[Path]:
    """Every file a resolution and its header depend on: the Kconfig files it parsed, the
    sdkconfig files, this module, the rendering helper and the templates."""
    here = Path(__file__).resolve()
    templates = sorted((rendering.templates_dir() / "kconfig").glob("*.j2"))
    return [*kconfig_files, *(Path(p).resolve() for p in sdkconfig_files), here,
            Path(rendering.__file__).resolve(), *templates]


def _setting(text: str) -> tuple[str, Value]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    if value in ("y", "n"):
        return name, value == "y"
    try:
        return name, int(value, 0)
    except ValueError:
        return name, value


def main(argv: Sequence[str] | None = None) -> int:
    """``header``: resolve, write the header, and write the values with every file read as
    JSON.  ``menuconfig``: run :func:`menuconfig`.  A failure prints one ``Error:`` line
    (the KconfigError message) and exits 2."""
    ap = argparse.ArgumentParser(prog="python -m executorch_espnn.kconfig", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    for name in ("header", "menuconfig"):
        cmd = sub.add_parser(name)
        cmd.add_argument("--kconfig", type=Path, required=True, help="espnn_component/Kconfig")
        cmd.add_argument("--config", type=Path, action="append", default=[],
                         help="an sdkconfig file, in the order read (repeatable)")
        cmd.add_argument("--set", type=_setting, action="append", default=[], metavar="NAME=VALUE",
                         help="an override applied last (y/n, a number or text; repeatable)")
        if name == "header":
            cmd.add_argument("--header", type=Path, required=True, help="the espnn_sdkconfig.h to write")
            cmd.add_argument("--json", type=Path, required=True, help="where to write values and inputs")
        else:
            cmd.add_argument("--out-dir", type=Path, required=True, help="where the wrapper goes")
            cmd.add_argument("--sdkconfig", type=Path, required=True, help="the file menuconfig saves")
    args = ap.parse_args(argv)
    overrides = dict(args.set)
    try:
        if args.command == "menuconfig":
            return menuconfig(args.kconfig, args.out_dir, args.sdkconfig, args.config, overrides)
        values, kconfig_files = _resolve(args.kconfig, args.config, overrides)
        render_header(values, args.header, kconfig=args.kconfig, sources=args.config)
    except KconfigError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 2
    args.json.parent.mkdir(parents=True, exist_ok=True)
    read = [str(p) for p in inputs(kconfig_files, args.config)]
    args.json.write_text(json.dumps({"values": values, "inputs": read}, sort_keys=True), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
