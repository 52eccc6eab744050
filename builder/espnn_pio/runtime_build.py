"""ExecuTorch's runtime compiled from its source tree inside a PlatformIO (SCons) build: Arduino on
ESP boards, and the host board with `custom_executorch_runtime = source`.

What it compiles is the one list, espnn_component/cmake/executorch_runtime.cmake, read with
executorch_espnn.runtime_sources (standard library only, so SCons imports it cheaply):

- the schema headers, generated under $BUILD_DIR/executorch_runtime/gen/ with the executorch
  wheel's flatc, run in the tree's schema folder as ExecuTorch's CMake does (an SCons command
  whose inputs are the .fbs files and the flatc path: it reruns only when they change);
- libexecutorch_runtime.a: EXECUTORCH_RUNTIME_SRCS with EXECUTORCH_RUNTIME_DEFINES; the kernel
  registry (the one source that reads MAX_KERNEL_NUM) gets a table of exactly the registered
  kernel count instead of ExecuTorch's 2000 slots (24 KB of RAM on a 32-bit chip);
- libexecutorch_kernels.a: the model's selected CPU kernels (kernel_step: portable/quantized
  sources of the tree), what they call (EXECUTORCH_KERNEL_SUPPORT_SRCS), and the generated
  registration.  Nothing references the registration, so the program links with
  `-u executorch_espnn_register_kernels`, which pulls it and, through it, only the selected
  kernels out of the archive;
- every source that includes ExecuTorch headers (the component, the sketch) gets the include
  dirs (the folder holding the tree as `executorch`, the list's dirs, the generated schema
  folder, the flatbuffers headers) and EXECUTORCH_PUBLIC_DEFINES;
- the log level of CONFIG_ESPNN_ET_LOG_LEVEL (Kconfig): "none" compiles the runtime and kernels
  with ET_LOG_ENABLED=0 (their log strings leave the firmware), the others set ET_MIN_LOG_LEVEL,
  the same filter the PAL applies at run time.

SCons's own dependency checks keep a no-op build one: objects depend on their sources, flags and
headers, the schema headers on the .fbs files and flatc.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from executorch_espnn.firmware.kernels import Kernels

LIST_FILE = ("cmake", "executorch_runtime.cmake")  # inside espnn_component
REGISTER_SYMBOL = "executorch_espnn_register_kernels"
RUNTIME_SUBDIR = "executorch_runtime"
KERNELS_SUBDIR = "executorch_kernels"
# CONFIG_ESPNN_ET_LOG_LEVEL -> ExecuTorch's compile-time filter (runtime/platform/log.h)
LOG_DEFINES: dict[int, tuple[str, ...]] = {
    0: ("ET_LOG_ENABLED=0",),
    1: ("ET_MIN_LOG_LEVEL=Error",),
    2: ("ET_MIN_LOG_LEVEL=Info",),
    3: ("ET_MIN_LOG_LEVEL=Debug",),
}
THIRD_PARTY_FLAGS = ("-w",)
# what a build that cannot use the named tree says to do (sources.py's options and variables)
TREE_HINT = ("name a complete pytorch/executorch tree at the wheel's commit with "
             "custom_executorch_runtime_dir (or EXECUTORCH_SOURCE_DIR), or unset both to download "
             "the pinned one")  # ExecuTorch's warnings are not ours to fix (emulated/ does the same)


def list_file(component: Path) -> Path:
    return component.joinpath(*LIST_FILE)


@dataclass(frozen=True)
class RuntimeTree:
    """The tree a build compiles the runtime from, checked, and where its headers are."""

    lists: Any  # executorch_espnn.runtime_sources.RuntimeSources
    trees: Any  # executorch_espnn.runtime_sources.SourceTrees
    include_root: Path  # holds the tree under the name `executorch`
    gen: Path  # the generated schema headers' include dir

    def include_dirs(self) -> list[Path]:
        return [self.include_root, *(self.trees.executorch / d for d in self.lists.include_dirs),
                self.gen, self.trees.flatbuffers_include]

    def schema_headers(self) -> list[Path]:
        return [self.gen / h for h in self.lists.schema_headers()]


def _include_root(tree: Path, given: str, stage: Path) -> Path:
    """A folder holding `tree` as `executorch` (sources say #include <executorch/...>): the
    given one (source_step: the tree's parent when the tree is named executorch) when it holds
    nothing else but hidden files, as the download cache's does; otherwise a link in the build folder, so that
    the tree's siblings (a user's other checkouts) never shadow a header."""
    if given and [p.name for p in Path(given).iterdir() if not p.name.startswith(".")] == [tree.name]:
        return Path(given)  # (hidden files, e.g. the cache's marker, hold no headers)
    link = stage / "executorch"
    try:
        if not (link.is_symlink() and Path(os.readlink(link)) == tree):
            stage.mkdir(parents=True, exist_ok=True)
            if link.is_symlink() or link.exists():
                link.unlink()
            os.symlink(tree, link, target_is_directory=True)
    except OSError as exc:  # e.g. Windows without the right to make links
        if given:
            return Path(given)
        from executorch_espnn.errors import RuntimeSourcesError

        raise RuntimeSourcesError(
            f"cannot link {link} to the ExecuTorch tree {tree} ({exc.strerror}); name a tree "
            "whose folder is called `executorch`") from exc
    return stage


def resolve(component: Path, et_dir: Path, et_include_root: str, fb_include: Path,
            build_dir: Path, kernels: Kernels) -> RuntimeTree:
    """The checked tree; RuntimeSourcesError names a missing file or a wrong flatbuffers."""
    from executorch_espnn import runtime_sources as rs
    from executorch_espnn.errors import RuntimeSourcesError

    lists = rs.load(list_file(component))
    trees = rs.SourceTrees(et_dir.resolve(), fb_include.resolve())
    needed = [*lists.runtime_srcs, *lists.header_only, *lists.schema_srcs]
    if kernels.sources:
        needed += [*kernels.sources, *lists.kernel_support_srcs]
    trees.paths(needed)
    found = trees.flatbuffers_version()
    if found != lists.flatbuffers_version:
        raise RuntimeSourcesError(
            f"the flatbuffers headers {fb_include} are {found}; the schema headers the executorch "
            f"wheel's flatc writes need {lists.flatbuffers_version} (ExecuTorch's pin)")
    stage = build_dir / RUNTIME_SUBDIR
    root = _include_root(trees.executorch, et_include_root, stage / "include")
    return RuntimeTree(lists, trees, root, stage / "gen")


def _schema_action(rt: RuntimeTree, flatc: Path) -> Any:
    from executorch_espnn import runtime_sources as rs

    cmd = rs.flatc_command(rt.lists, rt.trees, flatc, rt.gen)
    cwd = rs.schema_dir(rt.lists, rt.trees)

    def action(target: Any, source: Any, env: Any) -> int:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            print(f"Error: generating the ExecuTorch schema headers failed: {' '.join(cmd)}\n"
                  f"{proc.stdout}{proc.stderr}")
        return proc.returncode

    return action


def _objects(env: Any, root: Path, relative: Sequence[str], subdir: str) -> list[Any]:
    # one object per source named after its whole relative path: several ExecuTorch folders
    # hold files of the same name
    return [env.Object(f"$BUILD_DIR/{subdir}/{rel}.o", str(root / rel)) for rel in relative]


def add(env: Any, rt: RuntimeTree, kernels: Kernels, flatc: Path, log_level: int) -> list[Any]:
    """Add the runtime and kernel libraries to `env` (LIBS, the -u rule, include dirs,
    defines); returns the two library nodes."""
    lists = rt.lists
    env.Append(CPPPATH=[str(d) for d in rt.include_dirs()],
               CPPDEFINES=list(lists.public_defines))
    schema = env.Command([str(h) for h in rt.schema_headers()],
                         [str(rt.trees.executorch / s) for s in lists.schema_srcs]
                         + [env.Value(str(flatc)), env.Value(" ".join(lists.flatc_args))],
                         env.Action(_schema_action(rt, flatc),
                                    "Generating the ExecuTorch schema headers"))

    third = env.Clone()
    third.Append(CCFLAGS=list(THIRD_PARTY_FLAGS), CPPDEFINES=list(LOG_DEFINES.get(log_level, ())))
    runtime_env = third.Clone()
    runtime_env.Append(CPPDEFINES=list(lists.runtime_defines))
    registry_env = runtime_env.Clone()
    registry_env.Append(CPPDEFINES=[f"MAX_KERNEL_NUM={max(1, kernels.registered)}"])
    et = rt.trees.executorch
    objects = []
    for rel in lists.runtime_srcs:
        reads_table = "MAX_KERNEL_NUM" in (et / rel).read_text(encoding="utf8", errors="replace")
        objects += _objects(registry_env if reads_table else runtime_env, et, [rel], RUNTIME_SUBDIR)
    env.Depends(objects, schema)
    runtime_lib = runtime_env.BuildLibrary(f"$BUILD_DIR/{RUNTIME_SUBDIR}", str(et), nodes=objects)

    kernel_rel = [*kernels.sources, *lists.kernel_support_srcs] if kernels.sources else []
    kernel_objs = _objects(third, et, kernel_rel, KERNELS_SUBDIR)
    reg_env = third.Clone()
    reg_env.Append(CPPPATH=[str(kernels.dir)])
    kernel_objs.append(reg_env.Object(f"$BUILD_DIR/{KERNELS_SUBDIR}/registration.o",
                                      str(kernels.registration)))
    env.Depends(kernel_objs, schema)
    kernels_lib = third.BuildLibrary(f"$BUILD_DIR/{KERNELS_SUBDIR}", str(et), nodes=kernel_objs)

    # the registration before the kernels before the runtime: each references the next
    env.Append(LIBS=[kernels_lib, runtime_lib], LINKFLAGS=[f"-Wl,-u,{REGISTER_SYMBOL}"])
    return [kernels_lib, runtime_lib]


def log_level(env: Any) -> int:
    """CONFIG_ESPNN_ET_LOG_LEVEL of the env's Kconfig (the default, Info, without one)."""
    kconf = env.get("ESPNN_KCONFIG")
    value = kconf.values().get("CONFIG_ESPNN_ET_LOG_LEVEL", 2) if kconf is not None else 2
    return int(value)
