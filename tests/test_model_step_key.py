"""The model step's cache key covers the data files a model file loads: the files next to it
named after it (examples/keyword_spotting/model/ds_cnn.weights.pt next to ds_cnn.py), so
changed weights relower; other files in the folder do not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from devkit import pio_helpers as h
from executorch_espnn.firmware import step as model_step
from executorch_espnn.firmware.options import parse_env_models

MODEL_PY = "def model():\n    pass\n\ndef example_inputs():\n    pass\n"


def _key(project: Path, model: str = "model/net.py") -> dict[str, Any]:
    (opts,) = parse_env_models({"custom_executorch_model": model}, project, "esp32s3")
    key: dict[str, Any] = model_step.cache_key(opts, project / "no-platform")
    return key


def test_a_changed_weights_file_changes_the_key(tmp_path: Path) -> None:
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "net.py").write_text(MODEL_PY)
    bare = _key(tmp_path)
    assert "model_data" not in bare  # no data files: the key a model file always had

    weights = tmp_path / "model" / "net.weights.pt"
    weights.write_bytes(b"weights, first training")
    first = _key(tmp_path)
    assert first["model_data"] == {"net.weights.pt": model_step._sha256_file(weights)}
    assert first != bare and first["model"] == bare["model"]

    weights.write_bytes(b"weights, second training")
    second = _key(tmp_path)
    assert second != first and second["model"] == first["model"]
    assert _key(tmp_path) == second  # stable while nothing changes

    weights.unlink()
    assert _key(tmp_path) == bare


def test_only_files_named_after_the_model_file_count(tmp_path: Path) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "net.py").write_text(MODEL_PY)
    (folder / "net.weights.pt").write_bytes(b"w")
    (folder / "net.labels.txt").write_text("yes\nno\n")
    (folder / "other.weights.pt").write_bytes(b"another model's")  # not this model's
    (folder / "network.pt").write_bytes(b"a longer name")
    (folder / "net.weights.pt.d").mkdir()  # a folder is no data file
    assert [p.name for p in model_step.model_data_files(folder / "net.py")] == [
        "net.labels.txt", "net.weights.pt"]
    before = _key(tmp_path)
    (folder / "other.weights.pt").write_bytes(b"changed")
    assert _key(tmp_path) == before
    (folder / "net.labels.txt").write_text("yes\nno\nup\n")
    assert _key(tmp_path) != before


def test_the_examples_weights_are_in_their_keys(tmp_path: Path) -> None:
    """Each example's model file has its weights file beside it, and the key names it."""
    for example, model in (("hello_world", "model/mlp.py"), ("keyword_spotting", "model/ds_cnn.py"),
                           ("person_detection_idf", "model/mobilenet.py"),
                           ("two_models", "model/level.py")):
        key = _key(h.example_dir(example), model)
        name = Path(model).stem + ".weights.pt"
        assert list(key["model_data"]) == [name], (example, key.get("model_data"))
