"""The generated model component (templates/model_component.cmake.j2) under the suite's stand-in
of ESP-IDF (tests/component_c/fake_idf.cmake): an embedded model makes the executorch_espnn
component's engine link only the op families the models use, a model in a partition all of them
(docs/engine.md, "Op families a firmware links")."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from executorch_espnn import rendering
from tests.component_helpers import CDIR, cmake


def _recorded(tmp_path: Path, storage: dict[str, Any] | None) -> dict[str, list[list[str]]]:
    folder = tmp_path / "espnn_model"
    folder.mkdir()
    (folder / "CMakeLists.txt").write_text(rendering.render("model_component.cmake.j2", storage=storage))
    out = tmp_path / "record.txt"
    proc = subprocess.run([cmake(), f"-DCOMPONENT_DIR={folder}", f"-DOUT={out}",
                           "-P", str(CDIR / "fake_idf.cmake")], capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    calls: dict[str, list[list[str]]] = {}
    for line in out.read_text().splitlines():
        name, _, value = line.partition("=")
        calls.setdefault(name, []).append([v for v in value.split(";") if v])
    return calls


@pytest.mark.parametrize(("storage", "define"), [
    (None, "ESPNN_ENGINE_OPS_FROM_MODELS=1"),
    ({"label": "model"}, "ESPNN_ENGINE_ALL_OPS=1"),
], ids=["embedded", "partition"])
def test_the_model_component_tells_the_engine_which_families_to_link(
        tmp_path: Path, storage: dict[str, Any] | None, define: str) -> None:
    calls = _recorded(tmp_path, storage)
    assert calls["GET_PROPERTY"] == [["executorch_espnn", "COMPONENT_LIB"]]
    assert calls["DEFINITIONS_OF"] == [["__idf_executorch_espnn", "PRIVATE", define]]
    assert ("SRCS" in calls and ["model_pte_data.S"] in calls["SRCS"]) == (storage is None)
