"""`pip install executorch-espnn` is the whole product: build the wheel from the checkout,
install it with its dependencies into a fresh virtual environment outside the checkout (no
editable install, no PYTHONPATH, empty caches), and from there lower and run a model, build an
out-of-tree CMake app with find_package(executorch_espnn) through the printed prefix, and
`init` a project, install the platform and `pio run -e host -t exec` it.

One module-scoped environment serves every test (pip reuses its cache; torch comes from
/opt/wheels when the machine has it, as scripts/setup.sh installs it)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
import zipfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from executorch_espnn import resources

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow
_COPY_IGNORE = shutil.ignore_patterns(".venv", ".git", "build", "dist", "*.egg-info", "__pycache__",
                                      ".pio", "*.pyc", ".mypy_cache", ".ruff_cache")


def _run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: int = 900) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
                          check=False, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    return proc


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built from a copy of the checkout (the build writes build/ and egg-info)."""
    work = tmp_path_factory.mktemp("wheel-build")
    src = work / "src"
    shutil.copytree(ROOT, src, symlinks=True, ignore=_COPY_IGNORE)
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
          "-w", str(work / "dist"), str(src)], work, dict(os.environ))
    (whl,) = (work / "dist").glob("executorch_espnn-*.whl")
    return whl


def test_the_wheel_carries_component_templates_cmake_package_and_platform(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    data = f"executorch_espnn/{resources.DATA}"
    for rel in ("espnn_component/CMakeLists.txt", "espnn_component/Kconfig",
                "espnn_component/cmake/package/executorch_espnn-config.cmake",
                "espnn_component/cmake/executorch_runtime.cmake", "templates/model_pte.h.j2",
                "templates/init/platformio.ini.j2", "platform.json", "platform.py", "boards/host.json",
                "builder/main.py", "builder/frameworks/arduino.py", "builder/espnn_pio/scons_steps.py",
                "espnn_component/cmake/idf_project.cmake", "scripts/espnn_idf_model.py",
                "scripts/fetch_sources.py"):
        assert f"{data}/{rel}" in names, rel
    # every file of the checkout's parts, nothing cached
    for part in ("espnn_component", "templates", "builder"):
        for f in (ROOT / part).rglob("*"):
            if f.is_file() and "__pycache__" not in f.parts and f.suffix != ".pyc":
                assert f"{data}/{part}/{f.relative_to(ROOT / part)}" in names, f
    assert not [n for n in names if "__pycache__" in n]


def test_the_sdist_builds_the_same_wheel(wheel: Path, tmp_path: Path) -> None:
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, symlinks=True, ignore=_COPY_IGNORE)
    code = "import sys; from setuptools import build_meta as b; print(b.build_sdist(sys.argv[1]))"
    name = _run([sys.executable, "-c", code, str(tmp_path / "sdist")], src, dict(os.environ)).stdout.split()[-1]
    shutil.unpack_archive(tmp_path / "sdist" / name, tmp_path / "unpacked")
    (tree,) = (tmp_path / "unpacked").iterdir()
    for part in resources.CONTENTS:
        assert (tree / "executorch_espnn" / resources.DATA / part).exists(), part
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
          "-w", str(tmp_path / "dist"), str(tree)], tmp_path, dict(os.environ))
    (again,) = (tmp_path / "dist").glob("executorch_espnn-*.whl")
    assert set(zipfile.ZipFile(again).namelist()) == set(zipfile.ZipFile(wheel).namelist())


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, str]]]:
    """A fresh environment with the wheel and its [platformio] extra; the environment variables
    a user's shell has (no PYTHONPATH, nothing of this checkout, empty caches).  Removed after
    the module: it is 1.6 GB (torch), and pytest keeps every test's folder until the run ends."""
    work = tmp_path_factory.mktemp("wheel-venv")
    _run([sys.executable, "-m", "venv", str(work / "venv")], work, dict(os.environ))
    py = work / "venv" / "bin" / "python"
    find_links = ["--find-links", "/opt/wheels"] if Path("/opt/wheels").is_dir() else []
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "ESPNN_COMPONENT_DIR", "VIRTUAL_ENV") and not k.startswith("PLATFORMIO_")}
    env.update(ESPNN_CACHE_DIR=str(work / "cache"), HOME=str(work / "home"),
               PIP_CACHE_DIR=os.environ.get("PIP_CACHE_DIR", str(Path.home() / ".cache" / "pip")),
               PATH=f"{py.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    pip = [str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", *find_links]
    _run([*pip, "torch==2.13.0"], work, env, timeout=1500)  # first and pinned: never a CUDA build
    _run([*pip, f"{wheel}[platformio]"], work, env, timeout=1500)
    yield py, env
    shutil.rmtree(work / "venv", ignore_errors=True)


def test_installed_package_is_not_the_checkout(venv: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    py, env = venv
    out = _run([str(py), "-c", "import executorch_espnn, executorch_espnn.resources as r; "
                "print(executorch_espnn.__file__); print(r.component_dir())"], tmp_path, env).stdout.split()
    assert "site-packages" in out[0] and str(ROOT) not in out[0] and str(ROOT) not in out[1]


_LOWER_AND_RUN = textwrap.dedent("""
    import sys, numpy as np, torch
    from executorch_espnn import host, lower
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3, padding=1), torch.nn.ReLU(),
                            torch.nn.Flatten(), torch.nn.Linear(4 * 6 * 6, 3)).eval()
    g = torch.Generator().manual_seed(1)
    cal = [(torch.rand(1, 1, 6, 6, generator=g),) for _ in range(8)]
    lowered = lower(m, cal[0], cal)
    lowered.save(sys.argv[1])
    x = np.random.default_rng(3).uniform(0, 1, (1, 1, 6, 6)).astype(np.float32)
    x.tofile(sys.argv[2])
    y = host.run(lowered.pte, [x])[0]
    ref = m(torch.from_numpy(x)).detach().numpy()
    np.save(sys.argv[3], y)
    np.save(sys.argv[4], ref)
""")


@pytest.fixture(scope="module")
def lowered(venv: tuple[Path, dict[str, str]], tmp_path_factory: pytest.TempPathFactory) -> Path:
    py, env = venv
    work = tmp_path_factory.mktemp("wheel-model")
    (work / "run.py").write_text(_LOWER_AND_RUN)
    _run([str(py), "run.py", "model.pte", "x.bin", "host.npy", "float.npy"], work, env)
    return work


def test_lower_and_host_run_from_the_wheel(lowered: Path) -> None:
    y, ref = np.load(lowered / "host.npy"), np.load(lowered / "float.npy")
    assert y.shape == ref.shape == (1, 3)
    # int8 of a 3-layer net against its float self: within a few output steps
    assert float(np.max(np.abs(y - ref))) < 0.05 * max(1e-3, float(np.max(np.abs(ref)))) + 0.05
    assert (ROOT / "build").exists() is False  # the checkout got no build output


def test_cmake_consumer_finds_the_package_through_the_printed_prefix(
        venv: tuple[Path, dict[str, str]], lowered: Path, tmp_path: Path) -> None:
    py, env = venv
    bindir = py.parent
    prefix = _run([str(bindir / "executorch-espnn"), "cmake-prefix"], tmp_path, env).stdout.strip()
    assert "site-packages" in prefix and str(ROOT) not in prefix
    app = tmp_path / "app"
    shutil.copytree(ROOT / "tests" / "data" / "cmake_consumer", app)
    cmake = str(bindir / "cmake")
    _run([cmake, "-S", str(app), "-B", str(app / "build"), f"-DCMAKE_PREFIX_PATH={prefix}",
          "-DCMAKE_BUILD_TYPE=Release"], tmp_path, env)
    _run([cmake, "--build", str(app / "build"), "--parallel", "2"], tmp_path, env, timeout=1500)
    out = _run([str(app / "build" / "consumer"), str(lowered / "model.pte"), str(lowered / "x.bin")],
               tmp_path, env).stdout
    line = re.search(r"^output 0 float32 \[1, 3\]:(.*)$", out, re.M)
    assert line is not None, out
    got = np.array([float(v) for v in line.group(1).split()], dtype=np.float32)
    np.testing.assert_array_equal(got, np.load(lowered / "host.npy").ravel())  # two runtimes, same bits


@pytest.mark.parametrize("framework", ["arduino", "espidf"])
def test_init_then_platform_install_then_pio_run(venv: tuple[Path, dict[str, str]], tmp_path: Path,
                                                 framework: str) -> None:
    py, env = venv
    bindir = py.parent
    core = tmp_path / "pio-core"
    penv = dict(env, PLATFORMIO_CORE_DIR=str(core), PLATFORMIO_SETTING_ENABLE_TELEMETRY="No",
                PLATFORMIO_SETTING_CHECK_PLATFORMIO_INTERVAL="3650", PLATFORMIO_DISABLE_PROGRESSBAR="true",
                PLATFORMIO_NO_ANSI="true")
    # offline PlatformIO: its SCons package from the pip one (what a user with internet skips)
    _run(["bash", str(ROOT / "scripts" / "seed_platformio.sh"), str(core)], tmp_path, dict(penv, PYTHON=str(py)))
    out = _run([str(bindir / "executorch-espnn"), "init", "proj", "--board", "esp32dev",
                "--framework", framework], tmp_path, penv).stdout
    assert "wrote proj/platformio.ini" in out
    out = _run([str(bindir / "executorch-espnn"), "platform", "install"], tmp_path, penv).stdout
    assert "platform = executorch-espnn" in out
    installed = core / "platforms" / "executorch-espnn"
    assert (installed / "platform.json").is_file() and not any(p.is_symlink() for p in installed.rglob("*"))
    run = _run(["timeout", "1500", str(bindir / "pio"), "run", "-e", "host", "-t", "exec"], tmp_path / "proj",
               penv, timeout=1600)
    text = run.stdout + run.stderr
    assert re.search(r"^selftest: 4/4 bit-exact \(worst 0 LSB\)", text, re.M), text[-3000:]
    assert re.search(r"^class [0-3] \(score -?[0-9.]+\), [0-9]+ us$", text, re.M), text[-3000:]
    test = _run(["timeout", "1500", str(bindir / "pio"), "test", "-e", "host"], tmp_path / "proj", penv,
                timeout=1600)
    assert re.search(r"3 test cases: 3 succeeded", test.stdout + test.stderr), (test.stdout + test.stderr)[-3000:]


def test_importing_beside_another_executorch_fails_in_the_installed_package(
        venv: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    from tests.test_compat import _SIMULATE

    py, env = venv
    out = _run([str(py), "-c", _SIMULATE], tmp_path, env).stdout.strip()
    assert out.startswith("IncompatibleVersionError: executorch-espnn 0.1.0 supports executorch ==1.5.1, "
                          "but executorch 1.6.0 is installed"), out
