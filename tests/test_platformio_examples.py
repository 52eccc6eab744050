"""Each example builds and runs on the host board; what it prints matches the same .pte run by
an independent path (executorch_espnn.host.run: the Python ExecuTorch runtime with our delegate)
and the float PyTorch model's top class."""

from __future__ import annotations

import importlib.util
import math
import re
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from tests import pio_helpers as h


@pytest.fixture(scope="module")
def core(tmp_path_factory: pytest.TempPathFactory) -> Path:
    c = tmp_path_factory.mktemp("core")
    h.seed_core(c)
    return c


def _load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _host_run(proj: Path, x: np.ndarray) -> np.ndarray:
    from executorch_espnn import host

    pte = (proj / ".pio" / "build" / "host" / "executorch" / "model.pte").read_bytes()
    return np.asarray(host.run(pte, [x])[0], dtype=np.float32)


@pytest.mark.slow
def test_hello_world(core: Path, tmp_path: Path) -> None:
    proj = h.copy_example("hello_world", tmp_path / "hello_world")
    r = h.pio(core, proj, "run", "-e", "host", "-t", "exec", timeout=1200).check()
    m = re.search(r"output: (\S+) (\S+) (\S+)", r.stdout)
    assert m, r.output[-3000:]
    got = np.array([float(v) for v in m.groups()], dtype=np.float32)
    x = np.array([[-1.0 + 2.0 * i / 3.0 for i in range(4)]], dtype=np.float32)
    want = _host_run(proj, x).reshape(-1)
    np.testing.assert_allclose(got, want, atol=1e-3)  # printed with 4 decimals
    import torch

    ref = _load(proj / "model" / "mlp.py").model()(torch.from_numpy(x)).detach().numpy().reshape(-1)
    assert int(np.argmax(got)) == int(np.argmax(ref))


@pytest.mark.slow
def test_keyword_spotting_prints_top_class(core: Path, tmp_path: Path) -> None:
    proj = h.copy_example("keyword_spotting", tmp_path / "kws")
    r = h.pio(core, proj, "run", "-e", "host", "-t", "exec", timeout=1200).check()
    m = re.search(r"top class: (\d+) \((\w+)\)", r.stdout)
    assert m, r.output[-3000:]
    mod = _load(proj / "model" / "ds_cnn.py")
    x = mod.synthetic_mfcc().numpy()
    want = _host_run(proj, x).reshape(-1)
    assert int(m.group(1)) == int(np.argmax(want))
    assert m.group(2) == mod.LABELS[int(m.group(1))]
    # second run: no lowering, and no recompilation of the runtime
    r = h.pio(core, proj, "run", "-e", "host", timeout=600).check()
    assert "executorch: lowering" not in r.output and "is up to date" in r.output


@pytest.mark.slow
def test_person_detection_idf_on_host(core: Path, tmp_path: Path) -> None:
    proj = h.copy_example("person_detection_idf", tmp_path / "pd")
    r = h.pio(core, proj, "run", "-e", "host", "-t", "exec", timeout=1800).check()
    m = re.search(r"person score (\S+), no-person score (\S+) -> (person|no person)", r.stdout)
    assert m, r.output[-3000:]
    person, other = float(m.group(1)), float(m.group(2))
    assert math.isfinite(person) and math.isfinite(other)
    x = _load(proj / "model" / "mobilenet.py").synthetic_image().numpy()
    want = _host_run(proj, x).reshape(-1)
    np.testing.assert_allclose([other, person], want, atol=1e-3)
    assert (m.group(3) == "person") == (want[1] > want[0])
