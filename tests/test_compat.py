"""The supported ExecuTorch/torch/torchao releases: the check at import, its message, and that
every other place that names them agrees with executorch_espnn/compat.py."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
import warnings
from importlib import metadata
from pathlib import Path

import pytest

from builder.espnn_pio import esp_frameworks
from executorch_espnn import compat
from executorch_espnn.firmware import artifact as lower_driver
from executorch_espnn.firmware import sources
from executorch_espnn.version import __version__

ROOT = Path(__file__).resolve().parents[1]


def _lookup(found: dict[str, str]) -> compat.VersionLookup:
    def lookup(name: str) -> str:
        if name not in found:
            raise metadata.PackageNotFoundError(name)
        return found[name]

    return lookup


SUPPORTED_NOW = {"executorch": "1.5.1", "torch": "2.13.0+cpu", "torchao": "0.18.0"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1.5.1", (1, 5, 1)),
        ("1.5.1+cpu", (1, 5, 1)),
        ("2.13", (2, 13, 0)),
        ("0.18.0.dev20260101", (0, 18, 0)),
        ("1.6.0rc1", (1, 6, 0)),
        ("1.6.0a0+git3b60683", (1, 6, 0)),
    ],
)
def test_release_reads_the_leading_numbers(text: str, expected: tuple[int, ...]) -> None:
    assert compat.release(text) == expected


def test_the_installed_releases_pass() -> None:
    found = {d.distribution: metadata.version(d.distribution) for d in compat.SUPPORTED}
    assert compat.check(_lookup(found), env={}) == []
    assert compat.check(_lookup(SUPPORTED_NOW), env={}) == []


@pytest.mark.parametrize("found", ["1.6.0", "1.5.0", "1.5.2", "2.0.0+cpu"])
def test_another_executorch_is_refused_naming_both_versions_and_the_fix(found: str) -> None:
    with pytest.raises(compat.IncompatibleVersionError) as err:
        compat.check(_lookup({**SUPPORTED_NOW, "executorch": found}), env={})
    msg = str(err.value)
    assert f"executorch-espnn {__version__} supports executorch ==1.5.1" in msg
    assert f"but executorch {found} is installed" in msg
    assert 'pip install "executorch==1.5.1"' in msg
    assert "docs/compatibility.md" in msg and compat.SKIP_ENV in msg


def test_torch_and_torchao_outside_the_range_are_refused() -> None:
    with pytest.raises(compat.IncompatibleVersionError) as err:
        compat.check(_lookup({**SUPPORTED_NOW, "torch": "2.14.1", "torchao": "0.19.0"}), env={})
    lines = str(err.value).splitlines()
    assert len(lines) == 2
    assert "torch 2.14.1 is installed" in lines[0] and 'pip install "torch==2.13.0"' in lines[0]
    assert "torchao 0.19.0 is installed" in lines[1] and 'pip install "torchao>=0.18,<0.19"' in lines[1]


def test_a_missing_dependency_is_not_this_checks_business() -> None:
    # the payload tools run without torch; the lowering names what to install when it needs it
    assert compat.check(_lookup({}), env={}) == []


def test_the_skip_variable_turns_the_error_into_a_warning() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        problems = compat.check(_lookup({**SUPPORTED_NOW, "executorch": "1.6.0"}), env={compat.SKIP_ENV: "1"})
    assert len(problems) == 1
    assert [str(w.message) for w in caught] == problems
    with pytest.raises(compat.IncompatibleVersionError):  # "0" is not a yes
        compat.check(_lookup({**SUPPORTED_NOW, "executorch": "1.6.0"}), env={compat.SKIP_ENV: "0"})


_SIMULATE = """
import importlib.metadata as m
real = m.version
m.version = lambda name: "1.6.0" if name == "executorch" else real(name)
try:
    import executorch_espnn
except ImportError as exc:
    print(type(exc).__name__ + ": " + str(exc))
else:
    print("imported")
"""


def test_importing_beside_another_executorch_fails_with_the_documented_error() -> None:
    env = {k: v for k, v in __import__("os").environ.items() if k != compat.SKIP_ENV}
    out = subprocess.run([sys.executable, "-c", _SIMULATE], capture_output=True, text=True, env=env,
                         cwd=ROOT, check=True).stdout.strip()
    assert out.startswith("IncompatibleVersionError: executorch-espnn"), out
    assert "but executorch 1.6.0 is installed" in out
    skipped = subprocess.run([sys.executable, "-W", "always", "-c", _SIMULATE], capture_output=True, text=True,
                             env={**env, compat.SKIP_ENV: "1"}, cwd=ROOT, check=True)
    assert skipped.stdout.strip() == "imported"
    assert "but executorch 1.6.0 is installed" in skipped.stderr


def test_docs_compatibility_names_the_supported_releases_and_the_skip_variable() -> None:
    text = (ROOT / "docs" / "compatibility.md").read_text()
    for dep in compat.SUPPORTED:
        assert dep.requirement in text, dep.requirement
    assert compat.SKIP_ENV in text and __version__ in text


# -- one fact, several files that cannot import the package: each must agree with compat.py


def test_pyproject_dependencies_are_the_supported_releases() -> None:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    for dep in compat.SUPPORTED:
        assert dep.requirement in deps, (dep.requirement, deps)


def test_the_builders_copies_agree() -> None:
    # the builder runs in PlatformIO's Python and the lowering child may lack the package
    for dep in compat.SUPPORTED:
        assert lower_driver.REQUIREMENTS[dep.distribution] == dep.requirement
    assert esp_frameworks.PINNED_EXECUTORCH == compat.EXECUTORCH.lowest
    line = ".".join(compat.EXECUTORCH.lowest.split(".")[:2])
    assert line in sources.FLATBUFFERS_FOR_EXECUTORCH, "sources.py needs the flatbuffers pin of this release"


def test_the_components_cmake_default_agrees() -> None:
    text = (ROOT / "espnn_component" / "cmake" / "idf.cmake").read_text()
    defaults = re.findall(r'set\(ESPNN_EXECUTORCH_VERSION "([^"]+)"\)', text)
    assert defaults == [compat.EXECUTORCH.lowest]
