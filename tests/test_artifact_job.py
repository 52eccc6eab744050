"""The model-artifact step's typed records: the job the builder hands the child process and the
ModelInfo the child writes as model_info.json, each through its JSON and back; a bad job file
stops the child with one clear line (exit code 2)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from devkit.model_files import model_info_from
from executorch_espnn.firmware import __main__ as driver
from executorch_espnn.firmware import artifact, options
from executorch_espnn.firmware.job import ArtifactJob, JobError
from executorch_espnn.firmware.model_info import ModelInfo, ModelInfoError, PartitionInfo

MODEL_PY = "def model():\n    pass\n\ndef example_inputs():\n    pass\n"


def test_a_job_round_trips_through_its_json(tmp_path: Path) -> None:
    job = ArtifactJob(model=tmp_path / "m.py", kind="py", out=tmp_path / "out", target="esp32c3",
                      strict=True, calibration=tmp_path / "c.npz", validation=None, selftest=3,
                      io="int8", storage="partition", partition_size=65536, name="kws")
    path = tmp_path / "job.json"
    job.write(path)
    assert ArtifactJob.read(path) == job
    data = json.loads(path.read_text())
    assert data["version"] == 1 and data["model"] == str(tmp_path / "m.py") and data["validation"] is None


def test_a_job_from_the_options_carries_every_lowering_option(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(MODEL_PY)
    (tmp_path / "v.npz").write_bytes(b"")
    opts = options.parse_env_options({"custom_executorch_model": "m.py", "custom_executorch_io": "int8",
                                      "custom_executorch_validation": "v.npz",
                                      "custom_executorch_strict": "yes"}, tmp_path, "esp32")
    assert opts is not None
    storage = options.storage_choice({"custom_executorch_storage": "partition"}.get)
    job = ArtifactJob.from_options(opts, tmp_path / "out", storage)
    assert (job.model, job.kind, job.target, job.io, job.strict, job.validation) == (
        tmp_path / "m.py", "py", "esp32", "int8", True, tmp_path / "v.npz")
    assert (job.storage, job.partition_size, job.is_partition) == ("partition", 0, True)
    assert ArtifactJob.from_json(job.to_json()) == job


@pytest.mark.parametrize(("field", "value", "message"), [
    ("io", "uint8", "job field io = 'uint8': not one of float, int8"),
    ("storage", "flash", "job field storage = 'flash': not one of embedded, partition"),
    ("kind", "onnx", "job field kind = 'onnx': not one of py, pt2, pte"),
])
def test_job_choices_come_from_the_options(field: str, value: str, message: str) -> None:
    base = ArtifactJob(model=Path("/m.py"), kind="py", out=Path("/o"), target="esp32s3").to_dict()
    with pytest.raises(JobError) as e:
        ArtifactJob.from_json(json.dumps({**base, field: value}))
    assert str(e.value) == f"the job: {message}"


@pytest.mark.parametrize(("text", "message"), [
    ("{not json", "is not JSON"),
    ('{"version": 99}', "is not a version-1 model-artifact job"),
    ('{"version": 1, "model": "/m.py", "kind": "py", "out": "/o"}', "missing field(s) target"),
    ('{"version": 1, "model": "/m.py", "kind": "py", "out": "/o", "target": "esp32", "colour": 1}',
     "unknown field(s) colour"),
    ('{"version": 1, "model": "/m.py", "kind": "py", "out": "/o", "target": "esp32", "selftest": "2"}',
     "field selftest = '2' has the wrong type"),
])
def test_a_bad_job_file_stops_the_child_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      text: str, message: str) -> None:
    path = tmp_path / "job.json"
    path.write_text(text)
    assert driver.main(["--job", str(path)]) == driver.EXIT_FAILED
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"Error: the job file {path}") and message in line
    assert not (tmp_path / "o").exists()


def test_a_missing_job_file_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert driver.main(["--job", str(tmp_path / "none.json")]) == driver.EXIT_FAILED
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"Error: cannot read the job file {tmp_path / 'none.json'}")


def test_a_missing_package_gives_exit_3_and_the_pip_command(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(artifact.NEEDED_FOR, "pte", ["no_such_module_espnn"])
    monkeypatch.setitem(artifact.REQUIREMENTS, "no_such_module_espnn", "no-such-module==1.0")
    path = tmp_path / "job.json"
    ArtifactJob(model=tmp_path / "m.pte", kind="pte", out=tmp_path / "o", target="esp32").write(path)
    assert driver.main(["--job", str(path)]) == driver.EXIT_MISSING
    (line,) = capsys.readouterr().err.splitlines()
    assert line == (f"Error: PlatformIO's Python lacks no_such_module_espnn, needed for custom_executorch_model; "
                    f'install with: "{sys.executable}" -m pip install "no-such-module==1.0"')
    assert not (tmp_path / "o").exists()


def _info() -> ModelInfo:
    tensor = {"name": "x", "dtype": 1, "dtype_name": "int8", "dims": [1, 4], "numel": 4, "nbytes": 4,
              "scale": 0.5, "zero_point": -3, "layout": "contiguous", "access": "in place"}
    return model_info_from({
        "pte": {"size": 640, "sha256": "ab" * 32, "planned_bytes": 64, "planned_buffers": [64],
                "delegates": ["EspNNDelegateBackend"], "inputs": [tensor], "outputs": [tensor]},
        "sizes": {"arena_bytes": 128, "state_bytes": 392, "pointer_bytes": 8, "weights_bytes": 40},
        "ops": {"delegated": 2, "cpu": 1, "cpu_list": [{"op": "aten.exp", "reason": "no kernel"}],
                "partitions": 2},
        "target": "esp32s3", "warnings": ["w"], "accuracy": ["accuracy of output0 ..."],
        "ram": {"total_bytes": 600}, "selftest": {"cases": 2, "source": "validation", "bytes": 16},
        "name": "kws"})


def test_model_info_round_trips_through_its_json() -> None:
    info = _info()
    assert ModelInfo.from_json(info.to_json()) == info
    assert info.ops.cpu_list[0].reason == "no kernel" and info.pte.inputs[0].zero_point == -3
    assert "storage" not in info.to_dict()  # an embedded model's model_info.json has none
    info.storage = PartitionInfo("espnn_model", 0x40, 65536, 1000, "in x:int8[1,4]", "0" * 64, "/p.bin")
    again = ModelInfo.from_json(info.to_json())
    assert again == info and again.storage is not None and again.storage.size == 65536
    assert list(info.to_dict()) == ["pte", "sizes", "versions", "ops", "target", "warnings", "accuracy",
                                    "ram", "selftest", "name", "storage"]  # model_info.json's order


def test_model_info_without_a_selftest_says_cases_0() -> None:
    info = model_info_from({})
    assert info.to_dict()["selftest"] == {"cases": 0}
    assert info.ram_needed == 0


def test_a_foreign_model_info_says_to_rebuild() -> None:
    with pytest.raises(ModelInfoError, match="delete the build folder and build again"):
        ModelInfo.from_json('{"pte": {}}')


def test_a_lowering_option_is_named_as_platformio_ini_names_it() -> None:
    assert [options.ini_name(o) for o in ("io", "selftest", "validation", "calibration")] == [
        options.IO, options.SELFTEST, options.VALIDATION, options.CALIBRATION]
    assert options.ini_name("method") is None
