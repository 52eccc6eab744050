"""The examples built by the real espressif32 builders (gated: skipped unless the trees are named).

- ESPNN_ESPRESSIF32_DIR: a platformio/platform-espressif32 checkout at v6.13.x, installed into a
  test PlatformIO core as a user installs a local platform;
- ESPNN_ARDUINO_ESP32_DIR: an Arduino-ESP32 2.x framework package (framework-arduinoespressif32:
  tools/platformio-build.py, tools/sdk/<chip>), given to the build with `platform_packages`;
- ESPNN_ESP_IDF_DIR: ESP-IDF 5.5 with the submodules its build of an app's components needs, and
  ESPNN_IDF_PYTHON: a Python with what espidf.py installs for ESP-IDF 5 (the ESP-IDF pairs,
  test_espidf_example_with_the_real_builders; docs/platformio.md says what was driven).

The toolchains and esptool are logging wrappers (devkit/real_builders.py): the real builder
scripts run to the end, every command they ran is read back and checked the way the stand-in
tests (tests/test_platformio_esp.py) check what reached the stand-in: the model's header and
.S, ExecuTorch's runtime and kernel libraries from the one source list (objects named after the
sources' whole paths), the -u rule, ESP-NN's sources for the chip, the component's include
folder, C++17 for the component, and the one link that takes them.  For the ESP32-C3, Debian's
RISC-V GCC compiles every source for real with the framework's flags and headers
(devkit/real_builders.py riscv_compilers: newlib's and libstdc++'s headers from Debian); for
the Xtensa chips (no Xtensa GCC can be had) Debian's clang-22 compiles every C and C++ source for
the esp32 core's windowed ABI with the framework's flags translated (xtensa_compilers), to objects
assembled by GNU as when ESPNN_XTENSA_DYNCONFIG_DIR names the cores' binutils plugins
(xtensa_esp32.so, xtensa_esp32s3.so; .S files too), else through code generation only (-S), and
every source of ours must compile (check_xtensa_compiles).  Nothing is linked: the link line is
checked, not run (linking the C3 firmware with Debian's RISC-V linker against the framework
package's precompiled SDK libraries was not tried).  The ExecuTorch/flatbuffers/ESP-NN trees are the stand-in ones unless
EXECUTORCH_SOURCE_DIR / FLATBUFFERS_SOURCE_DIR / ESPNN_ESP_NN_DIR name real ones.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from devkit import pio_helpers as h
from devkit import real_builders as rb
from executorch_espnn import runtime_sources as rs
from executorch_espnn.firmware import esp_nn_sources

ARDUINO_PAIRS = [("esp32dev", "esp32", "xtensa-esp32-elf"),
                 ("esp32-s3-devkitc-1", "esp32s3", "xtensa-esp32s3-elf"),
                 ("esp32-c3-devkitm-1", "esp32c3", "riscv32-esp-elf")]


def _need(*names: str) -> None:
    missing = rb.missing_variables(*names)
    if missing:
        pytest.skip(f"{', '.join(missing)} not set: set {rb.ESPRESSIF32_ENV} to a "
                    "platform-espressif32 checkout at v6.13.x, "
                    f"{rb.ARDUINO_ENV} to an Arduino-ESP32 2.x framework package, "
                    f"{rb.IDF_ENV} to ESP-IDF 5.5 and {rb.IDF_PYTHON_ENV} to a Python with "
                    f"{', '.join(rb.IDF_PYTHON_REQUIREMENTS)}")


@pytest.fixture(scope="module")
def real_core(tmp_path_factory: pytest.TempPathFactory) -> Path:
    _need(rb.ESPRESSIF32_ENV)
    work = tmp_path_factory.mktemp("real")
    core = work / "core"
    h.seed_core(core)
    rb.install_platform(core, Path(os.environ[rb.ESPRESSIF32_ENV]))
    rb.seed_wrapper_packages(core, Path(os.environ[rb.ESPRESSIF32_ENV]), rb.riscv_compilers(),
                             xtensa=True)
    h.write_standin_sources(core, work)
    return core


def _hello_world(root: Path, envs: str) -> Path:
    """The hello_world example (its sketch and model) with the real framework package."""
    proj = root / "hello_world"
    shutil.copytree(h.example_dir("hello_world") / "src", proj / "src")
    shutil.copytree(h.example_dir("hello_world") / "model", proj / "model")
    (proj / "platformio.ini").write_text(
        f"[env]\nplatform = {h.platform_spec()}\nframework = arduino\n"
        "custom_executorch_model = model/mlp.py\ncustom_executorch_selftest = 4\n"
        f"platform_packages = framework-arduinoespressif32 @ symlink://{os.environ[rb.ARDUINO_ENV]}\n"
        + envs)
    return proj


SKETCH = """#include <Arduino.h>
#include <executorch_espnn.h>
#include "model_pte.h"

EspnnModel model(model_pte);

void setup() { Serial.begin(115200); if (!model.begin()) Serial.println(model.error()); }

void loop() {
  if (!model.invoke()) Serial.println(model.error());
  delay(1000);
}
"""


def _cpu_kernels_project(root: Path, board: str) -> Path:
    """A ready .pte with no delegate (its linear and relu stay on the CPU: the kernel step
    registers their portable kernels) behind the README's sketch."""
    proj = root / "plain"
    (proj / "src").mkdir(parents=True)
    (proj / "src" / "main.cpp").write_text(SKETCH)
    h.write_plain_pte(proj / "plain.pte")
    (proj / "platformio.ini").write_text(
        f"[env:{board}]\nplatform = {h.platform_spec()}\nboard = {board}\nframework = arduino\n"
        "custom_executorch_model = plain.pte\n"
        f"platform_packages = framework-arduinoespressif32 @ symlink://{os.environ[rb.ARDUINO_ENV]}\n")
    return proj


@pytest.mark.slow
@pytest.mark.parametrize(("board", "mcu", "prefix"), [ARDUINO_PAIRS[0], ARDUINO_PAIRS[2]])
def test_arduino_cpu_kernels_with_the_real_builders(real_core: Path, tmp_path: Path, board: str,
                                                    mcu: str, prefix: str) -> None:
    """The model's CPU kernels: compiled into libexecutorch_kernels.a with the registration
    (on the C3 by a real compiler)."""
    _need(rb.ESPRESSIF32_ENV, rb.ARDUINO_ENV)
    proj = _cpu_kernels_project(tmp_path, board)
    log = tmp_path / "tools.jsonl"
    r = h.pio(real_core, proj, "run", "-v", "-e", board, timeout=1200,
              extra_env={rb.LOG_ENV: str(log), **_xtensa_tolerate(_trees(real_core), prefix)})
    assert r.returncode == 0, r.output[-8000:]
    assert "executorch: 3 CPU operator(s) registered for the firmware" in r.output
    check_arduino_calls(proj / ".pio" / "build" / board, proj, log, mcu, prefix, board,
                        _trees(real_core))


@pytest.mark.slow
@pytest.mark.parametrize(("board", "mcu", "prefix"), ARDUINO_PAIRS)
def test_arduino_example_with_the_real_builders(real_core: Path, tmp_path: Path, board: str,
                                                mcu: str, prefix: str) -> None:
    """The hello_world example for each chip Arduino-ESP32 2.x builds with espressif32 6.13."""
    _need(rb.ESPRESSIF32_ENV, rb.ARDUINO_ENV)
    proj = _hello_world(tmp_path, f"\n[env:{board}]\nboard = {board}\n")
    log = tmp_path / "tools.jsonl"
    r = h.pio(real_core, proj, "run", "-v", "-e", board, timeout=1200,
              extra_env={rb.LOG_ENV: str(log), **_xtensa_tolerate(_trees(real_core), prefix)})
    assert r.returncode == 0, r.output[-8000:]
    print(f"\n{board}: " + "; ".join(ln.strip() for ln in r.output.splitlines()
                                      if ln.startswith((" - framework", "executorch:"))))
    assert " - framework-arduinoespressif32 @ 3.200" in r.output
    assert f"executorch: lowering mlp.py for {mcu}" in r.output
    check_arduino_calls(proj / ".pio" / "build" / board, proj, log, mcu, prefix, board,
                        _trees(real_core))


def _xtensa_tolerate(trees: dict[str, Path], prefix: str, *also: Path) -> dict[str, str]:
    """For clang-22 on the Xtensa chips: the folders whose failing compiles are counted, not
    fatal (the framework's sources and ESP-NN's, e.g. its GCC-only `"a"` asm constraint); ours
    must all compile (check_xtensa_compiles)."""
    if prefix not in rb.XTENSA_CORES:
        return {rb.TOLERATE_ENV: os.pathsep.join(str(p) + "/" for p in also)} if also else {}
    roots = [*also, trees["ESPNN_ESP_NN_DIR"]]
    if os.environ.get(rb.ARDUINO_ENV):
        roots.append(Path(os.environ[rb.ARDUINO_ENV]).resolve())
    return {rb.TOLERATE_ENV: os.pathsep.join(str(p) + "/" for p in roots)}


_ROOT_NAMES = {"components": "ESP-IDF", "esp-nn": "ESP-NN", "arduino": "Arduino-ESP32"}


def check_xtensa_compiles(log: Path, compiles: list[rb.Call], ours: set[Path], board: str,
                          prefix: str, tolerated: dict[str, str]) -> None:
    """clang-22 compiled every C and C++ source for the chip (to an object assembled by GNU as
    when the core's plugin is given, else through code generation, -S), and every .S with the
    plugin: all of ours without a failure; the tolerated folders' failures counted."""
    everything = rb.read_log(log)
    real = {c.source(): c for c in everything if c.tool.startswith("real:") and c.source()}
    gas = rb.xtensa_dynconfig(prefix) is not None
    assert set(real) == {c.source() for c in compiles if gas or c.source().suffix != ".S"}
    assert {Path(c.tool[5:]).name for c in real.values()} <= {"clang-22", "clang++-22"}
    # CMake's configure checks (try_compile: a failure is their answer, e.g. FindThreads
    # finding no pthread_create in Debian's newlib) are counted apart
    probes = {s for s in real if "CMakeScratch" in s.parts}
    failed = {s for s, c in real.items() if c.returncode} - probes
    assert not failed & ours, {str(s): real[s].stderr for s in failed & ours}
    roots = [t for t in tolerated.get(rb.TOLERATE_ENV, "").split(os.pathsep) if t]
    assert all(any(str(s).startswith(t) for t in roots) for s in failed), \
        sorted(str(s) for s in failed if not any(str(s).startswith(t) for t in roots))
    ours_c = sorted(s for s in ours if s.suffix == ".c")
    assert ours_c and all(real[s].returncode == 0 for s in ours_c)  # every C source of ours
    if gas:
        assert all(real[s].assembler == rb.XTENSA_AS for s in ours if s in real)
    by_root = {Path(t).name: (sum(1 for s in real if str(s).startswith(t)),
                              sum(1 for s in failed if str(s).startswith(t))) for t in roots}
    by_root = {_ROOT_NAMES.get(name, name): nf for name, nf in by_root.items() if nf[0]}
    retried = sorted(s.name for s, c in real.items() if c.retry)
    how = (f"to objects, assembled by GNU as with the {rb.XTENSA_CORES[prefix]} plugin" if gas
           else "through code generation only (-S; .S files logged)")
    print(f"{board}: {len(real)} sources compiled for real by clang-22 ({how}): {len(ours)} of "
          f"ours ({len(ours_c)} C, {sum(1 for s in ours if s.suffix == '.cpp')} C++, "
          f"{sum(1 for s in ours if s.suffix == '.S')} .S), all compiled; "
          + "; ".join(f"{name}'s {n}, {f} failed" for name, (n, f) in by_root.items())
          + (f"; CMake's configure checks {len(probes)}, "
             f"{sum(1 for s in probes if real[s].returncode)} failed" if probes else "")
          + (f"; retried at -O0 (LLVM 22's Xtensa backend crashed): {', '.join(retried)}"
             if retried else ""))


def _trees(core: Path) -> dict[str, Path]:
    """The source trees the build was handed: the variables', else the stand-in ones."""
    standin: dict[str, str] = h.json.loads((core / h.STANDIN_SOURCES).read_text())
    return {var: Path(os.environ.get(var) or tree).resolve() for var, tree in standin.items()}


def check_arduino_calls(build: Path, proj: Path, log: Path, mcu: str, prefix: str,
                        board: str, trees: dict[str, Path]) -> None:
    everything = rb.read_log(log)
    real = [c for c in everything if c.tool.startswith("real:")]
    calls = [c for c in everything if not c.tool.startswith("real:")]
    compiles = [c for c in calls if c.source()]
    if prefix.startswith("riscv32") and rb.riscv_compilers() is not None:
        # Debian's RISC-V GCC compiled every source for real, with the framework's flags and
        # headers: the sketch, Arduino's core, the component, ExecuTorch's runtime and kernels,
        # ESP-NN, the model's .S (a failure would have stopped the build)
        assert sorted(str(c.source()) for c in real) == sorted(str(c.source()) for c in compiles)
        assert all(c.returncode == 0 for c in real)
        print(f"{board}: {len(real)} sources compiled for real by "
              f"{', '.join(sorted({c.tool[5:] for c in real}))}")
    elif prefix.startswith("riscv32"):
        print(f"{board}: no RISC-V GCC with newlib and libstdc++ headers here: logged only")
    by_source = {c.source(): c for c in compiles}
    if prefix in rb.XTENSA_CORES and rb.xtensa_compilers(prefix) is not None:
        comp = (h.ROOT / "espnn_component").resolve()
        et = trees["EXECUTORCH_SOURCE_DIR"]
        ours_x = {s for s in by_source if s.is_relative_to(comp) or s.is_relative_to(et)
                  or s.is_relative_to(proj.resolve()) or s.is_relative_to(build.resolve())}
        check_xtensa_compiles(log, compiles, ours_x, board, prefix, _xtensa_tolerate(trees, prefix))
    elif prefix in rb.XTENSA_CORES:
        print(f"{board}: no clang-22 with newlib and libstdc++ headers here: logged only")
    assert all(c.tool.startswith(prefix) for c in calls if c.tool != "esptool.py")
    build = build.resolve()

    # the generated model: its header on the sketch's include path, its bytes assembled
    gen = build / "executorch" / "espnn_model"
    sketch = by_source[(proj / "src" / "main.cpp").resolve()]
    assert gen in sketch.includes()
    assert build / "executorch" / "model_pte_data.o" in [c.object() for c in compiles]

    # ExecuTorch's runtime and the model's kernels: every listed source, one object each,
    # named after its whole path, ExecuTorch's warnings off
    lists = rs.load()
    et = trees["EXECUTORCH_SOURCE_DIR"]
    for rel in lists.runtime_srcs:
        call = by_source[et / rel]
        assert call.object() == build / "executorch_runtime" / f"{rel}.o"
        assert "-w" in call.args
    registry = by_source[et / "runtime/kernel/operator_registry.cpp"]
    assert any(a.startswith("-DMAX_KERNEL_NUM=") for a in registry.args)
    kernels = [c for c in compiles if (build / "executorch_kernels") in (c.object() or build).parents]
    text = (build / "executorch" / "kernels" / "kernels.cmake").read_text()
    block = re.search(r"set\(ESPNN_KERNEL_SRCS([^)]*)\)", text)
    selected = block.group(1).split() if block else []
    want = [et / s for s in (*selected, *(lists.kernel_support_srcs if selected else ()))]
    assert sorted(str(c.source()) for c in kernels) == sorted(
        [str(build / "executorch" / "kernels" / "RegisterCodegenUnboxedKernels.cpp"),
         *(str(p) for p in want)])
    objects = [c.object() for c in compiles]
    assert len(set(objects)) == len(objects)  # no two sources share an object

    # ESP-NN from its tree with what its build selects for the chip
    esp_nn = trees["ESPNN_ESP_NN_DIR"]
    nn = sorted(str(s.relative_to(esp_nn)) for s in by_source if s.is_relative_to(esp_nn))
    assert nn == sorted(esp_nn_sources.sources_for(mcu))

    # the component: C++17 whatever Arduino-ESP32 asks for (gnu++11), its include folder, the
    # framework's SDK headers
    comp = (h.ROOT / "espnn_component").resolve()
    ours = [c for s, c in by_source.items() if s.is_relative_to(comp) and s.suffix == ".cpp"]
    assert ours
    for c in [*ours, sketch]:
        assert [a for a in c.args if a.startswith("-std=")][-1] == "-std=gnu++17", c.args
    assert comp / "include" in sketch.includes()
    sdk = [p for p in ours[0].includes() if f"tools/sdk/{mcu}/include" in str(p)]
    assert len(sdk) > 50, ours[0].includes()

    # the one link: the -u rule, the kernels before the runtime, ESP-NN, the component
    (link,) = [c for c in calls if c.object() == build / "firmware.elf"]
    args = link.args
    assert "-Wl,-u,executorch_espnn_register_kernels" in args
    names = [Path(a).name for a in args if a.endswith(".a")] + \
        [f"lib{a[2:]}.a" for a in args if a.startswith("-l")]
    for lib in ("libexecutorch_kernels.a", "libexecutorch_runtime.a", "libesp_nn.a",
                "libexecutorch_espnn.a"):
        assert lib in names, (lib, names)
    # Arduino-ESP32's link: our libraries inside its one --start-group/--end-group with the
    # SDK's (so their order does not matter); the model's bytes and the PAL as objects before it
    (start,) = [i for i, a in enumerate(args) if a == "-Wl,--start-group"]
    end = args.index("-Wl,--end-group")
    group = [Path(a).name for a in args[start:end] if a.endswith(".a")]
    assert {"libexecutorch_kernels.a", "libexecutorch_runtime.a", "libesp_nn.a",
            "libexecutorch_espnn.a"} <= set(group), group
    before = [Path(a).name for a in args[:start] if a.endswith(".o")]
    assert {"model_pte_data.o", "espnn_pal_idf.o", "main.cpp.o"} <= set(before), before
    print(f"{board}: {len(compiles)} compile commands ({len(lists.runtime_srcs)} runtime sources, "
          f"{len(kernels)} kernel objects, {len(nn)} ESP-NN sources, {len(ours)} component C++ "
          f"sources, {len(sdk)} SDK include folders); one link of {len(args)} arguments, "
          f"{args.count('-Wl,--start-group')} --start-group")


# --- framework = espidf: espressif32's espidf.py, ESP-IDF's CMake and component manager -----------

IDF_PAIRS = [("esp32-s3-devkitc-1", "esp32s3", "xtensa-esp32s3-elf"),
             ("esp32-c6-devkitc-1", "esp32c6", "riscv32-esp-elf")]

# The app as an ESP-IDF user writes it: the PlatformIO layout (the app in src/), the project file
# naming the components to build (ESP-IDF's COMPONENTS: the app and what it requires, plus
# __pio_env, the component espidf.py adds for its own flags), so the build needs only the
# submodules those components use (docs/platformio.md lists them).
IDF_PROJECT = """cmake_minimum_required(VERSION 3.16)
include($ENV{IDF_PATH}/tools/cmake/project.cmake)
set(COMPONENTS src __pio_env)
project(mlp_idf)
"""
IDF_APP = """#include <executorch_espnn.h>
#include "esp_log.h"
#include "model_pte.h"

extern "C" void app_main(void) {
  static EspnnModel model(model_pte);
  if (!model.begin() || !model.invoke()) ESP_LOGE("mlp", "%s", model.error());
}
"""


@pytest.fixture(scope="module")
def idf_core(real_core: Path) -> Path:
    _need(rb.ESPRESSIF32_ENV, rb.IDF_ENV, rb.IDF_PYTHON_ENV)
    rb.seed_idf_packages(real_core, Path(os.environ[rb.IDF_ENV]), Path(os.environ[rb.IDF_PYTHON_ENV]))
    return real_core


def _idf_project(root: Path, board: str, model: str = "model/mlp.py") -> Path:
    proj = root / "mlp_idf"
    h.write_project(proj, f"""
        [env:{board}]
        platform = {h.platform_spec()}
        board = {board}
        framework = espidf
        custom_executorch_model = {model}
        """, {"model/mlp.py": h.mlp_model_source(1), "CMakeLists.txt": IDF_PROJECT,
              "src/CMakeLists.txt": 'idf_component_register(SRCS "main.cpp" '
                                    'REQUIRES executorch_espnn espnn_model)\n',
              "src/main.cpp": IDF_APP})
    return proj


@pytest.mark.slow
@pytest.mark.parametrize(("board", "mcu", "prefix"), IDF_PAIRS)
def test_espidf_example_with_the_real_builders(idf_core: Path, tmp_path: Path, board: str,
                                               mcu: str, prefix: str) -> None:
    """An ESP-IDF app with a model through espressif32 6.13's espidf.py and ESP-IDF 5.5's CMake:
    offline (ESP-NN the named tree, no registry), every source of ours compiled (for the C6 by
    Debian's RISC-V GCC with ESP-IDF's flags, -Werror=all included)."""
    idf = Path(os.environ[rb.IDF_ENV]).resolve()
    proj = _idf_project(tmp_path, board)
    log = tmp_path / "tools.jsonl"
    # IDF_MAINTAINER: ESP-IDF's documented way to build with a compiler it does not list (a
    # warning instead of an error); the tolerated folder: ESP-IDF's own sources, which Debian's
    # newlib headers and the submodules' upstream trees do not always compile (counted below)
    r = h.pio(idf_core, proj, "run", "-v", "-e", board, timeout=3000,
              extra_env={rb.LOG_ENV: str(log), "IDF_MAINTAINER": "1",
                         **_xtensa_tolerate(_trees(idf_core), prefix, idf / "components")})
    assert r.returncode == 0, r.output[-8000:]
    assert "Cannot establish a connection to the component registry" not in r.output
    assert "NOTICE: [1/1] idf (" in r.output  # the manifest asked the registry for nothing else
    # no -D that no CMake file reads, but the switch for projects that include
    # cmake/idf_project.cmake (this one does not) and espidf.py's own for the bootloader
    unused = {name for block in re.findall(r"were not used by the project:\n\n((?:    \S+\n)+)",
                                           r.output) for name in block.split()}
    assert unused <= {"ESPNN_PLATFORMIO", "LEGACY_INCLUDE_COMMON_HEADERS"}, unused
    check_idf_calls(proj / ".pio" / "build" / board, proj, log, mcu, prefix, board,
                    _trees(idf_core), idf)


@pytest.mark.slow
def test_espidf_cpu_kernels_with_the_real_builders(idf_core: Path, tmp_path: Path) -> None:
    """A .pte whose linear and relu stay on the CPU, on the ESP32-C6: the portable kernels, their
    support sources and the registration compiled for real with ESP-IDF's flags."""
    board, mcu, prefix = IDF_PAIRS[1]
    idf = Path(os.environ[rb.IDF_ENV]).resolve()
    proj = _idf_project(tmp_path, board, model="plain.pte")
    h.write_plain_pte(proj / "plain.pte")
    log = tmp_path / "tools.jsonl"
    r = h.pio(idf_core, proj, "run", "-v", "-e", board, timeout=3000,
              extra_env={rb.LOG_ENV: str(log), "IDF_MAINTAINER": "1",
                         rb.TOLERATE_ENV: str(idf / "components") + "/"})
    assert r.returncode == 0, r.output[-8000:]
    assert "executorch: 3 CPU operator(s) registered for the firmware" in r.output
    check_idf_calls(proj / ".pio" / "build" / board, proj, log, mcu, prefix, board,
                    _trees(idf_core), idf)


def check_idf_calls(build: Path, proj: Path, log: Path, mcu: str, prefix: str, board: str,
                    trees: dict[str, Path], idf: Path) -> None:
    from executorch_espnn import component_sources

    everything = rb.read_log(log)
    real = {c.source(): c for c in everything if c.tool.startswith("real:") and c.source()}
    calls = [c for c in everything if not c.tool.startswith("real:")]
    compiles = [c for c in calls if c.source()]
    by_source = {c.source(): c for c in compiles}
    build = build.resolve()
    objects = [c.object() for c in compiles]
    assert len(set(objects)) == len(objects)  # no two sources share an object

    # ours: the component's firmware sources (never its host twins), the app, the model's .S
    comp = (h.ROOT / "espnn_component").resolve()
    lists = component_sources.load(comp)
    want = {*lists.engine_srcs, *lists.adapter_sources, *lists.model_sources,
            *lists.mem_idf_sources, *lists.pal_idf_sources}
    got = {s for s in by_source if s.is_relative_to(comp)}
    assert got == {p.resolve() for p in want}, sorted(str(p) for p in got ^ {p.resolve() for p in want})
    model_s = [s for s in by_source if s.name == "model_pte_data.S"]
    assert len(model_s) == 1
    app = by_source[(proj / "src" / "main.cpp").resolve()]
    assert (comp / "include") in app.includes()
    for c in (by_source[s] for s in got):
        assert "-Werror=all" in c.args, c.args  # ESP-IDF's own warnings policy reached ours
        if c.source().suffix == ".cpp":
            assert [a for a in c.args if a.startswith("-std=")][-1] in ("-std=gnu++2b", "-std=gnu++17")

    # ExecuTorch's runtime and the model's kernels: one unit per listed source, named after its
    # whole path, ExecuTorch's warnings off
    rt = rs.load()
    units = {s.name: by_source[s] for s in by_source if "executorch" in s.parts
             and s.parent.name == "src" and "__" in s.name}
    assert set(units) >= {rel.replace("/", "__") for rel in rt.runtime_srcs}
    assert all("-w" in c.args for c in units.values())
    registry = units["runtime__kernel__operator_registry.cpp"]
    assert any(a.startswith("-DMAX_KERNEL_NUM=") for a in registry.args)
    text = (build / "executorch" / "kernels" / "kernels.cmake").read_text()
    block = re.search(r"set\(ESPNN_KERNEL_SRCS([^)]*)\)", text)
    selected = block.group(1).split() if block else []
    kernels = [*selected, *(rt.kernel_support_srcs if selected else ())]
    assert set(units) == {rel.replace("/", "__") for rel in (*rt.runtime_srcs, *kernels)}
    registration = [s for s in by_source if s.name == "RegisterCodegenUnboxedKernels.cpp"]
    assert len(registration) == 1

    # ESP-NN: the named tree as the component esp-nn, its own CMakeLists selecting for the chip
    esp_nn = trees["ESPNN_ESP_NN_DIR"]
    nn = sorted(str(s.relative_to(esp_nn)) for s in by_source if s.is_relative_to(esp_nn))
    assert nn == sorted(esp_nn_sources.sources_for(mcu))

    # the one link: the -u rules, our components' archives
    (link,) = [c for c in calls if c.object() is not None and c.object().suffix == ".elf"
               and "bootloader" not in str(c.object())]
    assert "-u" in link.args or any(a.startswith("-Wl,-u") or a == "executorch_espnn_register_kernels"
                                    for a in link.args)
    text = " ".join(link.args)
    assert "executorch_espnn_register_kernels" in text
    for lib in ("libexecutorch.a", "libexecutorch_espnn.a", "libesp-nn.a", "libespnn_model.a"):
        assert lib in text, (lib, text[:2000])

    ours = {*got, *model_s, app.source(), *registration, *(s for s in by_source if s.is_relative_to(esp_nn)),
            *(c.source() for c in units.values())}
    if prefix in rb.XTENSA_CORES and rb.xtensa_compilers(prefix) is not None:
        check_xtensa_compiles(log, compiles, ours - {s for s in ours if s.is_relative_to(esp_nn)},
                              board, prefix, _xtensa_tolerate(trees, prefix, idf / "components"))
    elif prefix.startswith("riscv32") and rb.riscv_compilers() is not None:
        assert set(real) == set(by_source)  # every compile ran the real compiler ...
        failed = {s: c for s, c in real.items() if c.returncode}
        assert not [s for s in failed if s in ours], {str(s): real[s].stderr for s in ours if s in failed}
        assert all(s.is_relative_to(idf / "components") for s in failed)  # ... ESP-IDF's may fail
        print(f"{board}: {len(real)} sources compiled for real by "
              f"{', '.join(sorted({c.tool[5:] for c in real.values()}))}: {len(ours)} of ours, all "
              f"compiled; ESP-IDF's {len(real) - len(ours)}, {len(failed)} failed ("
              + ", ".join(sorted({s.relative_to(idf / 'components').parts[0] for s in failed})) + ")")
    else:
        print(f"{board}: {len(compiles)} compile commands logged, none compiled ({prefix}-gcc: no "
              "compiler for the chip here)")
    print(f"{board}: {len(ours)} sources of ours ({len(got)} component, {len(units)} runtime/kernel "
          f"units, {len(nn)} ESP-NN, the app, the registration, the model's .S); one link of {len(link.args)} arguments")
