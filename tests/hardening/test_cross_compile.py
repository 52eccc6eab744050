"""The cross-compile gate: every source that enters a firmware, compiled for the 32-bit
bare-metal targets of ``emulated/targets.py`` (``CROSS``) with -Wall -Wextra -Werror -Wformat=2,
against the executorch wheel's headers.  On these targets (newlib/picolibc, as ESP-IDF's Xtensa
and RISC-V toolchains) ``uint32_t`` is ``unsigned long``, so a ``%u`` that the 64-bit host
accepts fails here, as it would under ESP-IDF's -Werror=all.

- the ESP-IDF world: the sources of the component's ESP-IDF registration (engine, adapter,
  EspnnModel, the memory policy's core and ESP-IDF world, the ESP-IDF PAL) with ESP_PLATFORM,
  an sdkconfig.h resolved from the Kconfig (with PSRAM support) and the stand-in ESP-IDF
  headers; its C once as ESP-IDF 5.x and once as ESP-IDF 4.4 (Arduino-ESP32 2.0.x, which has
  no esp_psram.h);
- the bare-metal world: the same component with the host ESP-NN kernels, the memory policy's
  C-library-heap world and the bare-metal PAL (what tests/hardening/test_mcu_stack.py runs), and
  the engine's command-line tool (not firmware, but plain C under the same rule);
- the generated files: model_pte.h (through the emulated firmware's application, which includes
  it as a sketch does), model_pte_data.S, and a selective kernel registration.

C compiles on rv32imac, lx106 and cortex-m7; C++ on cortex-m7 only (the one target with a C++
library), twice: strictly (ExecuTorch's headers as system headers) and as ESP-IDF compiles a
component (gnu++2b, ExecuTorch's headers as ordinary headers, -Wno-unused-parameter as in
ESP-IDF's defaults).  A missing cross compiler fails the test with the Debian packages to
install (.ci/run installs them); it never skips.
"""

from __future__ import annotations

import dataclasses
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from emulated import build, component, targets
from emulated.build import Unit
from emulated.component import C_STRICT, CXX_IDF, CXX_STRICT, includes
from tests.component_helpers import (
    COMPONENT,
    IDF_VERSIONS,
    STANDIN,
    idf_registration,
    idf_version_defines,
    write_sdkconfig,
)

CROSS = list(targets.CROSS)
CORTEX_M = targets.EMU / "cortex_m"
# Component sources that never enter a firmware, and why.
NOT_FIRMWARE = {
    "pal/espnn_pal_host.cpp": "the host board's PAL",
    "runtime/espnn_host_api.cpp": "the host library's measurement entry points",
    "runtime/host_runner.cpp": "the host runner",
}
# Not firmware, but held to the same rule (the engine's command-line tool: plain C).
TOOLS = (COMPONENT / "engine" / "tools" / "espnn_run.c",)
# Operators whose registration the gate compiles: portable (three namespaces) and quantized.
REGISTERED = ("aten::abs.out", "aten::sub.out", "aten::cumsum.out",
              "dim_order_ops::_to_dim_order_copy.out",
              "quantized_decomposed::quantize_per_tensor.out",
              "quantized_decomposed::dequantize_per_tensor.out")


def _errors(target: targets.Target, units: list[Unit]) -> str:
    failures = build.compile_report(target, units)
    return "\n\n".join(f"{e.what}:\n{e.output}" for e in failures)


def _cxx_passes(sources: list[Path], flags: tuple[str, ...]) -> list[Unit]:
    """C++ sources strictly and as ESP-IDF compiles them."""
    strict = (*CXX_STRICT, *flags, *component.wheel_header_flags(system=True))
    idf = (*CXX_IDF, *flags, *component.wheel_header_flags(system=False))
    return [Unit(s, f, f"{s} [{name}]") for s in sources for name, f in (("strict", strict),
                                                                          ("as ESP-IDF", idf))]


@pytest.fixture(scope="module")
def idf_world(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Unit], list[Unit]]:
    """(C units, C++ units) of the component's ESP-IDF registration."""
    tmp = tmp_path_factory.mktemp("idf")
    calls = idf_registration(tmp, pal=True)
    write_sdkconfig(tmp / "cfg", {}, spiram=True)
    (srcs,) = calls["SRCS"]
    (inc,) = calls["INCLUDE_DIRS"]
    (priv,) = calls["PRIV_INCLUDE_DIRS"]
    (defs,) = calls["DEFINITIONS"]
    flags = ("-DESP_PLATFORM", *(f"-D{d}" for d in defs if d not in ("PUBLIC", "PRIVATE")),
             *includes(tmp / "cfg" / "include", *map(Path, inc + priv), STANDIN,
                       COMPONENT / "host_espnn" / "include"))  # the esp-nn component's API
    c = [Unit(Path(s), (*C_STRICT, *flags, *(f"-D{d}" for d in idf_version_defines(v))),
              f"{s} [ESP-IDF {v}]") for v in IDF_VERSIONS for s in srcs if s.endswith(".c")]
    cxx = _cxx_passes([Path(s) for s in srcs if not s.endswith(".c")], flags)
    # the model partition's mapping has an ESP-IDF 4.4 branch (Arduino-ESP32 2.0.x) too
    old_idf = tuple(f"-D{d}" for d in idf_version_defines("4.4"))
    cxx += [dataclasses.replace(u, flags=(*u.flags, *old_idf), label=f"{u.label} [ESP-IDF 4.4]")
            for u in cxx if u.source.name == "espnn_model_partition.cpp"]
    return c, cxx


def baremetal_world() -> tuple[list[Unit], list[Unit]]:
    """(C units, C++ units) of the bare-metal firmware's component."""
    kernels = component.Kernels()
    engine = component.engine_units(kernels)
    tools = [Unit(t, engine[0].flags) for t in TOOLS]
    c = [*engine, *kernels.units(), *component.memory_units("host"), *tools]
    version = component.wheel_executorch_version()
    strict = component.adapter_units(component.wheel_header_flags(system=True),
                                     component.baremetal_defines(version), pal="baremetal")
    idf = component.adapter_units(component.wheel_header_flags(system=False),
                                  component.baremetal_defines(version), CXX_IDF, pal="baremetal")
    cxx = [*(dataclasses.replace(u, label=f"{u.source} [strict]") for u in strict),
           *(dataclasses.replace(u, label=f"{u.source} [as ESP-IDF]") for u in idf)]
    return c, cxx


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A rendered model header and data file (a small delegated program), the emulated
    firmware's vectors for it, and a selective kernel registration."""
    import numpy as np
    import torch

    from emulated import mcu_stack
    from executorch_espnn import selective
    from tests.host_helpers import delegated_pte, fc_payload, make_fc_model

    tmp = tmp_path_factory.mktemp("generated")
    pte = delegated_pte(fc_payload(make_fc_model()), [torch.zeros(1, 8)], lambda x: x[:, :4] * 1.0)
    model_dir = mcu_stack.render_header(pte, tmp / "model")
    x = np.random.default_rng(0).standard_normal((1, 8)).astype(np.float32)
    vectors = mcu_stack.write_vectors(mcu_stack.StackModel("fc", pte, ((x,),)), "host-espnn",
                                      tmp / "vectors" / "model_vectors.h")
    op = {"include_all_overloads": False, "is_root_operator": True, "is_used_for_training": True}
    sel = tmp / "selected_operators.yaml"
    sel.write_text(yaml.safe_dump({"operators": {name: dict(op) for name in REGISTERED},
                                   "et_kernel_metadata": {name: ["default"] for name in REGISTERED},
                                   "include_all_operators": False}))
    files = selective.generate(sel, tmp / "registration")
    assert sorted(selective.registered_kernels(files[1])) == sorted(REGISTERED)
    return {"model": model_dir, "vectors": vectors.parent, "registration": files[1]}


def generated_units(gen: dict[str, Path], target: targets.Target) -> list[Unit]:
    data = gen["model"] / "model_pte_data.S"
    units = [Unit(data, inputs=(gen["model"].parent / "model.pte",))]
    if not target.cxx:
        return units
    app = (*component.defines(*component.ADAPTER_DEFINES),
           *component.baremetal_defines(component.wheel_executorch_version()),
           *includes(gen["model"], gen["vectors"], COMPONENT / "include",
                     COMPONENT / "engine" / "include"))
    units += _cxx_passes([targets.EMU / "stack" / "model_main.cpp"], app)
    units += _cxx_passes([gen["registration"]], includes(gen["registration"].parent))
    units.append(Unit(CORTEX_M / "board.c", (*C_STRICT, *includes(COMPONENT / "include"))))
    return units


# ------------------------------------------------------------------------------------- the gate


@pytest.mark.parametrize("name", CROSS)
def test_esp_idf_world_compiles_warning_free(name: str,
                                             idf_world: tuple[list[Unit], list[Unit]]) -> None:
    t = targets.CROSS[name]
    c, cxx = idf_world
    errors = _errors(t, [*c, *(cxx if t.cxx else [])])
    assert not errors, errors


@pytest.mark.parametrize("name", CROSS)
def test_baremetal_world_compiles_warning_free(name: str) -> None:
    t = targets.CROSS[name]
    c, cxx = baremetal_world()
    errors = _errors(t, [*c, *(cxx if t.cxx else [])])
    assert not errors, errors


@pytest.mark.parametrize("name", CROSS)
def test_generated_files_compile_warning_free(name: str, generated: dict[str, Path]) -> None:
    t = targets.CROSS[name]
    errors = _errors(t, generated_units(generated, t))
    assert not errors, errors


def test_every_component_source_is_in_the_gate(idf_world: tuple[list[Unit], list[Unit]]) -> None:
    """A new source file cannot slip past the gate: each is compiled by one of its worlds, or
    is known not to enter a firmware."""
    c, cxx = idf_world
    bc, bcxx = baremetal_world()
    gated = {u.source.resolve() for u in (*c, *cxx, *bc, *bcxx)}
    for path in sorted(COMPONENT.rglob("*")):
        if path.suffix not in (".c", ".cpp") or "arduino_host" in path.parts:
            continue  # arduino_host/: the host board's stand-in Arduino core
        rel = path.relative_to(COMPONENT).as_posix()
        assert path.resolve() in gated or rel in NOT_FIRMWARE, f"{rel} is not cross-compiled"
    assert not {COMPONENT / r for r in NOT_FIRMWARE} & gated


# ------------------------------------------------------------------------------ the gate's teeth


def uint32_type(target: targets.Target) -> str:
    """What the target's compiler makes uint32_t (asked from the compiler itself)."""
    r = subprocess.run([target.cc, *target.cflags, "-dM", "-E", "-x", "c", "-"], input="",
                       capture_output=True, text=True, check=True)
    m = re.search(r"^#define __UINT32_TYPE__ (.+)$", r.stdout, re.M)
    assert m is not None, r.stdout[:2000]
    return m[1].strip()


@pytest.mark.parametrize("name", CROSS)
def test_the_flags_refuse_a_uint32_printed_with_percent_u(name: str, tmp_path: Path) -> None:
    """The premise: where uint32_t is unsigned long (rv32imac's ilp32 and cortex-m7's newlib ABI,
    as ESP-IDF 5's Xtensa and RISC-V toolchains), %u with a uint32_t fails under the gate's flags,
    in C and (cortex-m7) C++, while the 64-bit host accepts it.  Debian's lx106 compiler keeps the
    ESP8266's unsigned int: there it compiles, so the other two targets are the format check."""
    t = targets.CROSS[name]
    unsigned_long = uint32_type(t) == "long unsigned int"
    assert unsigned_long == (name != "lx106"), f"{name}: uint32_t is {uint32_type(t)}"
    body = ('#include <stdint.h>\n#include <stdio.h>\n'
            'void show(char *buf, uint32_t v) { snprintf(buf, 16, "%u", v); }\n')
    units = [Unit(tmp_path / "bug.c", C_STRICT)]
    if t.cxx:
        units.append(Unit(tmp_path / "bug.cpp", CXX_STRICT))
    for u in units:
        u.source.write_text(body)
    failures = build.compile_report(t, units)
    if not unsigned_long:  # the lx106 blind spot: the bug compiles there
        assert failures == []
        return
    assert [f.what for f in failures] == [f"{name}: compiling {u.source}" for u in units]
    for f in failures:
        assert "-Werror=format=" in f.output and "uint32_t" in f.output, f.output
    host = build.compile_report(targets.HOST64, [Unit(tmp_path / "bug.c", C_STRICT)])
    assert host == [], "on the 64-bit host uint32_t is unsigned int: only a 32-bit build sees it"


def test_a_missing_cross_compiler_names_the_debian_packages() -> None:
    broken = dataclasses.replace(targets.CORTEX_M7, cxx="arm-none-eabi-g++-missing")
    with pytest.raises(targets.ToolMissing, match=r"arm-none-eabi-g\+\+-missing not found; "
                       r"install the Debian packages gcc-arm-none-eabi picolibc-arm-none-eabi "
                       r"libstdc\+\+-arm-none-eabi-picolibc qemu-system-arm"):
        build.compile_report(broken, [])


# ------------------------------------------------------- the partition-storage model header


@pytest.mark.parametrize("name", CROSS)
def test_partition_header_compiles_warning_free(name: str, tmp_path: Path) -> None:
    """model_pte.h of custom_executorch_storage = partition (no bytes: the descriptor names the
    partition), included as a sketch does, as C on every target and C++ where there is one."""
    from devkit.model_files import model_info_from
    from executorch_espnn.firmware import render

    tensor = {"name": "x", "dtype": 1, "dtype_name": "float32", "dims": [1, 4], "numel": 4, "nbytes": 16}
    out_t = {**tensor, "name": "output0", "dims": [1, 3], "numel": 3, "nbytes": 12}
    info = {"pte": {"inputs": [tensor], "outputs": [out_t], "method": "forward"},
            "versions": {"executorch": "1.5.1", "package": "0.1.0", "format_major": "1",
                         "format_minor": "0"},
            "target": "esp32s3",
            "storage": {"label": "espnn_model", "size": 65536, "signature": "in x:float32[1,4]",
                        "signature_sha256": "0" * 64, "host_image_path": "/tmp/p.bin"}}
    render.write_all(model_info_from(info), tmp_path)
    gen = tmp_path / render.GENERATED_SUBDIR
    assert not (gen / "model_pte_data.S").exists()
    app_c = tmp_path / "app.c"
    app_c.write_text('#include "model_pte.h"\nconst espnn_pte_desc_t *app_model(void) { return &model_pte; }\n')
    flags = includes(gen, COMPONENT / "include")
    units = [Unit(app_c, (*C_STRICT, *flags))]
    t = targets.CROSS[name]
    if t.cxx:
        app_cpp = tmp_path / "app.cpp"
        app_cpp.write_text('#include <executorch_espnn.h>\n#include "model_pte.h"\n'
                           "EspnnModel *app_model() { static EspnnModel m(model_pte); return &m; }\n")
        units += _cxx_passes([app_cpp], flags)
    errors = _errors(t, units)
    assert not errors, errors
