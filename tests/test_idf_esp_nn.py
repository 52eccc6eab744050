"""Where an ESP-IDF build's ESP-NN comes from (builder/espnn_pio/esp_frameworks.py): with a tree
the user names (custom_executorch_espnn_dir / ESPNN_ESP_NN_DIR) it is the ESP-IDF component
`esp-nn` and the component's manifest asks the registry for nothing; without one, the manifest
is espnn_component's own and ESP-IDF's component manager resolves espressif/esp-nn, as ESP-IDF
users expect.  (The whole build: tests/test_platformio_esp.py with the stand-in espressif32,
tests/test_real_builders.py with the real one, ESP-IDF and its component manager.)"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from devkit import source_helpers as sh
from executorch_espnn.firmware import sources

ROOT = Path(__file__).resolve().parents[1]
COMPONENT = ROOT / "espnn_component"


@pytest.fixture(scope="module")
def esp_frameworks() -> Any:
    from builder.espnn_pio import esp_frameworks as module

    return module


class _Platform:
    def get_dir(self) -> str:
        return str(ROOT)


class _Env(dict[str, Any]):
    """What the functions read of an SCons environment: $BUILD_DIR, the resolved trees."""

    def __init__(self, build: Path, esp_nn: Path, origin: str) -> None:
        pins = sources.pins("1.5.1", "0" * 40)
        super().__init__(ESPNN_SOURCES=sources.SourceSet(
            sources.SourceTree(pins[0], build / "et", "cache"),
            sources.SourceTree(pins[1], build / "fb", "cache"),
            sources.SourceTree(pins[2], esp_nn, origin)))
        self.build = build

    def subst(self, text: str) -> str:
        return text.replace("$BUILD_DIR", str(self.build))

    def PioPlatform(self) -> _Platform:
        return _Platform()


@pytest.mark.parametrize("origin", ["download", "cache"])
def test_pinned_esp_nn_comes_from_the_component_manager(esp_frameworks: Any, tmp_path: Path,
                                                        origin: str) -> None:
    env = _Env(tmp_path / "build", sh.esp_nn_tree(tmp_path / "esp-nn-d45b843"), origin)
    assert esp_frameworks.local_esp_nn(env) is None
    folder = esp_frameworks.idf_component_folder(env)
    assert (folder / "idf_component.yml").read_bytes() == (COMPONENT / "idf_component.yml").read_bytes()
    manifest = yaml.safe_load((folder / "idf_component.yml").read_text())
    assert "espressif/esp-nn" in manifest["dependencies"]


@pytest.mark.parametrize("origin", ["option", "env"])
def test_named_esp_nn_is_a_local_component(esp_frameworks: Any, tmp_path: Path, origin: str) -> None:
    tree = sh.esp_nn_tree(tmp_path / "esp-nn-d45b843")
    env = _Env(tmp_path / "build", tree, origin)
    assert esp_frameworks.local_esp_nn(env) == tree
    folder = esp_frameworks.idf_component_folder(env)
    own = yaml.safe_load((COMPONENT / "idf_component.yml").read_text())
    given = yaml.safe_load((folder / "idf_component.yml").read_text())
    del own["dependencies"]["espressif/esp-nn"]
    assert given == own  # the same manifest, minus what the registry would serve
    # ESP-IDF names a component after its folder: esp-nn, what the component's PRIV_REQUIRES
    # names, whatever the tree's folder is called
    link = esp_frameworks.local_esp_nn_component(env, tree)
    assert link.name == "esp-nn" and link.resolve() == tree.resolve()
    assert "esp-nn" in (COMPONENT / "cmake" / "idf.cmake").read_text().split("PRIV_REQUIRES")[1].split()
    # a second build leaves both alone (a no-op build stays one)
    before = (folder / "idf_component.yml").stat().st_mtime_ns
    assert esp_frameworks.idf_component_folder(env) == folder
    assert esp_frameworks.local_esp_nn_component(env, tree) == link
    assert (folder / "idf_component.yml").stat().st_mtime_ns == before


def test_manifest_without_esp_nn_needs_the_dependency(esp_frameworks: Any) -> None:
    with pytest.raises(ValueError, match="has no espressif/esp-nn dependency"):
        esp_frameworks.manifest_without_esp_nn("dependencies:\n  idf: '>=5.1'\n")


# --- ESP-IDF's own component manager (gated) --------------------------------------------------

IDF_ENV = "ESPNN_ESP_IDF_DIR"  # ESP-IDF 5.x (its tools/ and components/ folders)
IDF_PYTHON_ENV = "ESPNN_IDF_PYTHON"  # a Python with idf-component-manager (pip install it)


def _component_manager() -> tuple[Path, str]:
    missing = [v for v in (IDF_ENV, IDF_PYTHON_ENV) if not os.environ.get(v)]
    if missing:
        pytest.skip(f"{' and '.join(missing)} not set: set {IDF_ENV} to an ESP-IDF 5.x tree and "
                    f"{IDF_PYTHON_ENV} to a Python with idf-component-manager installed")
    return Path(os.environ[IDF_ENV]), os.environ[IDF_PYTHON_ENV]


def _idf_version(idf: Path) -> str:
    text = (idf / "components" / "esp_common" / "include" / "esp_idf_version.h").read_text()
    parts = [re.search(rf"#define ESP_IDF_VERSION_{k}\s+(\d+)", text) for k in ("MAJOR", "MINOR", "PATCH")]
    return ".".join(m.group(1) for m in parts if m)


def _prepare(tmp: Path, components: dict[str, Path]) -> subprocess.CompletedProcess[str]:
    """What ESP-IDF 5.x's tools/cmake/build.cmake runs before it adds components: the component
    manager over the local components' manifests (interface version 4, ESP-IDF 5.2 on)."""
    idf, python = _component_manager()
    project = tmp / "project"
    (project / "main").mkdir(parents=True)
    (project / "main" / "CMakeLists.txt").write_text('idf_component_register(SRCS "main.c")\n')
    (tmp / "sdkconfig.json").write_text("{}\n")
    listing = tmp / "local_components.yml"
    listing.write_text("components:\n" + "".join(
        f'  - name: "{name}"\n    path: "{path}"\n'
        for name, path in {"main": project / "main", **components}.items()))
    return subprocess.run(
        [python, "-m", "idf_component_manager.prepare_components", f"--project_dir={project}",
         f"--lock_path={project / 'dependencies.lock'}",
         f"--sdkconfig_json_file={tmp / 'sdkconfig.json'}", "--interface_version=4",
         "prepare_dependencies", f"--local_components_list_file={listing}",
         f"--managed_components_list_file={tmp / 'managed.cmake'}"],
        cwd=project, capture_output=True, text=True, timeout=300,
        env={**os.environ, "IDF_PATH": str(idf), "IDF_TARGET": "esp32s3",
             "IDF_VERSION": _idf_version(idf)})


def test_component_manager_needs_no_registry_with_a_local_esp_nn(esp_frameworks: Any,
                                                                 tmp_path: Path) -> None:
    """ESP-IDF's component manager, given the component's generated manifest and the local
    ESP-NN as the component esp-nn, solves offline: it resolves only `idf` and downloads
    nothing; esp-nn is the local tree at its manifest's version."""
    _component_manager()
    tree = sh.esp_nn_tree(tmp_path / "esp-nn-d45b843")
    env = _Env(tmp_path / "build", tree, "env")
    components = {"executorch_espnn": esp_frameworks.idf_component_folder(env),
                  "esp-nn": esp_frameworks.local_esp_nn_component(env, tree)}
    proc = _prepare(tmp_path, components)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    managed = (tmp_path / "managed.cmake").read_text()
    assert 'set(managed_components "")' in managed  # nothing fetched
    assert 'idf_component_set_property(esp-nn COMPONENT_VERSION "1.2.3")' in managed
    lock = yaml.safe_load((tmp_path / "project" / "dependencies.lock").read_text())
    assert list(lock["dependencies"]) == ["idf"]


def test_component_manager_resolves_esp_nn_without_a_local_tree(esp_frameworks: Any,
                                                                tmp_path: Path) -> None:
    """Without a local tree the manifest is the component's: the component manager goes to
    the registry for espressif/esp-nn (online it becomes the managed component; offline it
    stops saying it cannot reach the registry for esp-nn)."""
    _component_manager()
    env = _Env(tmp_path / "build", sh.esp_nn_tree(tmp_path / "esp-nn-d45b843"), "download")
    proc = _prepare(tmp_path, {"executorch_espnn": esp_frameworks.idf_component_folder(env)})
    if proc.returncode == 0:
        assert "espressif__esp-nn" in (tmp_path / "managed.cmake").read_text()
    else:
        out = proc.stdout + proc.stderr
        assert "component registry" in out and "espressif/esp-nn" in out, out


class _Config:
    def __init__(self, values: dict[str, str], cache: Path) -> None:
        self.values, self.cache = values, cache

    def get(self, section: str, name: str, default: Any = None) -> Any:
        if section == "platformio" and name == "cache_dir":
            return str(self.cache)
        return self.values.get(name, default) if section == "env:board" else default


class _ModelLessEnv(dict[str, Any]):
    """An ESP-IDF build without a model: the source step did not run (no ESPNN_SOURCES)."""

    def __init__(self, tmp: Path, options: dict[str, str]) -> None:
        super().__init__(PIOENV="board")
        self.tmp, self.config = tmp, _Config(options, tmp / "cache")

    def subst(self, text: str) -> str:
        return text.replace("$BUILD_DIR", str(self.tmp / "build")).replace("$PROJECT_DIR", str(self.tmp))

    def GetProjectConfig(self) -> _Config:
        return self.config

    def PioPlatform(self) -> _Platform:
        return _Platform()


def test_model_less_build_keeps_the_named_esp_nn_local(esp_frameworks: Any, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a model no source step runs; the tree named by the option (relative to the
    project) or the variable still replaces the registry's espressif/esp-nn."""
    monkeypatch.delenv("ESPNN_ESP_NN_DIR", raising=False)
    tree = sh.esp_nn_tree(tmp_path / "trees" / "esp-nn-d45b843")
    by_option = _ModelLessEnv(tmp_path, {"custom_executorch_espnn_dir": "trees/esp-nn-d45b843"})
    assert esp_frameworks.local_esp_nn(by_option) == tree.resolve()
    manifest = yaml.safe_load((esp_frameworks.idf_component_folder(by_option) / "idf_component.yml").read_text())
    assert "espressif/esp-nn" not in (manifest.get("dependencies") or {})

    monkeypatch.setenv("ESPNN_ESP_NN_DIR", str(tree))
    assert esp_frameworks.local_esp_nn(_ModelLessEnv(tmp_path / "p2", {})) == tree.resolve()
    monkeypatch.delenv("ESPNN_ESP_NN_DIR")
    assert esp_frameworks.local_esp_nn(_ModelLessEnv(tmp_path / "p3", {})) is None


def test_model_less_build_names_a_missing_esp_nn_tree(esp_frameworks: Any, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ESPNN_ESP_NN_DIR", str(tmp_path / "nowhere"))
    with pytest.raises(sources.SourceError, match=r"ESPNN_ESP_NN_DIR = .*nowhere: no such folder"):
        esp_frameworks.local_esp_nn(_ModelLessEnv(tmp_path, {}))
