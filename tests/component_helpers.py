"""Helpers for the component's host tests: resolve a Kconfig configuration, build the C test
drivers against it with the stand-in ESP-IDF headers, and run them."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from executorch_espnn import component_sources, kconfig

ROOT = Path(__file__).resolve().parents[1]
COMPONENT = ROOT / "espnn_component"
KCONFIG = COMPONENT / "Kconfig"
CDIR = Path(__file__).resolve().parent / "component_c"
STANDIN = CDIR / "idf_standin"
# The ESP-IDF releases the stand-in headers can pretend to be (idf_standin/esp_idf_version.h):
# 5.x (ESP-IDF builds; the default) and 4.4 (Arduino-ESP32 2.0.x, espressif32 6.x's Arduino).
IDF_VERSIONS = ("5.3", "4.4")


def idf_version_defines(version: str) -> list[str]:
    """-D names that make the stand-in headers ESP-IDF `version` ("5.3", "4.4")."""
    major, minor = version.split(".")
    return [f"ESPNN_STANDIN_IDF_MAJOR={major}", f"ESPNN_STANDIN_IDF_MINOR={minor}"]
CFLAGS = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-g", "-O1"]
CXXFLAGS = ["-std=c++17", "-Wall", "-Wextra", "-Werror", "-g", "-O1"]
SANITIZE = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all"]


def write_sdkconfig(tmp: Path, options: Mapping[str, str], spiram: bool) -> dict[str, object]:
    """Resolve the component Kconfig with `options` (CONFIG_ lines) as ESP-IDF would and write
    the sdkconfig.h ESP-IDF would generate into tmp/include; returns the resolved values."""
    tmp.mkdir(parents=True, exist_ok=True)
    defaults = tmp / "sdkconfig.defaults"
    lines = [f"CONFIG_{k}={v}" for k, v in options.items()]
    if spiram:
        lines.append("CONFIG_SPIRAM=y")
    defaults.write_text("\n".join(lines) + "\n")
    values = kconfig.resolve(KCONFIG, [defaults])
    header = kconfig.render_header(values, tmp / "include" / "sdkconfig.h")
    if spiram:
        header.write_text(header.read_text() + "#define CONFIG_SPIRAM 1\n")
    return dict(values)


def compile_c(
    out: Path,
    sources: Sequence[Path],
    includes: Sequence[Path],
    defines: Sequence[str] = (),
    extra: Sequence[str] = (),
) -> Path:
    cc = shutil.which("gcc")
    assert cc, "gcc is needed for the component's C tests"
    cmd = [
        cc,
        *CFLAGS,
        *SANITIZE,
        *(f"-D{d}" for d in defines),
        *(f"-I{i}" for i in includes),
        *map(str, sources),
        *extra,
        "-o",
        str(out),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise AssertionError(f"compile failed: {' '.join(cmd)}\n{proc.stderr}")
    return out


def build_mem_driver(tmp: Path, world: str, options: Mapping[str, str], spiram: bool,
                     idf_version: str = IDF_VERSIONS[0]) -> Path:
    """The memory-policy driver linked with the ESP-IDF world (over the stand-in heap_caps, as
    ESP-IDF `idf_version`) or the host world, configured by `options`."""
    write_sdkconfig(tmp, options, spiram)
    mem = COMPONENT / "memory"
    includes = [tmp / "include", COMPONENT / "include", mem, CDIR]
    if world == "idf":
        # ESP-IDF names its header sdkconfig.h and defines ESP_PLATFORM
        sources = [
            *component_sources.load(COMPONENT).mem_idf_sources,
            CDIR / "heap_caps_standin.c",
            CDIR / "esp_log_standin.c",
        ]
        return compile_c(
            tmp / "mem_driver",
            [*sources, CDIR / "mem_policy_driver.c"],
            [*includes, STANDIN],
            ["ESP_PLATFORM", "ESPNN_TEST_IDF", *idf_version_defines(idf_version)],
        )
    (tmp / "include" / "sdkconfig.h").rename(tmp / "include" / "espnn_sdkconfig.h")
    sources = list(component_sources.load(COMPONENT).mem_host_sources)
    return compile_c(tmp / "mem_driver", [*sources, CDIR / "mem_policy_driver.c"], includes)


def run_driver(exe: Path, commands: Sequence[str]) -> list[str]:
    proc = subprocess.run(
        [str(exe)], input="\n".join(commands) + "\n", capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, f"driver failed ({proc.returncode}): {proc.stderr}"
    return proc.stdout.splitlines()


def cmake() -> str:
    return str(Path(sys.executable).with_name("cmake"))


def idf_registration(tmp_path: Path, *, pal: bool, early: bool = False) -> dict[str, list[list[str]]]:
    """Run the component's CMakeLists as ESP-IDF would; NAME -> list of recorded calls."""
    out = tmp_path / f"record-{pal}-{early}.txt"
    cmd = [cmake(), f"-DCOMPONENT_DIR={COMPONENT}", f"-DOUT={out}"]
    cmd += ["-DPAL=ON"] if pal else []
    cmd += ["-DEARLY=ON"] if early else []
    proc = subprocess.run(
        [*cmd, "-P", str(CDIR / "fake_idf.cmake")], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    calls: dict[str, list[list[str]]] = {}
    for line in out.read_text().splitlines():
        name, _, value = line.partition("=")
        calls.setdefault(name, []).append([v for v in value.split(";") if v])
    assert calls["DONE"] == [["1"]]
    return calls
