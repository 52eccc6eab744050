"""The package's non-Python parts (resources.py), the init scaffold, cmake-prefix and the
platform commands: fast checks in the checkout (tests/test_wheel.py repeats the end-to-end
ones from an installed wheel)."""

from __future__ import annotations

import io
import os
import re
import sys
from pathlib import Path

import pytest

from executorch_espnn import cli, platform_install, resources, scaffold
from executorch_espnn.errors import MissingResourceError, PlatformInstallError, ScaffoldError

ROOT = Path(__file__).resolve().parents[1]


def test_data_links_are_the_checkouts_top_level_parts() -> None:
    data = ROOT / "executorch_espnn" / resources.DATA
    names = sorted(p.name for p in data.iterdir())
    assert names == sorted(resources.CONTENTS)
    for name in resources.CONTENTS:
        link = data / name
        assert link.is_symlink() and link.resolve() == (ROOT / name).resolve(), name


def test_lookups_find_the_parts() -> None:
    assert (resources.component_dir() / "CMakeLists.txt").is_file()
    assert (resources.templates_dir() / "model_pte.h.j2").is_file()
    plat = resources.platform_dir()
    assert (plat / "platform.json").is_file() and (plat / "builder" / "main.py").is_file()
    assert (plat / "boards" / "host.json").is_file() and (plat / "espnn_component" / "Kconfig").is_file()
    assert (resources.cmake_prefix_path() / "executorch_espnn-config.cmake").is_file()


def test_a_missing_part_names_itself_and_the_fix(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(resources, "data_root", lambda: tmp_path)
    with pytest.raises(MissingResourceError) as err:
        resources.component_dir()
    assert f"{tmp_path / 'espnn_component'} is missing from the executorch_espnn package" in str(err.value)
    assert "pip install --force-reinstall executorch-espnn" in str(err.value)


def test_the_sdist_and_wheel_carry_what_the_links_name() -> None:
    manifest = (ROOT / "MANIFEST.in").read_text()
    for name in resources.CONTENTS:
        assert re.search(rf"^(graft|include) .*\b{re.escape(name)}\b", manifest, re.M), name
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert '"_data/**/*"' in pyproject


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_cmake_prefix_names_the_package_and_the_executorch_wheel() -> None:
    from executorch_espnn.host import executorch_dir

    code, out, _ = _cli("cmake-prefix")
    assert code == 0
    assert out.strip() == f"{resources.cmake_prefix_path()};{executorch_dir()}"


def test_platform_path_prints_the_platform() -> None:
    code, out, _ = _cli("platform", "path")
    assert code == 0 and Path(out.strip()) == resources.platform_dir()


def test_platform_install_without_platformio_says_how_to_get_it(monkeypatch: pytest.MonkeyPatch,
                                                                tmp_path: Path) -> None:
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(PlatformInstallError) as err:
        platform_install.find_pio()
    assert 'pip install "executorch-espnn[platformio]"' in str(err.value)
    code, _, stderr = _cli("platform", "install")
    assert code == 1 and "PlatformIO is not installed in this Python" in stderr


@pytest.mark.parametrize("framework", scaffold.FRAMEWORKS)
def test_init_writes_a_project(tmp_path: Path, framework: str) -> None:
    code, out, _ = _cli("init", str(tmp_path / "proj"), "--board", "esp32dev", "--framework", framework)
    assert code == 0, out
    proj = tmp_path / "proj"
    ini = (proj / "platformio.ini").read_text()
    assert "platform = executorch-espnn" in ini and f"framework = {framework}" in ini
    assert "[env:host]\nboard = host" in ini and "[env:esp32dev]\nboard = esp32dev" in ini
    assert "custom_executorch_model = model/model.py" in ini
    main = (proj / "src" / "main.cpp").read_text()
    assert ("void setup()" in main) == (framework == "arduino")
    assert ('extern "C" void app_main' in main) == (framework == "espidf")
    assert (proj / "src" / "CMakeLists.txt").is_file() == (framework == "espidf")
    # the same runner as the keyword-spotting example's, byte for byte: one runner, so a change
    # to either must be made to both
    runner = (proj / "test" / "test_custom_runner.py").read_text()
    assert runner == (ROOT / "examples" / "keyword_spotting" / "test" / "test_custom_runner.py").read_text()
    # the model file has the three functions, and they run
    ns: dict[str, object] = {}
    exec(compile((proj / "model" / "model.py").read_text(), "model.py", "exec"), ns)
    import torch

    m = ns["model"]()  # type: ignore[operator]
    (x,) = ns["example_inputs"]()  # type: ignore[operator]
    assert m(x).shape == (1, 4)
    assert len(ns["calibration_data"]()) == 8  # type: ignore[operator]
    assert isinstance(x, torch.Tensor)
    for line in out.splitlines()[:-1]:
        assert line.startswith("wrote ") and Path(line[6:]).is_file()


def test_init_never_overwrites_and_writes_nothing_then(tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    (proj / "src").mkdir(parents=True)
    (proj / "src" / "main.cpp").write_text("// mine\n")
    with pytest.raises(ScaffoldError) as err:
        scaffold.init(proj)
    assert "already has src/main.cpp" in str(err.value) and "never overwrites" in str(err.value)
    assert sorted(os.listdir(proj)) == ["src"] and (proj / "src" / "main.cpp").read_text() == "// mine\n"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--framework", "zephyr"], "invalid choice: 'zephyr'"),
        (["--board", "host"], "--board host: give a PlatformIO board id of the espressif32 platform"),
        (["--board", "my board"], "--board my board: give a PlatformIO board id"),
    ],
)
def test_init_refuses_bad_options(tmp_path: Path, args: list[str], expected: str,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    try:
        code, _, err = _cli("init", str(tmp_path / "p"), *args)
    except SystemExit as exc:  # argparse's own refusal
        code, err = int(exc.code or 0), capsys.readouterr().err
    assert code != 0 and expected in err
    assert not (tmp_path / "p").exists()


def test_init_into_a_file_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "f"
    f.write_text("x")
    with pytest.raises(ScaffoldError, match="is a file; name a new or empty folder"):
        scaffold.init(f)
