"""The ExecuTorch runtime a firmware compiles from ExecuTorch's sources, as listed in the one
list ``espnn_component/cmake/executorch_runtime.cmake``.

That file is plain CMake (``set()`` commands and comments only), so an ESP-IDF component
``include()``s it; this module reads the same file for Python builds (SCons, the emulated
firmware driver).  It needs nothing but the standard library, so SCons can import it without
torch or numpy::

    from executorch_espnn import runtime_sources as rs
    lists = rs.load()                              # the lists, paths relative to a tree
    tree = rs.find_trees()                         # $EXECUTORCH_SOURCE_DIR, $FLATBUFFERS_SOURCE_DIR
    srcs = tree.paths(lists.runtime_srcs)          # absolute paths, checked to exist
    kernels = lists.kernel_sources(["aten::abs.out", "quantized_decomposed::quantize_per_tensor.out"])
    cmd = rs.flatc_command(lists, tree, rs.find_flatc(), out_dir)   # the schema headers

See docs/component.md ("The ExecuTorch runtime from sources").
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from . import compat, resources
from .errors import EspNNError, RuntimeSourcesError

EXECUTORCH_SOURCE_ENV = "EXECUTORCH_SOURCE_DIR"
FLATBUFFERS_SOURCE_ENV = "FLATBUFFERS_SOURCE_DIR"
COMPONENT_ENV = "ESPNN_COMPONENT_DIR"  # as executorch_espnn.host reads it
LIST_NAME = "executorch_runtime.cmake"

# variable -> kind: "list" (any number of words), "one" (exactly one word), "map" (key=value words)
_VARIABLES = {
    "EXECUTORCH_RUNTIME_SRCS": "list",
    "EXECUTORCH_RUNTIME_HEADER_ONLY": "list",
    "EXECUTORCH_RUNTIME_INCLUDE_DIRS": "list",
    "EXECUTORCH_PUBLIC_DEFINES": "list",
    "EXECUTORCH_RUNTIME_DEFINES": "list",
    "EXECUTORCH_SCHEMA_SRCS": "list",
    "EXECUTORCH_SCHEMA_FLATC_ARGS": "list",
    "EXECUTORCH_SCHEMA_INCLUDE_SUBDIR": "one",
    "EXECUTORCH_FLATBUFFERS_VERSION": "one",
    "EXECUTORCH_FLATBUFFERS_INCLUDE_DIR": "one",
    "EXECUTORCH_KERNEL_DIRS": "map",
    "EXECUTORCH_KERNEL_SOURCE_OVERRIDES": "map",
    "EXECUTORCH_KERNEL_SUPPORT_SRCS": "list",
}
_SET = re.compile(r"set\(\s*([A-Za-z_][A-Za-z0-9_]*)((?:\s+[^\s()]+)*)\s*\)", re.S)
_WORD = re.compile(r"^[A-Za-z0-9_.+/=:-]+$")
_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def default_list_file() -> Path:
    """The list in the package's ``espnn_component`` (or ``$ESPNN_COMPONENT_DIR``)."""
    env = os.environ.get(COMPONENT_ENV)
    component = Path(env) if env else resources.component_dir()
    return component / "cmake" / LIST_NAME


def parse_cmake_sets(
    text: str,
    where: str,
    *,
    variables: Mapping[str, str] | None = None,
    error: type[EspNNError] = RuntimeSourcesError,
) -> dict[str, tuple[str, ...]]:
    """The ``set(NAME word ...)`` commands of ``text``; anything else (other commands, quotes,
    variable references, a NAME set twice) is refused, so CMake and Python never disagree.

    With ``variables`` (e.g. ``CMAKE_CURRENT_LIST_DIR``), a word may also hold ``${NAME}`` of
    one of them or of a one-word NAME set above it, substituted as CMake would: the component's
    lists name their files relative to the list's own folder (component_sources)."""
    values: dict[str, tuple[str, ...]] = {}
    code = re.sub(r"#[^\n]*", "", text)
    pos = 0
    for m in _SET.finditer(code):
        stray = code[pos : m.start()].strip()
        if stray:
            raise error(
                f"{where}: only set(NAME word ...) commands and comments may appear, found "
                f"{stray.splitlines()[0][:60]!r}; keep the list plain so CMake and Python read "
                "the same values"
            )
        name, words = m[1], tuple(m[2].split())
        if variables is not None:
            known = {**variables, **{n: v[0] for n, v in values.items() if len(v) == 1}}
            words = tuple(_substitute(w, known, name, where, error) for w in words)
        else:
            bad = [w for w in words if not _WORD.match(w)]
            if bad:
                raise error(
                    f"{where}: set({name} ...) has {bad[0]!r}; use plain words (no quotes, no "
                    "${...} references, no ';')"
                )
        if name in values:
            raise error(f"{where}: {name} is set twice; set each list once")
        values[name] = words
        pos = m.end()
    if code[pos:].strip():
        raise error(
            f"{where}: only set(NAME word ...) commands and comments may appear, found "
            f"{code[pos:].strip().splitlines()[0][:60]!r}"
        )
    return values


def _substitute(
    word: str, known: Mapping[str, str], name: str, where: str, error: type[EspNNError]
) -> str:
    """``word`` with each ``${NAME}`` replaced; the rest of it must be a plain word."""
    unknown = [r for r in _REF.findall(word) if r not in known]
    if unknown:
        raise error(
            f"{where}: set({name} ...) uses ${{{unknown[0]}}}, which is not set above it in this "
            f"file (known: {', '.join(sorted(known))}); set it first or write the path out"
        )
    rest = _REF.sub("", word)
    if rest and not _WORD.match(rest):
        raise error(
            f"{where}: set({name} ...) has {word!r}; use plain words (no quotes, no ';', "
            "references only to variables set above)"
        )
    return _REF.sub(lambda m: known[m[1]], word)


def _mapping(name: str, words: Sequence[str], where: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for w in words:
        key, sep, value = w.partition("=")
        if not sep or not key or not value:
            raise RuntimeSourcesError(f"{where}: {name} entry {w!r} is not key=value")
        if key in out:
            raise RuntimeSourcesError(f"{where}: {name} lists {key} twice")
        out[key] = value
    return out


@dataclass(frozen=True)
class RuntimeSources:
    """The lists of ``executorch_runtime.cmake``; every path is relative to an ExecuTorch tree
    (``flatbuffers_include_dir``: to a flatbuffers tree)."""

    runtime_srcs: tuple[str, ...]
    header_only: tuple[str, ...]
    include_dirs: tuple[str, ...]
    public_defines: tuple[str, ...]
    runtime_defines: tuple[str, ...]
    schema_srcs: tuple[str, ...]
    flatc_args: tuple[str, ...]
    schema_include_subdir: str
    flatbuffers_version: str
    flatbuffers_include_dir: str
    kernel_dirs: Mapping[str, str]
    kernel_overrides: Mapping[str, str]
    kernel_support_srcs: tuple[str, ...]

    def schema_headers(self) -> tuple[str, ...]:
        """What flatc writes, relative to the generated include dir."""
        return tuple(
            f"{self.schema_include_subdir}/{Path(s).stem}_generated.h" for s in self.schema_srcs
        )

    def kernel_source(self, operator: str) -> str:
        """The source of one operator's CPU kernel: ``aten::abs.out`` ->
        ``kernels/portable/cpu/op_abs.cpp`` (the rule and exceptions of the list file)."""
        namespace, sep, rest = operator.partition("::")
        if not sep:
            namespace, rest = "aten", operator
        name = rest.split(".", 1)[0]
        if not name:
            raise RuntimeSourcesError(f"{operator!r} is not an operator name (namespace::name.overload)")
        key = f"{namespace}::{name}"
        if key in self.kernel_overrides:
            return self.kernel_overrides[key]
        if namespace not in self.kernel_dirs:
            raise RuntimeSourcesError(
                f"no kernel source is listed for {operator}: ExecuTorch namespace {namespace!r} "
                f"has no kernel folder in {LIST_NAME} (known: {', '.join(sorted(self.kernel_dirs))}); "
                "a firmware cannot run this operator on its CPU"
            )
        return f"{self.kernel_dirs[namespace]}/op_{name}.cpp"

    def kernel_sources(self, operators: Iterable[str]) -> tuple[str, ...]:
        """The kernel sources of ``operators`` (sorted, each once); the support sources are
        ``kernel_support_srcs``."""
        return tuple(sorted({self.kernel_source(op) for op in operators}))


def load(path: Path | None = None) -> RuntimeSources:
    """Read the list file (default: :func:`default_list_file`)."""
    path = path or default_list_file()
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise RuntimeSourcesError(
            f"cannot read the ExecuTorch runtime source list {path}: {exc}; set "
            f"{COMPONENT_ENV} to the espnn_component folder of an executorch-espnn checkout"
        ) from exc
    where = str(path)
    values = parse_cmake_sets(text, where)
    unknown = sorted(set(values) - set(_VARIABLES))
    missing = sorted(set(_VARIABLES) - set(values))
    if unknown or missing:
        raise RuntimeSourcesError(
            f"{where}: "
            + "; ".join(
                part
                for part in (
                    f"unknown variables {', '.join(unknown)}" if unknown else "",
                    f"missing variables {', '.join(missing)}" if missing else "",
                )
                if part
            )
            + f" (this reader knows {', '.join(_VARIABLES)})"
        )
    for name, kind in _VARIABLES.items():
        if kind == "one" and len(values[name]) != 1:
            raise RuntimeSourcesError(f"{where}: {name} must have exactly one value")
    return RuntimeSources(
        runtime_srcs=values["EXECUTORCH_RUNTIME_SRCS"],
        header_only=values["EXECUTORCH_RUNTIME_HEADER_ONLY"],
        include_dirs=values["EXECUTORCH_RUNTIME_INCLUDE_DIRS"],
        public_defines=values["EXECUTORCH_PUBLIC_DEFINES"],
        runtime_defines=values["EXECUTORCH_RUNTIME_DEFINES"],
        schema_srcs=values["EXECUTORCH_SCHEMA_SRCS"],
        flatc_args=values["EXECUTORCH_SCHEMA_FLATC_ARGS"],
        schema_include_subdir=values["EXECUTORCH_SCHEMA_INCLUDE_SUBDIR"][0],
        flatbuffers_version=values["EXECUTORCH_FLATBUFFERS_VERSION"][0],
        flatbuffers_include_dir=values["EXECUTORCH_FLATBUFFERS_INCLUDE_DIR"][0],
        kernel_dirs=_mapping("EXECUTORCH_KERNEL_DIRS", values["EXECUTORCH_KERNEL_DIRS"], where),
        kernel_overrides=_mapping(
            "EXECUTORCH_KERNEL_SOURCE_OVERRIDES", values["EXECUTORCH_KERNEL_SOURCE_OVERRIDES"], where
        ),
        kernel_support_srcs=values["EXECUTORCH_KERNEL_SUPPORT_SRCS"],
    )


# --- source trees -----------------------------------------------------------------------------

_FB_VERSION = re.compile(r"#define\s+FLATBUFFERS_VERSION_(MAJOR|MINOR|REVISION)\s+(\d+)")


def how_to_set() -> str:
    """The sentence a skipped test or a failed build prints: exactly what to set."""
    return (
        f"set {EXECUTORCH_SOURCE_ENV} to a pytorch/executorch source tree (its runtime/, "
        f"kernels/, schema/ and extension/data_loader/ folders) and {FLATBUFFERS_SOURCE_ENV} to "
        "a google/flatbuffers source tree at v24.3.25 (its include/ folder)"
    )


@dataclass(frozen=True)
class SourceTrees:
    """An ExecuTorch source tree and the flatbuffers include dir a firmware build uses."""

    executorch: Path
    flatbuffers_include: Path

    def paths(self, relative: Iterable[str]) -> list[Path]:
        """Absolute paths into the ExecuTorch tree; RuntimeSourcesError names what is missing."""
        out = [self.executorch / r for r in relative]
        missing = [str(p.relative_to(self.executorch)) for p in out if not p.is_file()]
        if missing:
            raise RuntimeSourcesError(
                f"the ExecuTorch tree {self.executorch} lacks {', '.join(missing[:5])}"
                + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
                + f"; {EXECUTORCH_SOURCE_ENV} must name a pytorch/executorch source tree of the "
                "release the executorch wheel was built from"
            )
        return out

    def flatbuffers_version(self) -> str:
        base = self.flatbuffers_include / "flatbuffers" / "base.h"
        try:
            parts = dict(_FB_VERSION.findall(base.read_text(encoding="utf-8", errors="replace")))
        except OSError as exc:
            raise RuntimeSourcesError(
                f"{base} is missing: {FLATBUFFERS_SOURCE_ENV} must name a google/flatbuffers "
                "source tree (with include/flatbuffers/)"
            ) from exc
        if set(parts) != {"MAJOR", "MINOR", "REVISION"}:
            raise RuntimeSourcesError(f"{base} does not define FLATBUFFERS_VERSION_MAJOR/MINOR/REVISION")
        return f"{parts['MAJOR']}.{parts['MINOR']}.{parts['REVISION']}"


def find_trees(lists: RuntimeSources | None = None, env: Mapping[str, str] | None = None) -> SourceTrees:
    """The trees named by $EXECUTORCH_SOURCE_DIR and $FLATBUFFERS_SOURCE_DIR, checked: the
    runtime sources and schema files exist and flatbuffers is the listed version."""
    env = os.environ if env is None else env
    lists = lists or load()
    et, fb = env.get(EXECUTORCH_SOURCE_ENV), env.get(FLATBUFFERS_SOURCE_ENV)
    if not et or not fb:
        unset = [n for n, v in ((EXECUTORCH_SOURCE_ENV, et), (FLATBUFFERS_SOURCE_ENV, fb)) if not v]
        raise RuntimeSourcesError(f"{' and '.join(unset)} not set: {how_to_set()}")
    trees = SourceTrees(Path(et).resolve(), (Path(fb) / lists.flatbuffers_include_dir).resolve())
    trees.paths([*lists.runtime_srcs, *lists.header_only, *lists.schema_srcs])
    got = trees.flatbuffers_version()
    if got != lists.flatbuffers_version:
        raise RuntimeSourcesError(
            f"{FLATBUFFERS_SOURCE_ENV}={fb} holds flatbuffers {got}; the schema headers generated "
            f"by the executorch wheel's flatc need {lists.flatbuffers_version}: check out tag "
            f"v{lists.flatbuffers_version}"
        )
    return trees


def find_flatc() -> Path:
    """The flatc the executorch wheel ships (the version its schema headers were made with)."""
    import executorch.version  # executorch is a namespace package: no executorch.__file__

    flatc = Path(executorch.version.__file__).resolve().parent / "data" / "bin" / "flatc"
    if not flatc.is_file():
        raise RuntimeSourcesError(
            f"{flatc} is missing: reinstall the executorch wheel (pip install {compat.EXECUTORCH.requirement}), "
            "which ships flatc"
        )
    return flatc


def schema_dir(lists: RuntimeSources, trees: SourceTrees) -> Path:
    """The working directory of :func:`flatc_command`: the folder of the schema files."""
    parents = {Path(s).parent for s in lists.schema_srcs}
    if len(parents) != 1:
        raise RuntimeSourcesError(
            f"the schema files {', '.join(lists.schema_srcs)} must share one folder (flatc runs there)"
        )
    return trees.executorch / parents.pop()


def flatc_command(lists: RuntimeSources, trees: SourceTrees, flatc: Path, out_dir: Path) -> list[str]:
    """The command that writes the schema headers under ``out_dir`` (then an include dir); run
    it in :func:`schema_dir`, as ExecuTorch's CMake does."""
    files = [Path(s).name for s in lists.schema_srcs]
    schema_dir(lists, trees)  # one folder, or a clear error
    return [str(flatc), *lists.flatc_args, "-o", str(out_dir / lists.schema_include_subdir), *files]
