"""Cached compiling, archiving and linking of mixed C / C++ / assembly firmware for a target
record of ``emulated/targets.py``.

An object is cached under ``<cache>/obj/<k>/`` where ``k`` hashes the target record, the
compiler's version, the flags and the source (name and bytes).  Inside, ``manifest.json`` lists
the headers the compiler read (its ``-MD`` dependency file) and ``<d>.o`` is the object for the
content hash ``d`` of those headers: a change to any header (an ExecuTorch source tree
included, no directory list to maintain) recompiles, and a failed compile is never cached.
Archives and links are cached by the hash of their inputs.  The cache is
``$ESPNN_EMU_CACHE`` or ``<tmp>/executorch_espnn_emu`` (``targets.cache_dir``).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import tempfile
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from emulated import targets
from emulated.targets import Target

C_SUFFIXES = (".c",)
CXX_SUFFIXES = (".cpp", ".cc", ".cxx")
ASM_SUFFIXES = (".S",)
JOBS = 2  # the machines running this have two shared cores


@dataclass(frozen=True)
class Unit:
    """One source to compile: ``flags`` come after the target's own (standard, warnings,
    -D, -I/-isystem)."""

    source: Path
    flags: tuple[str, ...] = ()
    label: str = ""  # how messages name it (default: the source path)
    inputs: tuple[Path, ...] = ()  # files it reads that no #include names (.incbin)

    @property
    def name(self) -> str:
        return self.label or str(self.source)


class CompileError(RuntimeError):
    """A compile, archive or link step failed; ``output`` is the tool's own text."""

    def __init__(self, what: str, command: Sequence[str], output: str) -> None:
        super().__init__(f"{what} failed:\n{' '.join(command)}\n{output}")
        self.what = what
        self.command = list(command)
        self.output = output


def compiler_for(target: Target, source: Path) -> tuple[str, tuple[str, ...]]:
    """The compiler and the target's flags for one source, by its suffix."""
    if source.suffix in CXX_SUFFIXES:
        if not target.cxx:
            raise CompileError(f"{target.name}: {source.name}", [str(source)],
                               f"{target.name} has no C++ compiler (only cortex-m7 compiles C++)")
        return target.cxx, (*target.cflags, *target.cxxflags)
    if source.suffix in C_SUFFIXES or source.suffix in ASM_SUFFIXES:
        return target.cc, target.cflags
    raise CompileError(f"{target.name}: {source.name}", [str(source)],
                       f"do not know how to compile {source.suffix} files")


_HASHES: dict[tuple[str, int, int], str] = {}


def _file_hash(path: Path) -> str:
    st = path.stat()
    key = (str(path), st.st_mtime_ns, st.st_size)
    if key not in _HASHES:
        _HASHES[key] = hashlib.sha256(path.read_bytes()).hexdigest()
    return _HASHES[key]


def _obj_root() -> Path:
    root = targets.cache_dir() / "obj"
    root.mkdir(parents=True, exist_ok=True)
    return root


def _unit_key(target: Target, unit: Unit, cmd_prefix: Sequence[str]) -> str:
    h = hashlib.sha256()
    h.update(repr((target, list(cmd_prefix), targets.compiler_version(cmd_prefix[0]))).encode())
    for p in (unit.source, *unit.inputs):
        h.update(p.name.encode())
        h.update(_file_hash(p).encode())
    return h.hexdigest()[:20]


def _deps_key(deps: Iterable[str]) -> str | None:
    h = hashlib.sha256()
    for d in sorted(set(deps)):
        p = Path(d)
        if not p.is_file():
            return None  # a header went away: compile again
        h.update(d.encode())
        h.update(_file_hash(p).encode())
    return h.hexdigest()[:20]


def _parse_depfile(text: str) -> list[str]:
    body = text.split(":", 1)[1] if ":" in text else ""
    words = body.replace("\\\n", " ").split()
    return [w for w in words if w != "\\"][1:]  # the first word is the source itself


def _write_atomic(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".")
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    os.replace(tmp, path)  # concurrent sessions: each sees a whole file or none


def compile_unit(target: Target, unit: Unit) -> Path:
    """The object of ``unit`` (compiled, or from the cache); CompileError with the compiler's
    output when it fails."""
    cc, target_flags = compiler_for(target, unit.source)
    prefix = [cc, *target_flags, *unit.flags]
    key_dir = _obj_root() / _unit_key(target, unit, prefix)
    manifest = key_dir / "manifest.json"
    if manifest.is_file():
        deps = json.loads(manifest.read_text())["deps"]
        dk = _deps_key(deps)
        if dk is not None and (key_dir / f"{dk}.o").is_file():
            return key_dir / f"{dk}.o"
    key_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=key_dir) as tmp:
        obj, dep = Path(tmp) / "out.o", Path(tmp) / "out.d"
        cmd = [*prefix, "-MD", "-MF", str(dep), "-c", str(unit.source), "-o", str(obj)]
        r = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if r.returncode != 0:
            raise CompileError(f"{target.name}: compiling {unit.name}", cmd, r.stdout + r.stderr)
        deps = [str(Path(d).resolve()) for d in _parse_depfile(dep.read_text())]
        dk = _deps_key(deps)
        assert dk is not None, "the compiler named a header that does not exist"
        final = key_dir / f"{dk}.o"
        os.replace(obj, final)
        _write_atomic(manifest, json.dumps({"source": str(unit.source), "deps": deps}).encode())
    return final


def compile_units(target: Target, units: Sequence[Unit]) -> list[Path]:
    """Every unit's object, in order; the first failure (in order) is raised."""
    targets.require_tools(target, emulator=False)
    with ThreadPoolExecutor(max_workers=JOBS) as pool:
        futures = [pool.submit(compile_unit, target, u) for u in units]
        return [f.result() for f in futures]


def compile_report(target: Target, units: Sequence[Unit]) -> list[CompileError]:
    """Compile every unit and return every failure (empty: all compiled)."""
    targets.require_tools(target, emulator=False)

    def one(u: Unit) -> CompileError | None:
        try:
            compile_unit(target, u)
        except CompileError as exc:
            return exc
        return None

    with ThreadPoolExecutor(max_workers=JOBS) as pool:
        return [e for e in pool.map(one, units) if e is not None]


def _inputs_key(target: Target, inputs: Sequence[Path], flags: Sequence[str]) -> str:
    h = hashlib.sha256()
    h.update(repr((target, list(flags))).encode())
    for p in inputs:
        h.update(p.name.encode())
        h.update(_file_hash(p).encode())
    return h.hexdigest()[:16]


def archive(target: Target, objects: Sequence[Path], name: str) -> Path:
    """A static library of ``objects`` (the linker takes from it only what is referenced)."""
    out = targets.cache_dir() / f"lib{name}-{target.name}-{_inputs_key(target, objects, ())}.a"
    if out.is_file():
        return out
    with tempfile.TemporaryDirectory(dir=targets.cache_dir()) as tmp:
        lib = Path(tmp) / "lib.a"
        # member names must be unique for the linker to see every object
        staged = []
        for i, obj in enumerate(objects):
            dst = Path(tmp) / f"{i:03d}_{obj.parent.name}.o"
            dst.write_bytes(obj.read_bytes())
            staged.append(str(dst))
        cmd = [target.archiver, "rcs", str(lib), *staged]
        r = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if r.returncode != 0:
            raise CompileError(f"{target.name}: archiving {name}", cmd, r.stdout + r.stderr)
        os.replace(lib, out)
    return out


def link(target: Target, inputs: Sequence[Path], name: str, flags: Sequence[str] = ()) -> Path:
    """An ELF from objects and static libraries, with ``flags`` (e.g. ``-Wl,-u,<symbol>``)
    before them and the target's link flags after; the libraries form one group, so their
    order does not matter.  Linked by the C++ compiler when the target has a C++ library.  The linker
    map is next to the ELF (``.map``)."""
    targets.require_tools(target, emulator=False)
    linker = target.cxx if target.cxx and target.cxx_library else target.cc
    before = [*target.cflags, *(target.cxxflags if target.cxx else ()), *flags]
    out = targets.cache_dir() / f"{name}-{target.name}-{_inputs_key(target, inputs, before)}.elf"
    if out.is_file() and out.with_suffix(".map").is_file():
        return out
    objects = [str(p) for p in inputs if p.suffix != ".a"]
    libraries = [str(p) for p in inputs if p.suffix == ".a"]
    with tempfile.TemporaryDirectory(dir=targets.cache_dir()) as tmp:
        elf, map_file = Path(tmp) / "prog.elf", Path(tmp) / "prog.map"
        cmd = [linker, *before, *objects, "-Wl,--start-group", *libraries, "-Wl,--end-group",
               *target.ldflags, f"-Wl,-Map={map_file}", "-o", str(elf)]
        r = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if r.returncode != 0:
            raise CompileError(f"{target.name}: linking {name}", cmd, r.stdout + r.stderr)
        os.replace(map_file, out.with_suffix(".map"))
        os.replace(elf, out)
    return out
