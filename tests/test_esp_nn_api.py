"""The engine against a real ESP-NN checkout's headers, and the declared ESP-NN range.

With ``ESPNN_ESP_NN_DIR`` set to an espressif/esp-nn tree (skipped otherwise), for each way
ESP-NN's ``esp_nn.h`` maps the public names (ANSI; CONFIG_NN_OPTIMIZED with the generic optimised
C of esp32/s2/c3/c6; the S3 and P4 kernels):
  * every ``esp_nn_*`` function the engine calls (read from the engine's sources) is declared,
    and every engine source compiles warning-free against those headers, when the tree's version
    is in the range ``espnn_component/idf_component.yml`` declares; below the range's floor at
    least one is missing (so the floor is needed, not just cautious), and a failing engine
    source fails only on such a function;
  * the builder's per-chip source table (executorch_espnn/firmware/esp_nn_sources.py) equals the tree's
    own CMakeLists.txt when the tree is the pinned release.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from devkit import source_helpers as sh
from executorch_espnn import component_sources
from executorch_espnn.firmware import esp_nn_sources as table

ROOT = Path(__file__).resolve().parents[1]
ENGINE = ROOT / "espnn_component" / "engine"
ESP_NN = os.environ.get("ESPNN_ESP_NN_DIR", "")
needs_checkout = pytest.mark.skipif(
    not ESP_NN, reason="set ESPNN_ESP_NN_DIR to an espressif/esp-nn checkout (e.g. "
    "`git clone https://github.com/espressif/esp-nn`) to check the engine against its headers")

# how esp_nn.h selects the kernels: the defines ESP-IDF's sdkconfig gives each case
VARIANTS = {
    "ansi": (),
    "generic-opt (esp32, esp32s2, esp32c3, esp32c6)": ("-DCONFIG_NN_OPTIMIZED=1", "-DCONFIG_IDF_TARGET_ESP32=1"),
    "esp32s3": ("-DCONFIG_NN_OPTIMIZED=1", "-DCONFIG_IDF_TARGET_ESP32S3=1"),
    "esp32p4": ("-DCONFIG_NN_OPTIMIZED=1", "-DCONFIG_IDF_TARGET_ESP32P4=1"),
}


def engine_sources() -> list[Path]:
    return sorted(component_sources.load(ENGINE.parent).engine_srcs)


def engine_calls(variant: str = "ansi") -> list[str]:
    """The ESP-NN functions the engine calls, read from its sources; the explicit ESP32-S3 and
    ANSI kernel names (src/espnn_s3_kernels.h) only on the esp32s3 build, which calls them."""
    names: set[str] = set()
    for f in [*engine_sources(), *(ENGINE / "src").glob("*.h")]:
        names |= set(re.findall(r"\b(esp_nn_\w+)\s*\(", f.read_text()))
    if variant != "esp32s3":
        names = {n for n in names if not n.endswith(("_esp32s3", "_ansi"))}
    return sorted(names)


def _version_status(nn: Path) -> tuple[str, str]:
    """(version, "in-range" | "below" | "above") of the checkout against the declared range."""
    version = table.tree_version(nn) or "unknown"
    spec = table.declared_range()
    if table.in_range(version, spec):
        return version, "in-range"
    floor = re.search(r">=\s*([0-9.]+)", spec)
    below = floor is not None and table.in_range(version, f"<{floor.group(1)}")
    return version, "below" if below else "above"


def _gcc(args: list[str]) -> subprocess.CompletedProcess[str]:
    cc = shutil.which("gcc")
    assert cc, "gcc is needed"
    return subprocess.run([cc, *args], capture_output=True, text=True, check=False,
                          env={**os.environ, "LC_ALL": "C"}, timeout=120)


def undeclared(nn: Path, variant: str, tmp_path: Path) -> list[str]:
    """The engine's ESP-NN calls that the checkout's esp_nn.h does not declare for `variant`."""
    calls = engine_calls(variant)
    defines = VARIANTS[variant]
    probe = tmp_path / "probe.c"
    probe.write_text('#include "esp_nn.h"\n' + "".join(
        f"void *probe_{i}(void) {{ return (void *)&{name}; }}\n" for i, name in enumerate(calls)))
    proc = _gcc(["-fsyntax-only", "-std=gnu11", *defines, f"-I{nn / 'include'}", str(probe)])
    missing = set(re.findall(r"'(esp_nn_\w+)' undeclared", proc.stderr))
    assert proc.returncode == 0 or missing, proc.stderr[-3000:]
    return sorted(missing)


@needs_checkout
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_checkout_declares_every_function_the_engine_calls(variant: str, tmp_path: Path) -> None:
    nn = Path(ESP_NN)
    version, status = _version_status(nn)
    missing = undeclared(nn, variant, tmp_path)
    print(f"\nESP-NN {version} ({status} of {table.declared_range()}), {variant}: "
          f"{len(engine_calls(variant)) - len(missing)}/{len(engine_calls(variant))} engine calls declared"
          + (f"; missing {', '.join(missing)}" if missing else ""))
    if status == "in-range":
        assert missing == [], f"ESP-NN {version} is in the declared range but lacks {missing}"
    elif status == "below":
        assert missing, (f"ESP-NN {version} is below the declared floor yet has every function "
                         "the engine calls: the floor could be lowered")
    else:
        pytest.skip(f"ESP-NN {version} is above the declared range {table.declared_range()}; "
                    "widen the range only once this test passes with it")


@needs_checkout
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_engine_compiles_against_checkout_headers(variant: str, tmp_path: Path) -> None:
    nn = Path(ESP_NN)
    version, status = _version_status(nn)
    failures: dict[str, str] = {}
    for src in engine_sources():
        proc = _gcc(["-fsyntax-only", "-std=c11", "-Wall", "-Wextra", "-Werror",
                     "-Werror=implicit-function-declaration", *VARIANTS[variant],
                     f"-I{ENGINE / 'include'}", f"-I{ENGINE / 'src'}", f"-I{nn / 'include'}",
                     str(src)])
        if proc.returncode != 0:
            failures[src.name] = next((ln for ln in proc.stderr.splitlines() if "error" in ln),
                                      proc.stderr[-300:])
    print(f"\nESP-NN {version} ({status}), {variant}: {len(engine_sources()) - len(failures)}/"
          f"{len(engine_sources())} engine sources compile with -Wall -Wextra -Werror"
          + "".join(f"\n  {name}: {line}" for name, line in failures.items()))
    if status == "in-range":
        assert failures == {}
    elif status == "below":
        # what breaks is a missing ESP-NN function, nothing else (on S3-optimised builds the
        # engine does not call the broadcast-channel kernel, so that variant may compile)
        assert all("implicit declaration of function 'esp_nn_" in ln for ln in failures.values())
    else:
        pytest.skip(f"ESP-NN {version} is above the declared range")


@needs_checkout
def test_builder_table_mirrors_esp_nn_cmake() -> None:
    nn = Path(ESP_NN)
    from executorch_espnn.firmware import sources
    version = table.tree_version(nn)
    if version != sources.ESPNN_VERSION:
        pytest.skip(f"the table mirrors ESP-NN {sources.ESPNN_VERSION} (the pin); this checkout "
                    f"is {version}")
    lists = sh.esp_nn_cmake_selection(nn)
    assert set(lists) == {"c_srcs", "s3_srcs", "p4_srcs"}
    assert list(table.COMMON_SRCS) == lists["c_srcs"]
    assert list(table.CHIP_SRCS["esp32s3"]) == lists["s3_srcs"]
    assert list(table.CHIP_SRCS["esp32p4"]) == lists["p4_srcs"]
    assert set(table.CHIP_SRCS) == {"esp32s3", "esp32p4"}
    options = sh.esp_nn_cmake_options(nn)
    assert set(table.flags_for("esp32s3")) == set(options["esp32s3"])
    for chip in ("esp32", "esp32s2", "esp32c3", "esp32c6", "esp32p4"):
        assert set(table.flags_for(chip)) == set(options["other"])
    includes = re.search(r"INCLUDE_DIRS\s+([^)]*)\)", (nn / "CMakeLists.txt").read_text())
    assert includes is not None
    assert tuple(re.findall(r'"([^"]+)"', includes.group(1))) == table.INCLUDE_DIRS
    for chip in table.CHIPS:
        assert table.missing_sources(nn, chip) == []
