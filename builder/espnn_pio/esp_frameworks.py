"""Our additions to espressif32's framework scripts for real boards.

espidf: espnn_component, ExecuTorch's runtime from the pinned tree (the component `executorch`,
generated under $BUILD_DIR/executorch/components/executorch) and the generated model
($BUILD_DIR/executorch/espnn_model) become ESP-IDF components, through the
`EXTRA_COMPONENT_DIRS` that espressif32's espidf.py passes to
CMake.  It builds that list itself (the project's src folder, plus Arduino for
"arduino, espidf") and lets the board's `build.cmake_extra_args` follow it on the command line;
CMake keeps the last definition, so we repeat its entries and add ours.  ESP-IDF then reads the
component's Kconfig (menuconfig, sdkconfig.h) and its idf_component.yml: ESP-IDF's component
manager fetches espressif/esp-nn, unless the user named an ESP-NN tree
(custom_executorch_espnn_dir / ESPNN_ESP_NN_DIR), which then is the component `esp-nn` and the
manifest asks the registry for nothing.  The pinned source trees (source_step) reach CMake
written into the generated `executorch` component's CMakeLists (idf_runtime_folder), the only
place that reads them.

arduino: the component is compiled as a library with the Kconfig-resolved macros
(espnn_sdkconfig.h, see kconfig_glue) against the real ESP-NN: the pinned ESP-NN tree compiled
as a library of its own with the sources ESP-NN's build selects for the chip (esp_nn_sources),
never the component's host_espnn/ twin; ExecuTorch's runtime and the model's kernels from the
pinned ExecuTorch tree as two more (runtime_build).

Neither can be compiled here (no ESP toolchain); tests check the hand-off with a stand-in base.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from executorch_espnn.firmware import esp_nn_sources, sources
from executorch_espnn.firmware.render import GENERATED_SUBDIR

from . import source_step


def arduino_src_filter(comp: Path) -> list[str]:
    """The component's sources for an Arduino build (the ESP-IDF build includes the same CMake
    lists), read from them so a new source cannot be missed: what enters a firmware, so not
    host_espnn/ (the host twin of ESP-NN's API), the ESP-IDF memory world, and the PAL apart
    (an object of its own, see add_component_library)."""
    from executorch_espnn import component_sources

    lists = component_sources.load(comp)
    files = [*lists.adapter_sources, *lists.model_sources, *lists.mem_idf_sources,
             *lists.engine_srcs]
    return [f"+<{rel}>" for rel in lists.relative(files)]


def arduino_include_dirs(comp: Path) -> list[str]:
    """The component's include dirs for an Arduino build, relative to it, in search order."""
    from executorch_espnn import component_sources

    lists = component_sources.load(comp)
    return ["include", *lists.relative(lists.engine_include_dirs),
            *lists.relative(lists.engine_priv_include_dirs), "adapter",
            *lists.relative(lists.mem_private_include_dirs)]


# ExecuTorch's headers and the adapter are C++17; Arduino-ESP32 2.0.x compiles with gnu++11.
CXX_STANDARD = "-std=gnu++17"

PINNED_EXECUTORCH = "1.5.1"  # the executorch wheel the models are lowered with (pyproject.toml)


def _fail(env: Any, message: str) -> None:
    sys.stderr.write(f"Error: {message}\n")
    env.Exit(1)


def _executorch_version(env: Any) -> str:
    found = env.get("ESPNN_SOURCES")
    return str(found.executorch.pin.version) if found is not None else PINNED_EXECUTORCH


def _frameworks(env: Any) -> list[str]:
    return [f.strip().lower() for f in env.get("PIOFRAMEWORK", []) or []]


def component_dir(env: Any) -> Path:
    return Path(env.PioPlatform().get_dir()) / "espnn_component"


IDF_COMPONENT_NAME = "executorch_espnn"  # what `REQUIRES executorch_espnn` resolves
IDF_WRAPPER_FILES = {"CMakeLists.txt": "CMakeLists.txt.j2", "Kconfig": "Kconfig.j2"}
IDF_RUNTIME_COMPONENT = "executorch"  # what the component's `REQUIRES executorch` resolves
IDF_RUNTIME_TEMPLATE = "executorch_CMakeLists.txt.j2"


def _cmake_path(path: Path | str, what: str) -> str:
    text = Path(path).resolve().as_posix()
    if '"' in text:
        raise ValueError(f"{what} {text} contains '\"', which CMake and Kconfig cannot quote; "
                         "move it to a plainer path")
    return text


ESP_NN_DEPENDENCY = "espressif/esp-nn"  # what the component's manifest asks the registry for
ESP_NN_COMPONENT = "esp-nn"  # the component name espnn_component's PRIV_REQUIRES names


def local_esp_nn(env: Any) -> Path | None:
    """The ESP-NN tree the user named (custom_executorch_espnn_dir / ESPNN_ESP_NN_DIR), or None
    when ESP-IDF's component manager is to fetch espressif/esp-nn as its users expect."""
    found = env.get("ESPNN_SOURCES")
    if found is None:
        # no model, so the source step did not run: the tree the user named is still the
        # component's esp-nn (else its manifest sends the component manager to the registry)
        tree = source_step.named_esp_nn(env)
        return None if tree is None else Path(tree.root)
    if found.esp_nn is None or found.esp_nn.origin not in ("option", "env"):
        return None
    return Path(found.esp_nn.root)


def manifest_without_esp_nn(text: str) -> str:
    """espnn_component's idf_component.yml without its espressif/esp-nn dependency: with a
    local ESP-NN tree the component manager must not ask the registry for it (offline it fails
    with "Cannot establish a connection to the component registry")."""
    import yaml  # type: ignore[import-untyped]  # (PyYAML, installed with executorch)

    manifest: dict[str, Any] = yaml.safe_load(text)
    deps = manifest.get("dependencies") or {}
    if ESP_NN_DEPENDENCY not in deps:
        raise ValueError(f"espnn_component/idf_component.yml has no {ESP_NN_DEPENDENCY} "
                         "dependency to replace with the local ESP-NN tree")
    del deps[ESP_NN_DEPENDENCY]
    return ("# Generated by executorch-espnn's PlatformIO builder from espnn_component/"
            "idf_component.yml: ESP-NN is the local tree\n# (custom_executorch_espnn_dir / "
            "ESPNN_ESP_NN_DIR), the ESP-IDF component esp-nn next to this one.\n"
            + str(yaml.safe_dump(manifest, sort_keys=False)))


def idf_component_folder(env: Any) -> Path:
    """$BUILD_DIR/executorch/components/executorch_espnn: espnn_component under the name
    ESP-IDF must know it by (a folder's name is its component's name), as a CMakeLists and a
    Kconfig that include the real ones and its idf_component.yml: a copy (the component manager
    fetches espressif/esp-nn), or without the esp-nn dependency when the user named a local
    ESP-NN tree (local_esp_nn_component).  Written only when the content changes, so a no-op
    build stays one."""
    from executorch_espnn import rendering

    comp = component_dir(env)
    folder = Path(env.subst("$BUILD_DIR")) / "executorch" / "components" / IDF_COMPONENT_NAME
    folder.mkdir(parents=True, exist_ok=True)
    jenv = rendering.environment()
    component = _cmake_path(comp, "the platform folder")
    for name, template in IDF_WRAPPER_FILES.items():
        text = jenv.get_template(f"idf_component/{template}").render(component_dir=component)
        rendering.write_if_changed(folder / name, text)
    manifest = (comp / "idf_component.yml").read_text(encoding="utf8")
    if local_esp_nn(env) is not None:
        manifest = manifest_without_esp_nn(manifest)
    rendering.write_if_changed(folder / "idf_component.yml", manifest)
    return folder


def local_esp_nn_component(env: Any, tree: Path) -> Path:
    """The local ESP-NN tree as the ESP-IDF component `esp-nn`: ESP-IDF names a component after
    its folder, so a link $BUILD_DIR/executorch/components/esp-nn to the tree (the tree itself
    when it is already called esp-nn and no link can be made).  ESP-NN's own CMakeLists.txt
    registers it, with its sources for the chip, as ESP-IDF users get it from the registry."""
    import os

    link = Path(env.subst("$BUILD_DIR")) / "executorch" / "components" / ESP_NN_COMPONENT
    target = tree.resolve()
    try:
        if not (link.is_symlink() and Path(os.readlink(link)) == target):
            link.parent.mkdir(parents=True, exist_ok=True)
            if link.is_symlink() or link.exists():
                link.unlink()
            os.symlink(target, link, target_is_directory=True)
    except OSError as exc:  # e.g. Windows without the right to make links
        if target.name == ESP_NN_COMPONENT:
            return target
        raise ValueError(f"cannot link {link} to the ESP-NN tree {target} ({exc.strerror}); "
                         f"name a tree whose folder is called {ESP_NN_COMPONENT}") from exc
    return link


def idf_runtime_folder(env: Any) -> Path:
    """$BUILD_DIR/executorch/components/executorch: the ESP-IDF component of ExecuTorch's runtime,
    a CMakeLists that names this build's pinned trees, the wheel's flatc and the model's kernels
    (kernel_step) and includes espnn_component/cmake/executorch_component.cmake."""
    from executorch_espnn import rendering
    from executorch_espnn import runtime_sources as rs

    folder = Path(env.subst("$BUILD_DIR")) / "executorch" / "components" / IDF_RUNTIME_COMPONENT
    folder.mkdir(parents=True, exist_ok=True)
    text = rendering.render(
        f"idf_component/{IDF_RUNTIME_TEMPLATE}",
        component_dir=_cmake_path(component_dir(env), "the platform folder"),
        executorch_dir=_cmake_path(env["ESPNN_ET_SOURCE_DIR"], "the ExecuTorch tree"),
        flatbuffers_include_dir=_cmake_path(env["ESPNN_FLATBUFFERS_INCLUDE_DIR"],
                                            "the flatbuffers headers"),
        flatc=_cmake_path(rs.find_flatc(), "the executorch wheel's flatc"),
        kernels_cmake=_cmake_path(env["ESPNN_KERNELS"].cmake, "the build folder"))
    rendering.write_if_changed(folder / "CMakeLists.txt", text)
    return folder


def add_idf_components(env: Any) -> list[str]:
    """Put espnn_component (as `executorch_espnn`), ExecuTorch's runtime (`executorch`) and the
    generated model (`espnn_model`) into the ESP-IDF build."""
    platform = env.PioPlatform()
    project_dir = Path(env.subst("$PROJECT_DIR"))
    src_dir = Path(env.subst("$PROJECT_SRC_DIR"))
    dirs: list[str] = []
    if src_dir != project_dir / "main":
        dirs.append(str(src_dir))  # what espressif32's espidf.py adds itself
    if "arduino" in _frameworks(env):
        arduino = platform.get_package_dir("framework-arduinoespressif32")
        if arduino:
            dirs.append(str(arduino))
    try:
        esp_nn = local_esp_nn(env)
    except sources.SourceError as exc:  # a named tree that is no ESP-NN tree
        _fail(env, str(exc))
        return dirs
    if esp_nn is not None:  # the user's ESP-NN tree, not the component manager's
        try:
            dirs.append(str(local_esp_nn_component(env, esp_nn)))
        except ValueError as exc:
            _fail(env, str(exc))
            return dirs
    dirs.append(str(idf_component_folder(env)))
    if env.get("ESPNN_KERNELS") is not None:  # a model: the runtime from the pinned tree
        dirs.append(str(idf_runtime_folder(env)))
    model_dir = env.get("ESPNN_MODEL_DIR")
    if env.get("ESPNN_MODEL_GEN_DIRS"):  # each model's component (several: espnn_models too)
        dirs += [str(d) for d in env["ESPNN_MODEL_GEN_DIRS"]]
    elif model_dir:
        dirs.append(str(Path(model_dir) / GENERATED_SUBDIR))
    board = env.BoardConfig()
    extra = str(board.get("build.cmake_extra_args", "")).strip()
    # ESPNN_PLATFORMIO: the project's own cmake/idf_project.cmake include (for idf.py) steps aside
    args = [a for a in (extra, f'"-DEXTRA_COMPONENT_DIRS:PATH={";".join(dirs)}"',
                        '"-DESPNN_PLATFORMIO:BOOL=ON"') if a]
    board.update("build.cmake_extra_args", " ".join(args))
    return dirs


def add_component_library(env: Any) -> None:
    """Arduino on an ESP board, before the framework script: the component as a library."""
    if "espidf" in _frameworks(env):
        return  # "arduino, espidf": the ESP-IDF addition handles it as a component
    comp = component_dir(env)
    env.Append(CPPPATH=[str(comp / d) for d in arduino_include_dirs(comp) if (comp / d).is_dir()])
    if env.get("ESPNN_MODEL_GEN_DIR") is None:
        return  # no model: the sketch does not use the runtime
    env.Append(CPPPATH=[str(Path(env["ESPNN_ESPNN_DIR"]) / esp_nn_sources.PUBLIC_INCLUDE_DIR)])
    env.Append(CPPDEFINES=[
        "ESPNN_ET_USE_MEMORY_POLICY",
        # (ExecuTorch's public defines and include dirs: add_executorch_runtime)
        # what EspnnModel compares the header's stamp with (cmake/idf.cmake does the same)
        ("ESPNN_ET_EXECUTORCH_VERSION", f'\\"{_executorch_version(env)}\\"'),
        # esp_nn.h maps each kernel to the chip's optimised one only with this (ESP-NN's
        # Kconfig default); Arduino's prebuilt sdkconfig.h has no ESP-NN options
        *esp_nn_sources.DEFINES,
        # the models are embedded: the engine links only their op families (engine/src/registry.c)
        *(["ESPNN_ENGINE_OPS_FROM_MODELS"] if env.get("ESPNN_ENGINE_OPS_FROM_MODELS") else []),
    ])
    libs = [env.BuildLibrary("$BUILD_DIR/executorch_espnn", str(comp), arduino_src_filter(comp))]
    kconf = env.get("ESPNN_KCONFIG")
    if kconf is None or kconf.values().get("CONFIG_ESPNN_ET_PROVIDE_PAL", True):
        # The PAL as an object, not an archive member: linked whatever references it, so its
        # strong et_pal_* always replace the runtime's weak defaults.
        from executorch_espnn import component_sources

        for src in component_sources.load(comp).pal_idf_sources:
            pal = env.Object(f"$BUILD_DIR/executorch_espnn_pal/{src.stem}.o", str(src))
            env.Append(PIOBUILDFILES=pal)
    env.Prepend(LIBS=libs)
    env.Append(ESPNN_STANDIN_LIBS=[str(comp)])


def after_arduino_framework(env: Any) -> None:
    """Arduino on an ESP board, after the framework script has set its flags and include paths
    (a library built from a copy of the environment then has them): C++17, ESP-NN and the
    runtime hook."""
    if "espidf" in _frameworks(env):
        return
    cxx = [f for f in env.get("CXXFLAGS", []) if not str(f).startswith("-std=")]
    env.Replace(CXXFLAGS=[*cxx, CXX_STANDARD])
    if env.get("ESPNN_MODEL_GEN_DIR") is None:
        return
    add_esp_nn_library(env)
    add_executorch_runtime(env)


def add_esp_nn_library(env: Any) -> None:
    """The pinned ESP-NN tree as a library, with what ESP-NN's own build compiles for the chip."""
    root = Path(env["ESPNN_ESPNN_DIR"])
    mcu = str(env.BoardConfig().get("build.mcu", "esp32"))
    try:
        srcs = esp_nn_sources.sources_for(mcu)
    except esp_nn_sources.EspNNTableError as exc:
        _fail(env, f"{exc}; use a board with one of those chips")
        return
    missing = esp_nn_sources.missing_sources(root, mcu)
    if missing:
        _fail(env, f"the ESP-NN tree {root} has no {missing[0]}, which ESP-NN's build compiles "
                   f"for {mcu} at the pinned commit (esp_nn_sources.py); unset "
                   "custom_executorch_espnn_dir / ESPNN_ESP_NN_DIR to use the pinned ESP-NN")
        return
    lib_env = env.Clone()
    forced = ["-include", "sdkconfig.h"]  # ESP-NN reads CONFIG_IDF_TARGET_* without including it
    lib_env.Append(CPPPATH=[str(root / d) for d in esp_nn_sources.INCLUDE_DIRS],
                   CCFLAGS=[*esp_nn_sources.flags_for(mcu), *forced], ASPPFLAGS=forced)
    # one object per source named after the whole file name: ESP-NN has foo_esp32s3.c next to
    # foo_esp32s3.S (CMake's foo.c.obj/foo.S.obj keep them apart; PlatformIO's foo.o would not)
    objects = [lib_env.Object(f"$BUILD_DIR/esp_nn/{rel}.o", str(root / rel)) for rel in srcs]
    env.Append(LIBS=[lib_env.BuildLibrary("$BUILD_DIR/esp_nn", str(root), nodes=objects)])
    env.Append(ESPNN_STANDIN_LIBS=[str(root)])


def add_executorch_runtime(env: Any) -> None:
    """ExecuTorch's runtime and the model's kernels from the pinned tree (runtime_build), after
    the framework script so that the libraries get its flags and include paths."""
    from executorch_espnn import runtime_sources as rs
    from executorch_espnn.errors import RuntimeSourcesError

    from . import runtime_build

    kernels = env["ESPNN_KERNELS"]
    try:
        rt = runtime_build.resolve(component_dir(env), Path(env["ESPNN_ET_SOURCE_DIR"]),
                                   env.get("ESPNN_ET_INCLUDE_ROOT", ""),
                                   Path(env["ESPNN_FLATBUFFERS_INCLUDE_DIR"]),
                                   Path(env.subst("$BUILD_DIR")), kernels)
        flatc = rs.find_flatc()
    except RuntimeSourcesError as exc:
        _fail(env, f"{exc}; {runtime_build.TREE_HINT}")
        return
    runtime_build.add(env, rt, kernels, flatc, runtime_build.log_level(env))
    env.Append(ESPNN_STANDIN_LIBS=[str(rt.trees.executorch)])
