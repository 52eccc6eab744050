"""Our additions to espressif32's framework scripts for real boards.

espidf: espnn_component and the generated model ($BUILD_DIR/executorch/espnn_model) become
ESP-IDF components, through the `EXTRA_COMPONENT_DIRS` that espressif32's espidf.py passes to
CMake.  It builds that list itself (the project's src folder, plus Arduino for
"arduino, espidf") and lets the board's `build.cmake_extra_args` follow it on the command line;
CMake keeps the last definition, so we repeat its entries and add ours.  ESP-IDF then reads the
component's Kconfig (menuconfig, sdkconfig.h) and its idf_component.yml (esp-nn).

arduino: the component is compiled as a library with the Kconfig-resolved macros
(espnn_sdkconfig.h, see kconfig_glue) and the portable ESP-NN kernels, against the ExecuTorch
runtime sources of the framework-executorch package.

Neither can be compiled here (no ESP toolchain); tests check the hand-off with a stand-in base.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .render import GENERATED_SUBDIR, TEMPLATES

RUNTIME_PACKAGE = "framework-executorch"

# Component sources for an Arduino build (the ESP-IDF build reads the component's CMakeLists).
ARDUINO_SRC_FILTER = [
    "+<adapter/*.cpp>",
    "+<runtime/espnn_model.cpp>",
    "+<memory/espnn_mem_core.c>",
    "+<memory/espnn_mem_idf.c>",
    "+<engine/src/*.c>",
    "+<engine/ops/*.c>",
    "+<host_espnn/src/*.c>",  # ANSI ESP-NN kernels: the same API, portable C
]
ARDUINO_INCLUDE_DIRS = ["include", "engine/include", "engine/src", "adapter", "memory", "host_espnn/include"]


PINNED_EXECUTORCH = "1.5.1"  # the executorch wheel the models are lowered with (pyproject.toml)


def runtime_installed(env: Any) -> bool:
    return bool(env.PioPlatform().get_package_dir(RUNTIME_PACKAGE))


def _frameworks(env: Any) -> list[str]:
    return [f.strip().lower() for f in env.get("PIOFRAMEWORK", []) or []]


def component_dir(env: Any) -> Path:
    return Path(env.PioPlatform().get_dir()) / "espnn_component"


IDF_COMPONENT_NAME = "executorch_espnn"  # what `REQUIRES executorch_espnn` resolves
IDF_WRAPPER_FILES = {"CMakeLists.txt": "CMakeLists.txt.j2", "Kconfig": "Kconfig.j2"}


def idf_component_folder(env: Any) -> Path:
    """$BUILD_DIR/executorch/components/executorch_espnn: espnn_component under the name
    ESP-IDF must know it by (a folder's name is its component's name), as a CMakeLists and a
    Kconfig that include the real ones and a copy of its idf_component.yml (esp-nn).  Written
    only when the content changes, so a no-op build stays one."""
    import shutil

    import jinja2

    comp = component_dir(env)
    folder = Path(env.subst("$BUILD_DIR")) / "executorch" / "components" / IDF_COMPONENT_NAME
    folder.mkdir(parents=True, exist_ok=True)
    loader = jinja2.FileSystemLoader(str(TEMPLATES / "idf_component"))
    jenv = jinja2.Environment(loader=loader, undefined=jinja2.StrictUndefined,
                              keep_trailing_newline=True)
    component = comp.resolve().as_posix()
    if '"' in component:
        raise ValueError(f"the platform folder {component} contains '\"', which CMake and "
                         "Kconfig cannot quote; move it to a plainer path")
    for name, template in IDF_WRAPPER_FILES.items():
        text = jenv.get_template(template).render(component_dir=component)
        path = folder / name
        if not path.is_file() or path.read_text(encoding="utf8") != text:
            path.write_text(text, encoding="utf8")
    manifest = comp / "idf_component.yml"
    copy = folder / manifest.name
    if not copy.is_file() or copy.read_bytes() != manifest.read_bytes():
        shutil.copyfile(manifest, copy)
    return folder


def add_idf_components(env: Any) -> list[str]:
    """Put espnn_component (as `executorch_espnn`) and the generated model (`espnn_model`)
    into the ESP-IDF build."""
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
    dirs.append(str(idf_component_folder(env)))
    model_dir = env.get("ESPNN_MODEL_DIR")
    if model_dir:
        dirs.append(str(Path(model_dir) / GENERATED_SUBDIR))
    board = env.BoardConfig()
    extra = str(board.get("build.cmake_extra_args", "")).strip()
    args = [a for a in (extra, f'"-DEXTRA_COMPONENT_DIRS:PATH={";".join(dirs)}"') if a]
    runtime = platform.get_package_dir(RUNTIME_PACKAGE)
    if runtime:
        args.append(f'"-DESPNN_EXECUTORCH_SOURCE_DIR={runtime}"')
    board.update("build.cmake_extra_args", " ".join(args))
    return dirs


def add_component_library(env: Any) -> None:
    """Arduino on an ESP board: compile the component (and the ExecuTorch runtime sources)."""
    if "espidf" in _frameworks(env):
        return  # "arduino, espidf": the ESP-IDF addition handles it as a component
    comp = component_dir(env)
    env.Append(CPPPATH=[str(comp / d) for d in ARDUINO_INCLUDE_DIRS if (comp / d).is_dir()])
    if env.get("ESPNN_MODEL_GEN_DIR") is None:
        return  # no model: the sketch does not use the runtime
    platform = env.PioPlatform()
    et_version = platform.get_package_version(RUNTIME_PACKAGE) if runtime_installed(env) else None
    env.Append(CPPDEFINES=[
        "ESPNN_ET_USE_MEMORY_POLICY",
        "C10_USING_CUSTOM_GENERATED_MACROS",
        # what EspnnModel compares the header's stamp with (cmake/idf.cmake does the same)
        ("ESPNN_ET_EXECUTORCH_VERSION", '\\"%s\\"' % (et_version or PINNED_EXECUTORCH)),
    ])
    libs = [env.BuildLibrary("$BUILD_DIR/executorch_espnn", str(comp), ARDUINO_SRC_FILTER)]
    kconf = env.get("ESPNN_KCONFIG")
    if kconf is None or kconf.values().get("CONFIG_ESPNN_ET_PROVIDE_PAL", True):
        # The PAL as an object, not an archive member: linked whatever references it, so its
        # strong et_pal_* always replace the runtime's weak defaults.
        pal = env.Object("$BUILD_DIR/executorch_espnn_pal/espnn_pal_idf.o",
                         str(comp / "pal" / "espnn_pal_idf.cpp"))
        env.Append(PIOBUILDFILES=pal)
    runtime = platform.get_package_dir(RUNTIME_PACKAGE)
    if runtime:
        rt = Path(runtime)
        env.Append(CPPPATH=[str(p) for p in (rt, rt / "include") if p.is_dir()])
        if (rt / "src").is_dir():
            libs.append(env.BuildLibrary("$BUILD_DIR/executorch_runtime", str(rt / "src")))
    env.Prepend(LIBS=libs)
    env.Append(ESPNN_STANDIN_LIBS=[str(comp)] + ([str(runtime)] if runtime else []))
