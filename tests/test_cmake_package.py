"""The component as a CMake package: build and install it, then configure, build and run an
application outside the project (tests/data/cmake_consumer) that does
find_package(executorch_espnn CONFIG REQUIRED) and links executorch_espnn::backend."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from executorch_espnn import host
from tests.host_helpers import delegated_pte, fc_payload, make_fc_model

ROOT = Path(__file__).resolve().parents[1]
COMPONENT = ROOT / "espnn_component"
pytestmark = pytest.mark.slow


def _cmake(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    tc = host.find_toolchain()
    proc = subprocess.run([str(tc.cmake), *args], capture_output=True, text=True, cwd=cwd, check=False)
    assert proc.returncode == 0, f"cmake {' '.join(args)}\n{proc.stdout[-4000:]}\n{proc.stderr[-3000:]}"
    return proc


@pytest.fixture(scope="module")
def prefix(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tc = host.find_toolchain()
    work = tmp_path_factory.mktemp("espnn-package")
    build, prefix = work / "build", work / "prefix"
    _cmake("-S", str(COMPONENT), "-B", str(build), "-G", tc.generator, "-DCMAKE_BUILD_TYPE=Release",
           f"-DCMAKE_PREFIX_PATH={host.executorch_dir()}")
    _cmake("--build", str(build), "--parallel", "2")
    _cmake("--install", str(build), "--prefix", str(prefix))
    return prefix


def test_installed_package_layout(prefix: Path) -> None:
    cmake_dir = prefix / "lib" / "cmake" / "executorch_espnn"
    for name in ("executorch_espnn-config.cmake", "executorch_espnn-config-version.cmake",
                 "executorch_espnn-targets.cmake"):
        assert (cmake_dir / name).is_file(), name
    for header in ("executorch_espnn.h", "espnn_pte.h", "espnn_engine.h", "espnn_format.h"):
        assert (prefix / "include" / "executorch_espnn" / header).is_file(), header
    # relocatable: no path of the build tree in the exported targets
    targets = (cmake_dir / "executorch_espnn-targets.cmake").read_text()
    assert str(COMPONENT) not in targets


def test_outside_application_finds_links_and_runs(prefix: Path, tmp_path: Path) -> None:
    import torch

    tc = host.find_toolchain()
    app = tmp_path / "app"
    shutil.copytree(ROOT / "tests" / "data" / "cmake_consumer", app)
    _cmake("-S", str(app), "-B", str(app / "build"), "-G", tc.generator,
           f"-DCMAKE_PREFIX_PATH={prefix};{host.executorch_dir()}")
    _cmake("--build", str(app / "build"))
    exe = app / "build" / "consumer"

    m = make_fc_model(seed=11)
    pte = delegated_pte(fc_payload(m), [torch.zeros(1, 8)], lambda x: x[:, :4] * 1.0,
                        after=lambda y: y * 2.0)
    (tmp_path / "model.pte").write_bytes(pte)
    x = np.random.default_rng(5).uniform(-2, 2, (1, 8)).astype(np.float32)
    (tmp_path / "x.bin").write_bytes(x.tobytes())
    proc = subprocess.run([str(exe), str(tmp_path / "model.pte"), str(tmp_path / "x.bin")],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    line = re.search(r"^output 0 float32 \[1, 4\]:(.*)$", proc.stdout, re.M)
    assert line is not None, proc.stdout
    got = np.array([float(v) for v in line.group(1).split()], dtype=np.float32)
    np.testing.assert_array_equal(got, (m.reference(x) * np.float32(2.0)).ravel())
    np.testing.assert_array_equal(got, host.run(pte, [x])[0].ravel())
    assert "delegates 1 weights_bytes 0" in proc.stdout  # constants used in place

    # a program at an address that misaligns the int32 constants: the delegate copies them
    env = dict(os.environ, ESPNN_CONSUMER_MISALIGN="1")
    proc = subprocess.run([str(exe), str(tmp_path / "model.pte"), str(tmp_path / "x.bin")],
                          capture_output=True, text=True, timeout=120, check=False, env=env)
    assert proc.returncode == 0, proc.stderr
    again = re.search(r"^output 0 float32 \[1, 4\]:(.*)$", proc.stdout, re.M)
    assert again is not None and again.group(1) == line.group(1)
    copied = re.search(r"^delegates 1 weights_bytes (\d+)$", proc.stdout, re.M)
    assert copied is not None and int(copied.group(1)) > 0, proc.stdout


def test_consumer_gets_the_backend_error(prefix: Path, tmp_path: Path) -> None:
    """A payload this runtime cannot read fails load_method with the version message."""
    import torch

    from tests.host_helpers import patch_header

    tc = host.find_toolchain()
    app = tmp_path / "app"
    shutil.copytree(ROOT / "tests" / "data" / "cmake_consumer", app)
    _cmake("-S", str(app), "-B", str(app / "build"), "-G", tc.generator,
           f"-DCMAKE_PREFIX_PATH={prefix};{host.executorch_dir()}")
    _cmake("--build", str(app / "build"))
    bad = delegated_pte(patch_header(fc_payload(make_fc_model()), format_major=1, format_minor=0),
                        [torch.zeros(1, 8)],
                        lambda x: x[:, :4] * 1.0)
    (tmp_path / "bad.pte").write_bytes(bad)
    proc = subprocess.run([str(app / "build" / "consumer"), str(tmp_path / "bad.pte")],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 1
    assert "load_method failed: 0x30: init: payload format 1.0" in proc.stderr
