"""ee.lower() / LoweredModel: errors before partitioning, and the end-to-end flow."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import executorch_espnn as ee
from executorch_espnn.errors import (
    CalibrationError,
    ExportError,
    LoweringError,
    UnsupportedTargetError,
)
from executorch_espnn.lowering import TARGETS, LoweredModel, StageTimings, check_target
from executorch_espnn.report import build_report
from tests.zoo import ZOO


class _Branchy(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x if x.sum() > 0 else -x


def test_targets_and_aliases() -> None:
    assert TARGETS == ("generic", "esp32", "esp32s2", "esp32s3", "esp32c3", "esp32c6", "esp32p4")
    assert check_target("ESP32-S3") == "esp32s3"
    assert check_target(" esp32 ") == "esp32"


def test_unknown_target_lists_valid_ones() -> None:
    z = ZOO["ds_cnn_kws"]
    with pytest.raises(UnsupportedTargetError, match=r"unknown target 'esp8266'; choose one of: generic, esp32, .*esp32p4"):
        ee.lower(z.model(), z.example_inputs(), target="esp8266")


def test_export_error() -> None:
    with pytest.raises(ExportError, match=r"torch\.export failed for _Branchy"):
        ee.lower(_Branchy(), (torch.randn(3),))


def test_calibration_of_wrong_shape() -> None:
    z = ZOO["resnet8"]
    with pytest.raises(CalibrationError, match=r"calibration batch 0, input 0: expected tensor of shape \(1, 3, 32, 32\)"):
        ee.lower(z.model(), z.example_inputs(), calibration=[(torch.randn(1, 3, 16, 16),)])


def test_bad_arguments() -> None:
    with pytest.raises(LoweringError, match="needs example_inputs"):
        ee.lower(torch.nn.ReLU())
    with pytest.raises(LoweringError, match=r"must be a tuple of tensors, got Tensor; wrap a single tensor as \(x,\)"):
        ee.lower(torch.nn.ReLU(), torch.randn(2))  # type: ignore[arg-type]
    with pytest.raises(LoweringError, match=r"takes a torch\.nn\.Module or a torch\.export\.ExportedProgram, got str"):
        ee.lower("model.py", (torch.randn(2),))  # type: ignore[arg-type]


def test_progress_lines_up_to_the_failing_stage() -> None:
    lines: list[str] = []
    z = ZOO["resnet8"]
    with pytest.raises(CalibrationError):
        ee.lower(z.model(), z.example_inputs(), calibration=[(torch.randn(2),)], progress=lines.append)
    assert lines[0] == "[1/4] export ResNet8 ..."
    assert lines[1].startswith("[1/4] export: ") and lines[1].endswith(" s")
    assert lines[2] == "[2/4] quantize + calibrate ..."


def test_stage_timings() -> None:
    t = StageTimings(1.0, 2.0, 3.0, 0.5)
    assert t.total == 6.5
    assert t.as_dict() == {"export": 1.0, "quantize": 2.0, "partition": 3.0, "to_executorch": 0.5}


def test_save_creates_parent_dirs(tmp_path: Path) -> None:
    from executorch.exir import to_edge_transform_and_lower

    ep = torch.export.export(torch.nn.Linear(4, 2), (torch.randn(1, 4),))
    pte = bytes(to_edge_transform_and_lower(ep).to_executorch().buffer)
    lm = LoweredModel(pte, build_report(pte), StageTimings())
    out = lm.save(tmp_path / "a" / "b" / "model.pte")
    assert out.read_bytes() == pte
    assert lm.inputs[0].shape == (1, 4) and lm.outputs[0].shape == (1, 2)
