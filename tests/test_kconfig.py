"""The component's Kconfig and its resolution outside ESP-IDF (executorch_espnn.kconfig)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import kconfiglib
import pytest

from executorch_espnn import kconfig
from executorch_espnn.errors import KconfigError
from tests.component_helpers import COMPONENT, KCONFIG, compile_c

PSRAM_OPTIONS = [
    "ESPNN_ET_ARENA_IN_PSRAM",
    "ESPNN_ET_PLANNED_IN_PSRAM",
    "ESPNN_ET_WEIGHTS_TO_PSRAM",
]


def load(tmp_path: Path) -> kconfiglib.Kconfig:
    wrapper = kconfig.standalone_kconfig(KCONFIG, tmp_path)
    return kconfiglib.Kconfig(str(wrapper), warn_to_stderr=False)


def sdk(tmp_path: Path, name: str, *lines: str) -> Path:
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return p


def test_kconfig_loads_without_warnings(tmp_path: Path) -> None:
    kconf = load(tmp_path)
    assert kconf.warnings == []
    menus = [n.prompt[0] for n in kconf.node_iter() if n.item == kconfiglib.MENU]
    assert "ExecuTorch ESP-NN" in menus


def test_follows_esp_idf_kconfig_rules() -> None:
    # ESP-IDF's kconfcheck: one prefix per menu, names <= 50 chars, 4-space indents, <= 120 cols
    text = KCONFIG.read_text()
    names = re.findall(r"^\s*(?:config|choice|menuconfig)\s+(\w+)", text, re.M)
    assert names and all(n.startswith("ESPNN_ET_") and len(n) <= 50 for n in names)
    for line in text.splitlines():
        assert len(line) <= 120 and line == line.rstrip()
        indent = len(line) - len(line.lstrip(" "))
        assert "\t" not in line and indent % 4 == 0, line


def test_defaults_never_require_psram(tmp_path: Path) -> None:
    values = kconfig.resolve(KCONFIG, [])
    assert values == {
        "CONFIG_ESPNN_ET_ARENA_IN_AUTO": True,
        "CONFIG_ESPNN_ET_ARENA_IN_INTERNAL": False,
        "CONFIG_ESPNN_ET_ARENA_IN_PSRAM": False,
        "CONFIG_ESPNN_ET_PLANNED_IN_AUTO": True,
        "CONFIG_ESPNN_ET_PLANNED_IN_INTERNAL": False,
        "CONFIG_ESPNN_ET_PLANNED_IN_PSRAM": False,
        "CONFIG_ESPNN_ET_WEIGHTS_IN_FLASH": True,
        "CONFIG_ESPNN_ET_WEIGHTS_TO_INTERNAL": False,
        "CONFIG_ESPNN_ET_WEIGHTS_TO_PSRAM": False,
        "CONFIG_ESPNN_ET_INTERNAL_RAM_CAP": 0,
        "CONFIG_ESPNN_ET_PROVIDE_PAL": True,
        "CONFIG_ESPNN_ET_LOG_LEVEL": 2,
        "CONFIG_ESPNN_ET_LOG_LEVEL_NONE": False,
        "CONFIG_ESPNN_ET_LOG_LEVEL_ERROR": False,
        "CONFIG_ESPNN_ET_LOG_LEVEL_INFO": True,
        "CONFIG_ESPNN_ET_LOG_LEVEL_DEBUG": False,
        "CONFIG_ESPNN_ET_SERIALIZE_EXECUTE": True,
        "CONFIG_ESPNN_ET_PROFILE": False,
        "CONFIG_ESPNN_ET_ALL_OPS": False,
    }
    # the same with PSRAM enabled: automatic stays the default
    assert kconfig.resolve(KCONFIG, [], {"SPIRAM": True}) == values


def test_every_psram_placement_depends_on_spiram(tmp_path: Path) -> None:
    kconf = load(tmp_path)
    psram_syms = [s for n, s in kconf.syms.items() if n.startswith("ESPNN_ET_") and "PSRAM" in n]
    assert sorted(s.name for s in psram_syms) == sorted(PSRAM_OPTIONS)
    for sym in psram_syms:
        assert kconf.syms["SPIRAM"] in kconfiglib.expr_items(sym.direct_dep), sym.name
        assert sym.visibility == 0, f"{sym.name} selectable without SPIRAM"
    kconf.syms["SPIRAM"].set_value(2)
    assert all(sym.visibility == 2 for sym in psram_syms)


@pytest.mark.parametrize("option", PSRAM_OPTIONS)
def test_psram_choice_without_spiram_is_refused(tmp_path: Path, option: str) -> None:
    f = sdk(tmp_path, "sdkconfig.defaults", "# comment", f"CONFIG_{option}=y")
    with pytest.raises(KconfigError) as e:
        kconfig.resolve(KCONFIG, [f])
    assert str(e.value) == (
        f"{f}:2: CONFIG_{option}=y cannot be used: it needs CONFIG_SPIRAM, which is off; set "
        "CONFIG_SPIRAM=y when the board has it, or choose another option"
    )


@pytest.mark.parametrize("option", PSRAM_OPTIONS)
def test_psram_choice_with_spiram_is_taken(tmp_path: Path, option: str) -> None:
    f = sdk(tmp_path, "sdkconfig.defaults", "CONFIG_SPIRAM=y", f"CONFIG_{option}=y")
    assert kconfig.resolve(KCONFIG, [f])[f"CONFIG_{option}"] is True
    g = sdk(tmp_path, "sdkconfig.esp32s3", f"CONFIG_{option}=y")
    assert kconfig.resolve(KCONFIG, [g], {"CONFIG_SPIRAM": True})[f"CONFIG_{option}"] is True


def test_later_files_override_earlier_ones_and_foreign_options_are_ignored(tmp_path: Path) -> None:
    a = sdk(
        tmp_path,
        "sdkconfig.defaults",
        "CONFIG_ESPNN_ET_ARENA_IN_INTERNAL=y",
        "CONFIG_ESPNN_ET_INTERNAL_RAM_CAP=1000",
        "CONFIG_FREERTOS_HZ=1000",
    )
    b = sdk(
        tmp_path,
        "sdkconfig.host",
        "CONFIG_ESPNN_ET_ARENA_IN_AUTO=y",
        "# CONFIG_ESPNN_ET_SERIALIZE_EXECUTE is not set",
        "CONFIG_ESPNN_ET_LOG_LEVEL_DEBUG=y",
    )
    values = kconfig.resolve(KCONFIG, [a, b])
    assert values["CONFIG_ESPNN_ET_ARENA_IN_AUTO"] is True
    assert values["CONFIG_ESPNN_ET_ARENA_IN_INTERNAL"] is False
    assert values["CONFIG_ESPNN_ET_INTERNAL_RAM_CAP"] == 1000
    assert values["CONFIG_ESPNN_ET_SERIALIZE_EXECUTE"] is False
    assert values["CONFIG_ESPNN_ET_LOG_LEVEL"] == 3
    assert values["CONFIG_ESPNN_ET_LOG_LEVEL_DEBUG"] is True
    assert values["CONFIG_ESPNN_ET_LOG_LEVEL_INFO"] is False


def test_overrides_come_last(tmp_path: Path) -> None:
    a = sdk(tmp_path, "sdkconfig.defaults", "CONFIG_ESPNN_ET_INTERNAL_RAM_CAP=1000")
    values = kconfig.resolve(
        KCONFIG, [a], {"ESPNN_ET_INTERNAL_RAM_CAP": 2048, "CONFIG_ESPNN_ET_PROVIDE_PAL": False}
    )
    assert values["CONFIG_ESPNN_ET_INTERNAL_RAM_CAP"] == 2048
    assert values["CONFIG_ESPNN_ET_PROVIDE_PAL"] is False


def test_unknown_option_is_named_with_a_suggestion(tmp_path: Path) -> None:
    f = sdk(tmp_path, "sdkconfig.defaults", "CONFIG_ESPNN_ET_ARENA_IN_PSRM=y")
    with pytest.raises(
        KconfigError,
        match=re.escape(
            f"{f}:1: unknown option CONFIG_ESPNN_ET_ARENA_IN_PSRM; did you mean "
            "CONFIG_ESPNN_ET_ARENA_IN_PSRAM?"
        ),
    ):
        kconfig.resolve(KCONFIG, [f])


def test_cap_out_of_range_or_not_a_number(tmp_path: Path) -> None:
    f = sdk(tmp_path, "sdkconfig.defaults", "CONFIG_ESPNN_ET_INTERNAL_RAM_CAP=99999999")
    with pytest.raises(
        KconfigError,
        match=re.escape(
            f"{f}:1: CONFIG_ESPNN_ET_INTERNAL_RAM_CAP=99999999 cannot be used: it is outside the "
            "allowed range 0..16777216"
        ),
    ):
        kconfig.resolve(KCONFIG, [f])
    g = sdk(tmp_path, "sdkconfig.other", "CONFIG_ESPNN_ET_INTERNAL_RAM_CAP=lots")
    with pytest.raises(
        KconfigError,
        match=r"sdkconfig.other:1: the value 'lots' is invalid for "
        r"ESPNN_ET_INTERNAL_RAM_CAP .*which has type int",
    ):
        kconfig.resolve(KCONFIG, [g])


def test_bad_bool_value_and_missing_file_and_unknown_override(tmp_path: Path) -> None:
    f = sdk(tmp_path, "sdkconfig.defaults", "CONFIG_ESPNN_ET_PROVIDE_PAL=on")
    with pytest.raises(
        KconfigError,
        match=r"sdkconfig.defaults:1: 'on' is not a valid value for "
        r"the bool symbol ESPNN_ET_PROVIDE_PAL",
    ):
        kconfig.resolve(KCONFIG, [f])
    with pytest.raises(KconfigError, match=r"sdkconfig file .*nope does not exist"):
        kconfig.resolve(KCONFIG, [tmp_path / "nope"])
    with pytest.raises(KconfigError, match="overrides: unknown option CONFIG_ESPNN_ET_NOPE"):
        kconfig.resolve(KCONFIG, [], {"ESPNN_ET_NOPE": True})
    with pytest.raises(
        KconfigError, match="overrides name options the Kconfig does not define: FREERTOS_HZ"
    ):
        kconfig.resolve(KCONFIG, [], {"CONFIG_FREERTOS_HZ": 1000})
    with pytest.raises(KconfigError, match="does not exist; pass espnn_component/Kconfig"):
        kconfig.resolve(tmp_path / "Kconfig", [])


def test_broken_kconfig_is_reported(tmp_path: Path) -> None:
    bad = tmp_path / "Kconfig"
    bad.write_text(
        'menu "x"\n    config ESPNN_ET_A\n        bool "a"\n        depends on NOPE\nendmenu\n'
    )
    with pytest.raises(KconfigError, match="refers to symbols nothing defines: NOPE"):
        kconfig.resolve(bad, [])


PRINT_CFG = r"""
#include <stdio.h>
#include "espnn_config.h"
int main(void) {
    printf("%d %d %d %d %d %d %d %d %d\n", ESPNN_CFG_FROM_KCONFIG, ESPNN_CFG_ARENA_PLACEMENT,
           ESPNN_CFG_PLANNED_PLACEMENT, ESPNN_CFG_WEIGHTS, (int)ESPNN_CFG_INTERNAL_RAM_CAP,
           ESPNN_CFG_PROVIDE_PAL, ESPNN_CFG_LOG_LEVEL, ESPNN_CFG_SERIALIZE_EXECUTE,
           ESPNN_CFG_SPIRAM);
    return 0;
}
"""


def config_macros(tmp_path: Path, header_dir: Path | None) -> list[int]:
    src = tmp_path / "print_cfg.c"
    src.write_text(PRINT_CFG)
    includes = [COMPONENT / "include", *([header_dir] if header_dir else [])]
    exe = compile_c(tmp_path / "print_cfg", [src], includes)
    return [
        int(x)
        for x in subprocess.run(
            [str(exe)], capture_output=True, text=True, check=True
        ).stdout.split()
    ]


def test_header_drives_the_c_configuration(tmp_path: Path) -> None:
    f = sdk(
        tmp_path,
        "sdkconfig.defaults",
        "CONFIG_ESPNN_ET_ARENA_IN_INTERNAL=y",
        "CONFIG_ESPNN_ET_WEIGHTS_TO_INTERNAL=y",
        "CONFIG_ESPNN_ET_INTERNAL_RAM_CAP=123456",
        "# CONFIG_ESPNN_ET_PROVIDE_PAL is not set",
        "CONFIG_ESPNN_ET_LOG_LEVEL_ERROR=y",
        "CONFIG_ESPNN_ET_SERIALIZE_EXECUTE=n",
    )
    values = kconfig.resolve(KCONFIG, [f])
    header = kconfig.render_header(values, tmp_path / "gen" / "espnn_sdkconfig.h", sources=[f])
    text = header.read_text()
    assert "#define CONFIG_ESPNN_ET_INTERNAL_RAM_CAP 123456" in text
    assert "CONFIG_ESPNN_ET_PROVIDE_PAL" not in text  # bools that are off stay undefined
    assert "CONFIG_ESPNN_ET_SERIALIZE_EXECUTE" not in text
    assert config_macros(tmp_path, header.parent) == [1, 1, 0, 1, 123456, 0, 1, 0, 0]


def test_c_fallback_equals_the_kconfig_defaults(tmp_path: Path) -> None:
    # No header at all (a plain CMake build): espnn_config.h must repeat the Kconfig defaults.
    fallback = config_macros(tmp_path, None)
    header = kconfig.render_header(
        kconfig.resolve(KCONFIG, []), tmp_path / "gen" / "espnn_sdkconfig.h"
    )
    from_kconfig = config_macros(tmp_path, header.parent)
    assert fallback[0] == 0 and from_kconfig[0] == 1
    assert fallback[1:] == from_kconfig[1:]


def test_header_is_rewritten_only_when_it_changes(tmp_path: Path) -> None:
    out = tmp_path / "espnn_sdkconfig.h"
    values = kconfig.resolve(KCONFIG, [])
    kconfig.render_header(values, out)
    past = time.time() - 100
    os.utime(out, (past, past))
    kconfig.render_header(values, out)
    assert out.stat().st_mtime == pytest.approx(past)
    kconfig.render_header({**values, "CONFIG_ESPNN_ET_INTERNAL_RAM_CAP": 8}, out)
    assert out.stat().st_mtime > past + 50
    with pytest.raises(KconfigError, match="no CONFIG_ESPNN_ET_\\* values"):
        kconfig.render_header({"CONFIG_SPIRAM": True}, out)


def test_standalone_wrapper_rejects_unquotable_paths(tmp_path: Path) -> None:
    odd = tmp_path / 'a"b'
    odd.mkdir()
    (odd / "Kconfig").write_text(KCONFIG.read_text())
    with pytest.raises(KconfigError, match="cannot quote"):
        kconfig.standalone_kconfig(odd / "Kconfig", tmp_path / "out")


def test_standalone_wrapper_spiram_default_follows_the_board(tmp_path: Path) -> None:
    for has_psram, visible in ((False, 0), (True, 2)):
        wrapper = kconfig.standalone_kconfig(
            KCONFIG, tmp_path / str(has_psram), spiram_default=has_psram
        )
        kconf = kconfiglib.Kconfig(str(wrapper), warn_to_stderr=False)
        assert kconf.warnings == []
        assert kconf.syms["SPIRAM"].tri_value == visible
        assert kconf.syms["ESPNN_ET_ARENA_IN_PSRAM"].visibility == visible
        # automatic stays the default either way
        assert kconf.syms["ESPNN_ET_ARENA_IN_AUTO"].tri_value == 2


# --- the program the builder runs, and the builder's side of it ---------------------------------


def test_header_command_reports_every_file_it_read(tmp_path: Path) -> None:
    defaults = sdk(tmp_path, "sdkconfig.defaults", "CONFIG_ESPNN_ET_INTERNAL_RAM_CAP=4096")
    out = tmp_path / "out"
    rc = kconfig.main(["header", "--kconfig", str(KCONFIG), "--config", str(defaults), "--set", "SPIRAM=n",
                       "--header", str(out / "espnn_sdkconfig.h"), "--json", str(out / "v.json")])
    assert rc == 0
    data = json.loads((out / "v.json").read_text())
    assert data["values"] == kconfig.resolve(KCONFIG, [defaults], {"SPIRAM": False})
    assert data["values"]["CONFIG_ESPNN_ET_INTERNAL_RAM_CAP"] == 4096
    read = {Path(p) for p in data["inputs"]}
    assert {KCONFIG.resolve(), defaults.resolve(), Path(kconfig.__file__).resolve()} <= read
    assert any(p.name == "espnn_sdkconfig.h.j2" for p in read)
    assert all(p.is_file() for p in read)  # nothing temporary (the wrapper lives in a temp dir)
    assert "#define CONFIG_ESPNN_ET_INTERNAL_RAM_CAP 4096" in (out / "espnn_sdkconfig.h").read_text()


def test_header_command_prints_one_error_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = sdk(tmp_path, "sdkconfig.defaults", "CONFIG_ESPNN_ET_ARENA_IN_PSRAM=y")
    rc = kconfig.main(["header", "--kconfig", str(KCONFIG), "--config", str(bad), "--set", "SPIRAM=n",
                       "--header", str(tmp_path / "h.h"), "--json", str(tmp_path / "v.json")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1
    assert err[0].startswith(f"Error: {bad}:1: CONFIG_ESPNN_ET_ARENA_IN_PSRAM=y cannot be used")
    assert "set CONFIG_SPIRAM=y" in err[0]
    assert not (tmp_path / "v.json").exists()


def test_builder_resolves_in_a_child_and_only_when_an_input_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from builder.espnn_pio import kconfig_glue
    runs: list[list[str]] = []
    real_run = subprocess.run

    def counting_run(cmd: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
        runs.append(cmd)
        return real_run(cmd, **kw)  # type: ignore[call-overload,no-any-return]

    monkeypatch.setattr(kconfig_glue.subprocess, "run", counting_run)
    project = tmp_path / "proj"
    project.mkdir()

    def setup() -> Any:
        return kconfig_glue.KconfigSetup(KCONFIG, tmp_path / "config", project / "sdkconfig.host",
                                         project / "sdkconfig.defaults", False, COMPONENT.parent,
                                         sys.executable)

    assert setup().placement() == "auto" and len(runs) == 1
    assert setup().placement() == "auto" and len(runs) == 1
    sdk(project, "sdkconfig.defaults", "CONFIG_ESPNN_ET_ARENA_IN_INTERNAL=y")  # a new input
    assert setup().placement() == "internal" and len(runs) == 2
    sdk(project, "sdkconfig.host", "CONFIG_ESPNN_ET_ARENA_IN_AUTO=y")  # takes over from defaults
    assert setup().placement() == "auto" and len(runs) == 3
    sdk(project, "sdkconfig.host", "CONFIG_ESPNN_ET_ARENA_IN_PSRAM=y")
    with pytest.raises(kconfig_glue.KconfigGlueError, match=r"sdkconfig\.host:1: .*needs CONFIG_SPIRAM.*"
                       r"this board declares no PSRAM; .*-DBOARD_HAS_PSRAM"):
        setup().values()
