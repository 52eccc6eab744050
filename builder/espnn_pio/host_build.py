"""The host board's build: system compiler, the Arduino/ESP-IDF compatibility layer, and, when
the env names a model, the component (EspnnModel + delegate + engine + host ESP-NN kernels +
host memory policy) linked with the ExecuTorch runtime and kernels of the executorch wheel, or,
with `custom_executorch_runtime = source`, with those compiled from the pinned tree
(host_source.py, runtime_build.py: what an Arduino firmware links).

The component is compiled by its own CMake project (espnn_component/cmake/host.cmake, target
`espnn_model`), so its source lists have one home, through executorch_espnn.host.build, the
mechanism executorch_espnn.host's own library is built with (the same source hashing, cmake
lookup, lock and logged run).  The static library is cached per content key (component sources,
the env's CONFIG_ESPNN_ET_* macros, compiler, ExecuTorch), under
$ESPNN_CACHE_DIR/host-runtime/ (default ~/.cache/executorch-espnn/host-runtime/, next to
executorch_espnn.host's library), and shared by every project with the same configuration: a
second project or a no-op build costs a few file hashes, not a compile.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

COMPAT_DIR = ("espnn_component", "arduino_host")
LIB_TARGET = "espnn_model"
LIB_FILE = "libespnn_model.a"
_ET_LIBS = ("executorch", "executorch_kernels_optimized", "executorch_kernels_quantized")


class HostBuildFailure(Exception):
    """One line (plus the log path) for the build to print."""


def _fail(env: Any, message: str) -> None:
    sys.stderr.write(f"Error: {message}\n")
    env.Exit(1)


@dataclass(frozen=True)
class RuntimeBuild:
    component: Path
    config_header: Path | None  # the env's espnn_sdkconfig.h
    cache_root: Path
    executorch_dir: Path
    cc: str
    cxx: str

    def key(self) -> str:
        from executorch_espnn.host import build as hb

        h = hashlib.sha256()
        hb.hash_sources(h, self.component)
        if self.config_header is not None:
            # the macros only: the header's comment names the project's sdkconfig files, and
            # two projects with the same configuration share one library
            lines = self.config_header.read_text(encoding="utf8").splitlines()
            h.update("\n".join(ln for ln in lines if ln.startswith("#define")).encode())
        return hb.hash_parts(h, (self.cc, self.cxx, str(self.executorch_dir), _et_version(self.executorch_dir)))


def _et_version(et_dir: Path) -> str:
    vfile = et_dir / "version.py"
    return vfile.read_text(encoding="utf8") if vfile.is_file() else "unknown"


def build_runtime(rb: RuntimeBuild) -> Path:
    """The cached libespnn_model.a for this configuration, building it when missing."""
    from executorch_espnn.host import build as hb

    flags = f"-I{rb.config_header.parent}" if rb.config_header is not None else ""
    b = hb.CMakeBuild(
        source=rb.component,
        target=LIB_TARGET,
        artifact=LIB_FILE,
        what="host runtime",
        configure_args=("-DCMAKE_BUILD_TYPE=Release", f"-DCMAKE_PREFIX_PATH={rb.executorch_dir}",
                        f"-DCMAKE_C_FLAGS={flags}", f"-DCMAKE_CXX_FLAGS={flags}"),
        env={"CC": rb.cc, "CXX": rb.cxx},
        parallel=os.cpu_count() or 2,
        announce="Building the executorch-espnn host runtime (once per configuration)...",
    )
    return hb.build_cached(b, rb.cache_root, rb.key())


def _link_runtime(env: Any, root: Path) -> None:
    from executorch_espnn.host import build as hb

    kconf = env.get("ESPNN_KCONFIG")
    header = (kconf.out_dir / "espnn_sdkconfig.h") if kconf is not None else None
    et = hb.executorch_dir()
    rb = RuntimeBuild(
        component=root / "espnn_component",
        config_header=header if header is not None and header.is_file() else None,
        cache_root=hb.cache_dir() / "host-runtime",
        executorch_dir=et,
        cc=shutil.which("gcc") or "cc",
        cxx=shutil.which("g++") or "c++",
    )
    lib = build_runtime(rb)
    if env.get("ESPNN_KERNELS") is not None:  # custom_executorch_runtime = source
        from executorch_espnn.errors import RuntimeSourcesError

        from . import host_source, runtime_build

        try:
            host_source.link(env, root / "espnn_component", lib, pal_symbols(root / "espnn_component"))
        except RuntimeSourcesError as exc:
            raise HostBuildFailure(f"{exc}; {runtime_build.TREE_HINT}") from exc
        return
    libdir = et / "lib"
    env.Append(
        LIBPATH=[str(libdir)],
        # the kernel libraries register operators from static constructors: keep them even
        # though nothing references a symbol in them
        LINKFLAGS=["-Wl,--no-as-needed", f"-Wl,-rpath,{libdir}", "-pthread"]
        # the host PAL is an archive member nothing references; libexecutorch.so only has
        # weak defaults, so -u is what makes ours (stderr logging, the memory policy) win
        + [f"-Wl,-u,{sym}" for sym in pal_symbols(root / "espnn_component")],
    )
    env.Prepend(LIBS=[env.File(str(lib))])
    env.Append(LIBS=[*_ET_LIBS, "m", "dl"])


def pal_symbols(component: Path) -> list[str]:
    """ESPNN_PAL_SYMBOLS of pal/sources.cmake, the one list of the PAL's functions (read with
    component_sources, the reader of every source list)."""
    from executorch_espnn import component_sources
    from executorch_espnn.errors import ComponentSourcesError

    try:
        return list(component_sources.load(component).pal_symbols)
    except ComponentSourcesError as exc:
        raise HostBuildFailure(str(exc)) from exc


def configure(env: Any) -> None:
    platform = env.PioPlatform()
    root = Path(platform.get_dir())
    compat = root.joinpath(*COMPAT_DIR)
    component = root / "espnn_component"

    env.Append(
        CPPPATH=[str(compat), str(component / "include")],
        CFLAGS=["-std=gnu11"],
        CXXFLAGS=["-std=gnu++17"],
        CPPDEFINES=["ESPNN_HOST"],
    )
    frameworks = [f.strip().lower() for f in env.get("PIOFRAMEWORK", []) or []]
    if frameworks:
        env.BuildSources(str(Path(env.subst("$BUILD_DIR")) / "espnn_host"), str(compat))
    if env.get("ESPNN_MODEL_INFO") is None:
        return  # no model in this env: a plain sketch needs no runtime
    from executorch_espnn.errors import HostBuildError

    try:
        _link_runtime(env, root)
    except (HostBuildFailure, HostBuildError) as exc:
        _fail(env, str(exc))
