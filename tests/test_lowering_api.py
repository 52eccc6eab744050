"""ee.lower() / LoweredModel: errors before partitioning, and the end-to-end flow."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import executorch_espnn as ee
from devkit.zoo import ZOO
from executorch_espnn.errors import (
    CalibrationError,
    ExportError,
    LoweringError,
    StrictModeError,
    UnsupportedTargetError,
)
from executorch_espnn.lowering import TARGETS, LoweredModel, StageTimings, check_target
from executorch_espnn.payload import Opcode, decode
from executorch_espnn.payload.state import state_bytes
from executorch_espnn.pte import delegate_payloads
from executorch_espnn.report import (
    ENGINE_KERNEL_OPS,
    UNCALIBRATED_WARNING,
    LoweringReport,
    build_report,
)


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


# --- end to end (needs the partitioner and the backend) ----------------------------------------


def check_report_against_payloads(lm: LoweredModel) -> None:
    """Every figure of the report, recomputed from the decoded payloads and the program."""
    rep = lm.report
    payloads = [decode(b) for b in delegate_payloads(lm.pte)]
    assert len(rep.partitions) == len(payloads) >= 1
    for part, p in zip(rep.partitions, payloads, strict=True):
        assert part.ops == tuple(op.opcode.name for op in p.ops)
        assert part.n_tensors == len(p.tensors)
        assert part.arena_bytes == p.arena_size
        assert part.weights_bytes == len(p.constants)
        assert part.state_bytes == state_bytes(p)
        assert part.scratch_bytes == max(op.scratch_size for op in p.ops)
        assert part.arena_lower_bound <= part.arena_bytes <= 1.01 * part.arena_lower_bound + 16
        assert [t.shape for t in part.inputs] == [p.tensors[i].dims for i in p.inputs]
    assert rep.arena_bytes == max(p.arena_size for p in payloads)  # one arena for every delegate
    assert rep.delegate_weights_bytes == sum(len(p.constants) for p in payloads)
    assert rep.weights_bytes == rep.delegate_weights_bytes + rep.cpu_weights_bytes
    assert rep.state_bytes == sum(state_bytes(p) for p in payloads)
    assert rep.pte_bytes == len(lm.pte)
    assert {e.partition for e in rep.delegated_ops} == set(range(len(payloads)))
    assert all(e.reason for e in rep.cpu_ops)
    # the fast-path table lists exactly the payloads' conv/depthwise/FC ops and those ESP-NN has no kernel for
    heavy = {(i, k) for i, p in enumerate(payloads) for k, op in enumerate(p.ops)
             if op.opcode in (Opcode.CONV2D, Opcode.DEPTHWISE_CONV2D, Opcode.FULLY_CONNECTED)
             or op.opcode in ENGINE_KERNEL_OPS}
    assert {(f.partition, f.op) for f in rep.fast_path} == heavy


def _first_quantize(lm: LoweredModel) -> tuple[float, int]:
    p = decode(delegate_payloads(lm.pte)[0])
    op = next(o for o in p.ops if o.inputs[0] == p.inputs[0])
    assert op.opcode == Opcode.QUANTIZE
    t = p.tensors[op.output]
    return t.scale, t.zero_point


@pytest.fixture(scope="module")
def island() -> LoweredModel:
    from devkit.lowered_zoo import lowered_zoo

    return lowered_zoo("island_net")


def test_island_report_matches_payloads(island: LoweredModel) -> None:
    check_report_against_payloads(island)
    rep = island.report
    assert len(rep.partitions) == 2
    assert rep.calibrated is True and UNCALIBRATED_WARNING not in rep.warnings
    assert rep.target == "esp32s3"
    abs_ops = [e for e in rep.cpu_ops if e.operator == "aten.abs.default"]
    assert len(abs_ops) == 1 and abs_ops[0].location is not None
    assert abs_ops[0].location.startswith("zoo.py:") or "devkit/zoo.py:" in abs_ops[0].location
    assert "aten::abs.out" in rep.cpu_kernels
    assert rep.planned_bytes > 0
    # program I/O: float tensors, quantized by the delegate with the payload's own qparams
    assert [(t.name, t.shape, t.dtype) for t in island.inputs] == [("x", (1, 3, 32, 32), "float32")]
    assert (island.inputs[0].scale, island.inputs[0].zero_point) == _first_quantize(island)
    assert island.inputs[0].quantized_by == "delegate"
    assert island.outputs[0].shape == (1, 5)
    assert set(island.timings.as_dict()) == {"export", "quantize", "partition", "to_executorch"}
    assert all(v > 0 for v in island.timings.as_dict().values())
    assert rep.timings == island.timings.as_dict()


def test_island_str_lists_cpu_ops_with_reasons(island: LoweredModel) -> None:
    text = str(island.report)
    for e in island.report.cpu_ops:
        assert e.operator in text and e.reason in text
    assert "2 partitions" in text and "Memory (bytes)" in text


def test_island_save(island: LoweredModel, tmp_path: Path) -> None:
    p = island.save(tmp_path / "deep" / "dir" / "m.pte")
    assert p.read_bytes() == island.pte
    again = build_report(p.read_bytes())
    assert [x.arena_bytes for x in again.partitions] == [x.arena_bytes for x in island.report.partitions]


def test_strict_names_the_cpu_operators() -> None:
    z = ZOO["island_net"]
    with pytest.raises(StrictModeError, match=r"aten\.abs\.default"):
        ee.lower(z.model(), z.example_inputs(), calibration=z.calibration_data(2), strict=True)


class _Tiny(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.relu(self.conv(x)).mean(dim=(2, 3)))


def _tiny() -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        return _Tiny().eval(), (torch.randn(1, 3, 8, 8),)


def test_uncalibrated_warns_and_fully_delegates() -> None:
    m, ex = _tiny()
    lm = ee.lower(m, ex)
    check_report_against_payloads(lm)
    assert lm.report.calibrated is False
    assert lm.report.warnings[0] == UNCALIBRATED_WARNING
    assert "not calibrated: accuracy unknown" in str(lm.report)
    assert lm.report.cpu_ops == [] and len(lm.report.partitions) == 1
    assert isinstance(lm.report, LoweringReport) and lm.quantized_program is not None


def test_pt2_input(tmp_path: Path) -> None:
    m, ex = _tiny()
    p = tmp_path / "tiny.pt2"
    torch.export.save(torch.export.export(m, ex), p)
    lm = ee.lower(torch.export.load(p), target="esp32")
    check_report_against_payloads(lm)
    assert lm.report.target == "esp32" and lm.report.partitions[0].target == "esp32"
    assert lm.inputs[0].name == "x" and lm.inputs[0].shape == (1, 3, 8, 8)


def test_already_quantized_program_skips_quantization() -> None:
    m, ex = _tiny()
    lm = ee.lower(m, ex, calibration=[ex])
    assert lm.quantized_program is not None
    lines: list[str] = []
    again = ee.lower(lm.quantized_program, progress=lines.append)
    assert "[2/4] quantize + calibrate (already quantized: skipped) ..." in lines
    assert again.report.calibrated is None
    assert again.pte == lm.pte


@pytest.mark.slow
@pytest.mark.parametrize("name", ["mobilenet_v2_0.35_96", "ds_cnn_kws"])
def test_zoo_models_lower_fully(name: str) -> None:
    from devkit.lowered_zoo import lowered_zoo

    lm = lowered_zoo(name)
    check_report_against_payloads(lm)
    rep = lm.report
    assert len(rep.partitions) == 1 and rep.cpu_ops == []
    share = rep.fast_path_mac_share
    assert share is not None and share > 0.9
    print(f"\n{name}: arena {rep.arena_bytes} (peak {rep.partitions[0].arena_lower_bound}), "
          f"planned {rep.planned_bytes}, weights {rep.weights_bytes}, state {rep.state_bytes}, "
          f"fast-path MACs {100 * share:.1f}%, timings {lm.timings.as_dict()}")


def test_selected_operators_yaml_is_deterministic(tmp_path: Path) -> None:
    import yaml
    from executorch.exir import to_edge_transform_and_lower

    from executorch_espnn.lowering import write_selected_operators

    class Net(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.abs(x) + 1

    pte = bytes(to_edge_transform_and_lower(torch.export.export(Net(), (torch.randn(2, 3),))).to_executorch().buffer)
    a = write_selected_operators(pte, tmp_path / "a" / "selected_operators.yaml")
    b = write_selected_operators(pte, tmp_path / "b" / "selected_operators.yaml")
    assert a.read_bytes() == b.read_bytes()
    sel = yaml.safe_load(a.read_text())
    assert set(sel["operators"]) >= {"aten::abs.out", "aten::add.out"}
    assert sel["operators"]["aten::abs.out"]["debug_info"] == ["model.pte"]
    assert sel["et_kernel_metadata"]["aten::abs.out"] == ["v1/6;0,1|6;0,1|6;0,1"]
