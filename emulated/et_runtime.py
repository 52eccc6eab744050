"""ExecuTorch's runtime and CPU kernels compiled from an ExecuTorch source tree for an emulated
target, from the one source list (``espnn_component/cmake/executorch_runtime.cmake``, read by
``executorch_espnn.runtime_sources``).

The trees come from ``$EXECUTORCH_SOURCE_DIR`` and ``$FLATBUFFERS_SOURCE_DIR``
(``runtime_sources.find_trees``).  The schema headers are generated with the executorch wheel's
``flatc`` as ExecuTorch's CMake does; sources include ExecuTorch as ``<executorch/...>``, so a
staging folder holds a link named ``executorch`` to the tree, whatever the tree is called.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from emulated import build, targets
from emulated.build import Unit
from emulated.component import CXX_THIRD_PARTY, includes
from executorch_espnn import runtime_sources as rs


@dataclass(frozen=True)
class ExecutorchTree:
    """A prepared ExecuTorch tree: where its headers and generated schema headers are."""

    lists: rs.RuntimeSources
    trees: rs.SourceTrees
    stage: Path  # holds include/executorch -> the tree, and gen/ (the schema headers)

    @property
    def include_root(self) -> Path:
        return self.stage / "include"

    @property
    def schema_include(self) -> Path:
        return self.stage / "gen"

    def header_flags(self, *, system: bool = True) -> tuple[str, ...]:
        """What every source that includes ExecuTorch headers compiles with (ours too)."""
        dirs = [self.include_root, *(self.trees.executorch / d for d in self.lists.include_dirs),
                self.schema_include, self.trees.flatbuffers_include]
        return (*includes(*dirs, system=system),
                *(f"-D{d}" for d in self.lists.public_defines))

    def runtime_units(self, max_kernels: int, extra: Sequence[str] = ()) -> list[Unit]:
        """The runtime's sources, with its defines and a kernel table of ``max_kernels`` slots
        (``extra``: more flags, e.g. ``-DET_LOG_ENABLED=0``).  Only the source that reads
        MAX_KERNEL_NUM (the kernel registry) gets it, so a firmware with another kernel count
        recompiles one file, not the runtime."""
        flags = (*CXX_THIRD_PARTY, *self.header_flags(),
                 *(f"-D{d}" for d in self.lists.runtime_defines), *extra)
        table = f"-DMAX_KERNEL_NUM={max(1, max_kernels)}"
        return [Unit(p, (*flags, table) if "MAX_KERNEL_NUM" in p.read_text(errors="replace") else flags)
                for p in self.trees.paths(self.lists.runtime_srcs)]

    def kernel_units(self, operators: Iterable[str], extra: Sequence[str] = ()) -> list[Unit]:
        """The CPU kernels of ``operators`` and what they call (for one static library)."""
        flags = (*CXX_THIRD_PARTY, *self.header_flags(), *extra)
        rel = [*self.lists.kernel_sources(operators), *self.lists.kernel_support_srcs]
        return [Unit(p, flags) for p in self.trees.paths(rel)]


def _stage_key(lists: rs.RuntimeSources, trees: rs.SourceTrees, flatc: Path) -> str:
    h = hashlib.sha256()
    h.update(str(trees.executorch).encode())
    h.update(repr(lists.flatc_args).encode())
    h.update(hashlib.sha256(flatc.read_bytes()).digest())
    for p in trees.paths(lists.schema_srcs):
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


def prepare(trees: rs.SourceTrees | None = None) -> ExecutorchTree:
    """Stage the tree (the ``executorch`` link and the generated schema headers), once per
    tree and schema content.  RuntimeSourcesError says what to set when a tree is missing."""
    lists = rs.load()
    trees = trees or rs.find_trees(lists)
    flatc = rs.find_flatc()
    stage = targets.cache_dir() / f"et-tree-{_stage_key(lists, trees, flatc)}"
    if (stage / "done").is_file():
        return ExecutorchTree(lists, trees, stage)
    tmp = Path(tempfile.mkdtemp(prefix=stage.name + ".", dir=targets.cache_dir()))
    try:
        (tmp / "include").mkdir()
        os.symlink(trees.executorch, tmp / "include" / "executorch")
        cmd = rs.flatc_command(lists, trees, flatc, tmp / "gen")
        r = subprocess.run(cmd, cwd=rs.schema_dir(lists, trees), capture_output=True, text=True,
                           check=False)
        if r.returncode != 0:
            raise build.CompileError("generating the ExecuTorch schema headers", cmd,
                                     r.stdout + r.stderr)
        for header in lists.schema_headers():
            if not (tmp / "gen" / header).is_file():
                raise build.CompileError("generating the ExecuTorch schema headers", cmd,
                                         f"flatc wrote no {header}")
        (tmp / "done").write_text("")
        try:
            os.replace(tmp, stage)  # atomic: another session may have staged it meanwhile
        except OSError:
            if not (stage / "done").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return ExecutorchTree(lists, trees, stage)


def runtime_library(tree: ExecutorchTree, target: targets.Target, max_kernels: int,
                    extra: Sequence[str] = ()) -> Path:
    objs = build.compile_units(target, tree.runtime_units(max_kernels, extra))
    return build.archive(target, objs, f"executorch_runtime_k{max(1, max_kernels)}")


def kernels_library(tree: ExecutorchTree, target: targets.Target,
                    operators: Sequence[str], extra: Sequence[str] = ()) -> Path:
    objs = build.compile_units(target, tree.kernel_units(operators, extra))
    return build.archive(target, objs, "executorch_kernels")
