"""LoweringReport: figures derived from payload and program bytes, formatting, JSON."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from devkit.payload_factory import Case, bilinear_case, div_case, prelu_case, transpose_conv_case
from executorch_espnn.decisions import OpDecision
from executorch_espnn.errors import PteError
from executorch_espnn.payload import decode
from executorch_espnn.payload.format import FORMAT_MAJOR, FORMAT_MINOR
from executorch_espnn.report import (
    ENGINE_KERNEL_OPS,
    UNCALIBRATED_WARNING,
    FastPathLayer,
    LoweringReport,
    OpEntry,
    TensorSpec,
    analyse_payload,
    build_report,
)
from executorch_espnn.version import __version__ as ee_version
from tests.report_helpers import NetBuilder, small_net


def test_partition_figures_match_the_payload() -> None:
    b = small_net()
    data, lower = b.build()
    rep, layers, _ = analyse_payload(3, data)
    p = decode(data)
    assert rep.index == 3
    assert rep.ops == ("QUANTIZE", "CONV2D", "CONV2D", "DEPTHWISE_CONV2D", "CONV2D",
                       "DEPTHWISE_CONV2D", "ADD", "RESHAPE", "FULLY_CONNECTED", "DEQUANTIZE")
    assert rep.arena_bytes == p.arena_size
    assert rep.weights_bytes == len(b.pool.bytes())
    assert rep.payload_bytes == len(data)
    assert rep.scratch_bytes == 200
    assert rep.n_tensors == len(b.tensors)
    # the report recomputes the peak from the op list; the planner computed it from lifetimes
    assert rep.arena_lower_bound == lower
    assert rep.inputs[0].shape == (1, 3, 10, 10) and rep.inputs[0].dtype == "float32"
    assert rep.outputs[0].shape == (1, 10)
    assert [lay.macs for lay in layers] == b.macs
    assert [lay.fast for lay in layers] == [True, True, True, True, False, True]
    assert "12 channels, not a multiple of 8" in layers[4].why
    assert rep.target == "esp32s3" and rep.producer == "0.1.0"


def test_arena_peak_counts_inplace_once() -> None:
    b = NetBuilder()
    x = b.quantize_input((1, 16, 4, 4))
    x = b.conv(x, 16, 1)
    x = b.reshape(x, (1, 256))  # in place: the conv output dies here
    b.dequantize_output(b.fc(x, 4))
    data, lower = b.build()
    rep, _, p = analyse_payload(0, data)
    reshape = p.ops[2]
    assert p.tensors[reshape.output].offset == p.tensors[reshape.inputs[0]].offset  # type: ignore[index]
    # live sets: q(256) | q+conv(512) | conv==reshape (256) | reshape+fc (260)
    assert rep.arena_lower_bound == lower == 512


def _fc_layer(k: int, rows: int) -> FastPathLayer:
    b = NetBuilder()
    x = b.quantize_input((1, 1, rows, k))
    x = b.reshape(x, (rows, k))
    b.dequantize_output(b.fc(x, 8))
    data, _ = b.build()
    _, layers, _ = analyse_payload(0, data)
    assert len(layers) == 1
    return layers[0]


def test_fast_path_fc_conditions() -> None:
    assert _fc_layer(32, 1).fast
    small = _fc_layer(8, 1)
    assert not small.fast and "row_len 8 < 16" in small.why
    assert _fc_layer(32, 3).fast
    odd = _fc_layer(24, 3)
    assert not odd.fast and "not 16-byte aligned" in odd.why
    assert odd.macs == 3 * 8 * 24


@pytest.mark.parametrize(
    ("kwargs", "cin", "fast", "why"),
    [
        ({"cout": 16, "k": 1}, 12, False, "1x1 with 12 input channels, not a multiple of 8"),
        ({"cout": 16, "k": 1}, 24, True, "1x1, 24 channels"),
        ({"cout": 16, "k": 1, "stride": 2}, 12, True, "dense conv"),
        ({"cout": 16, "k": 3, "groups": 4}, 16, False, "grouped"),
        ({"cout": 16, "k": 3, "dilation": 2, "pad": 2}, 16, False, "dilated"),
        ({"cout": 32, "k": 3, "depthwise": True, "pad": 1}, 16, False, "channel multiplier 2"),
        ({"cout": 16, "k": 3, "depthwise": True, "pad": 1}, 16, True, "16 channels % 8 == 0"),
        ({"cout": 16, "k": 3, "depthwise": True, "dilation": 2, "pad": 2}, 16, False, "dilated"),
    ],
)
def test_fast_path_conv_conditions(kwargs: dict[str, int], cin: int, fast: bool, why: str) -> None:
    b = NetBuilder()
    x = b.quantize_input((1, cin, 8, 8))
    b.dequantize_output(b.conv(x, **kwargs))  # type: ignore[arg-type]
    data, _ = b.build()
    _, layers, _ = analyse_payload(0, data)
    assert layers[0].fast is fast and why in layers[0].why, layers[0]
    assert layers[0].macs == b.macs[0]


def test_fast_path_depthwise_span_beyond_int16_is_the_generic_kernel() -> None:
    b = NetBuilder()
    x = b.quantize_input((1, 8, 1, 32767))
    b.dequantize_output(b.conv(x, 8, 3, pad=1, depthwise=True))  # padded width 32769
    data, _ = b.build()
    _, layers, _ = analyse_payload(0, data)
    assert not layers[0].fast and "span 32769 > 32767" in layers[0].why, layers[0]


@pytest.mark.parametrize(
    ("case", "layer", "macs"),
    [
        # PyTorch's count of a transposed conv: every input element times its group's filter taps
        (lambda: transpose_conv_case("t", n=2, cin=6, h=4, w=5, cout=9, k=(3, 2), stride=(1, 2), groups=3),
         "transposed conv 3x2/1 g3", 2 * 6 * 4 * 5 * 3 * 2 * (9 // 3)),
        (lambda: prelu_case("p", shape=(1, 6, 5, 4), slopes=6), "prelu", 0),
        (lambda: bilinear_case("b", c=3, h=4, w=5, size=(8, 10), align_corners=False), "bilinear upsample", 0),
        (lambda: div_case("d", (1, 3, 6, 5), (1, 3, 6, 1)), "division", 0),
    ],
    ids=["tconv", "prelu", "bilinear", "div"],
)
def test_fast_path_table_names_the_ops_esp_nn_has_no_kernel_for(
    case: Callable[[], Case], layer: str, macs: int
) -> None:
    _, layers, p = analyse_payload(0, case().payload)
    (row,) = layers
    assert (row.op, row.layer, row.macs, row.fast) == (0, layer, macs, False)
    assert row.why.startswith("engine C kernel: ESP-NN has no ") and row.why == ENGINE_KERNEL_OPS[p.ops[0].opcode]


def test_corrupt_payload_is_a_pte_error() -> None:
    data, _ = small_net().build()
    bad = bytearray(data)
    bad[0:4] = b"XXXX"
    with pytest.raises(PteError, match=r"delegate 0: payload invalid.*magic"):
        analyse_payload(0, bytes(bad))


# --- program-level figures on real ExecuTorch programs ------------------------------------


class _Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.abs(self.fc(x))


def _program(partitioner: list[object] | None = None) -> tuple[bytes, object]:
    from executorch.exir import to_edge_transform_and_lower

    m = _Net().eval()
    ep = torch.export.export(m, (torch.randn(2, 8),))
    et = to_edge_transform_and_lower(ep, partitioner=partitioner).to_executorch()
    return bytes(et.buffer), et


def test_cpu_only_program_figures() -> None:
    pte, et = _program()
    rep = build_report(pte, target="esp32s3", calibrated=False)
    plan = et.executorch_program.execution_plan[0]  # type: ignore[attr-defined]
    assert rep.planned_bytes == sum(plan.non_const_buffer_sizes[1:]) > 0
    assert rep.cpu_weights_bytes == (8 * 4 + 4) * 4 == rep.weights_bytes
    assert rep.partitions == [] and rep.arena_bytes == 0 and rep.delegated_ops == []
    assert "aten::abs.out" in rep.cpu_kernels
    assert {e.operator for e in rep.cpu_ops} >= {"aten::abs.out"}
    assert rep.inputs == [TensorSpec("input0", (2, 8), "float32")]
    assert rep.outputs[0].shape == (2, 4)
    assert rep.warnings[0] == UNCALIBRATED_WARNING
    assert any("no operator was delegated" in w for w in rep.warnings)
    assert rep.pte_bytes == len(pte)
    assert rep.versions["executorch_espnn"] == ee_version and rep.versions["payload_format"] == f"{FORMAT_MAJOR}.{FORMAT_MINOR}"
    assert rep.versions["torch"].startswith(torch.__version__.split("+")[0])
    json.dumps(rep.to_dict())


def test_other_backends_are_named() -> None:
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner

    pte, _ = _program([XnnpackPartitioner()])
    rep = build_report(pte)
    assert any("XnnpackBackend" in w for w in rep.warnings)
    assert rep.partitions == []


def test_garbage_is_a_pte_error() -> None:
    with pytest.raises(PteError, match="not a readable ExecuTorch program"):
        build_report(b"\x00" * 100)


# --- formatting from hand-made records ---------------------------------------------------------


def _hand_made() -> LoweringReport:
    data, _ = small_net().build()
    part, layers, _ = analyse_payload(0, data)
    return LoweringReport(
        target="esp32s3",
        delegated_ops=[OpEntry("aten.convolution.default", "net.py:10 in forward", "", 0, "conv")],
        cpu_ops=[
            OpEntry("aten.cumsum.default", "net.py:12 in forward", "no ESP-NN kernel for cumsum"),
            OpEntry("aten.layer_norm.default", None, "layer norm is not supported"),
        ],
        partitions=[part],
        arena_bytes=part.arena_bytes,
        planned_bytes=1234,
        weights_bytes=part.weights_bytes + 64,
        state_bytes=None,
        pte_bytes=9999,
        inputs=[TensorSpec("x", (1, 3, 10, 10), "float32", 0.05, -3, "delegate")],
        outputs=[TensorSpec("output0", (1, 10), "float32")],
        fast_path=layers,
        cpu_kernels=["aten::cumsum.out"],
        cpu_weights_bytes=64,
        planned_buffers=[1234],
        warnings=[UNCALIBRATED_WARNING],
        calibrated=False,
        timings={"export": 1.5, "quantize": 2.25},
    )


def test_str_lists_cpu_ops_with_reasons_and_memory() -> None:
    text = str(_hand_made())
    assert "target esp32s3" in text
    assert "1 operators on ESP-NN in 1 partition, 2 on the CPU" in text
    for needle in ("aten.cumsum.default", "net.py:12 in forward", "no ESP-NN kernel for cumsum",
                   "aten.layer_norm.default", "layer norm is not supported", "Memory (bytes)",
                   "delegate arena", "1,234", "ExecuTorch planned", "not calibrated",
                   "int8 side: scale 0.05, zero point -3", "depthwise 3x3/1", "NO",
                   "12 channels, not a multiple of 8", "export 1.50 s"):
        assert needle in text, needle
    # the table's columns line up: every CPU-op row starts its reason at the same column
    rows = [ln for ln in text.splitlines() if "aten.cumsum" in ln or "aten.layer_norm" in ln]
    assert len({r.index("no ESP-NN") if "no ESP-NN" in r else r.index("layer norm is") for r in rows}) == 1


def test_fast_path_share() -> None:
    rep = _hand_made()
    macs = [f.macs for f in rep.fast_path]
    fast = [f.macs for f in rep.fast_path if f.fast]
    assert rep.fast_path_mac_share == pytest.approx(sum(fast) / sum(macs))
    assert "ESP32-S3 fast paths:" in str(rep)


def test_to_dict_is_json_with_stable_keys(tmp_path: Path) -> None:
    d = _hand_made().to_dict()
    text = json.dumps(d, sort_keys=True)
    back = json.loads(text)
    assert back["schema"] == 5
    assert set(back) == {
        "schema", "target", "calibrated", "pte_bytes", "arena_bytes", "planned_bytes",
        "planned_buffers", "weights_bytes", "delegate_weights_bytes", "cpu_weights_bytes",
        "state_bytes", "n_delegated_ops", "n_cpu_ops", "delegated_ops", "cpu_ops", "cpu_kernels",
        "partitions", "inputs", "outputs", "fast_path", "float_averages", "timings", "versions",
        "warnings", "accuracy", "graph", "ram", "profile",
    }
    assert "starts" in back["partitions"][0]
    assert back["cpu_ops"][0] == {"operator": "aten.cumsum.default", "location": "net.py:12 in forward",
                                  "reason": "no ESP-NN kernel for cumsum", "partition": None, "node": None}
    assert back["inputs"][0]["scale"] == 0.05 and back["inputs"][0]["shape"] == [1, 3, 10, 10]
    assert back["partitions"][0]["n_ops"] == 10
    assert back["weights_bytes"] == back["delegate_weights_bytes"] + back["cpu_weights_bytes"]


def test_report_without_cpu_ops_says_so() -> None:
    rep = _hand_made()
    rep.cpu_ops = []
    assert "none: everything runs on ESP-NN" in str(rep)


def test_decisions_supply_reasons_and_locations() -> None:
    pte, _ = _program()
    decisions = [
        OpDecision("aten_linear", "aten.linear.default", True, "", "net.py:3 in forward", 0),
        OpDecision("aten_abs", "aten.abs.default", False, "no ESP-NN kernel", "net.py:4 in forward"),
    ]
    rep = build_report(pte, decisions=decisions)
    assert rep.delegated_ops == [OpEntry("aten.linear.default", "net.py:3 in forward", "", 0, "aten_linear")]
    assert rep.cpu_ops == [OpEntry("aten.abs.default", "net.py:4 in forward", "no ESP-NN kernel", None, "aten_abs")]


def test_uncalibrated_warning_not_duplicated() -> None:
    pte, _ = _program()
    rep = build_report(pte, calibrated=False, warnings=[UNCALIBRATED_WARNING])
    assert rep.warnings.count(UNCALIBRATED_WARNING) == 1
