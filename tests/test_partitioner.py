"""EspNNPartitioner / EspNNDelegateBackend behaviour beyond single operators: strict mode,
value-dependent fallback, module-scoped quantization, limits and splitting, CPU islands,
compile specs, decisions, backend coexistence and .pte parsing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from executorch.exir import to_edge
from executorch.exir.backend.backend_details import BackendDetails, PreprocessResult
from torch import nn
from torch.fx import GraphModule

from devkit.lowering_helpers import Lowered, check_numerics, lower, lsb_errors, quantize_module
from executorch_espnn import pte
from executorch_espnn.errors import LoweringError, PteError, StrictModeError, UnsupportedTargetError
from executorch_espnn.partitioner import EspNNPartitioner
from executorch_espnn.payload import DType, Opcode, Storage, Target, decode
from executorch_espnn.payload_peak import band_rows, kernel_scratch
from executorch_espnn.quantizer import EspNNQuantizer
from executorch_espnn.reference import run_delegate


class ConvExpConv(nn.Module):
    """conv → exp (left in float by the quantizer) → conv: a CPU island between two delegates."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Conv2d(3, 8, 3, padding=1)
        self.b = nn.Conv2d(8, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(torch.exp(self.a(x) * 0.1))


class Chain(nn.Module):
    def __init__(self, n: int = 6) -> None:
        super().__init__()
        self.convs = nn.ModuleList([nn.Conv2d(3 if i == 0 else 8, 8, 3, padding=1) for i in range(n)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for c in self.convs:
            x = F.relu(c(x))
        return x


class WithClassifier(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2), nn.ReLU())
        self.classifier = nn.Linear(8, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.flatten(F.adaptive_avg_pool2d(self.features(x), 1), 1))


def _edit_output_scale(q: GraphModule, target_name: str, factor: float, which: int = 0) -> None:
    """Multiply the output scale of the ``which``-th ``target_name`` node's quantize (and of its
    readers' dequantize nodes) by ``factor``: the program stays a valid quantized program."""
    node = [n for n in q.graph.nodes if n.op == "call_function" and target_name in str(n.target)][which]
    (qn,) = list(node.users)
    qn.args = (qn.args[0], qn.args[1] * factor, *qn.args[2:])
    for u in list(qn.users):
        u.args = (u.args[0], qn.args[1], *u.args[2:])
    q.recompile()


def _run_chain(low: Lowered, xs: tuple[torch.Tensor, ...], between: Callable[[int, np.ndarray], np.ndarray] | None = None
               ) -> list[np.ndarray]:
    """Run single-input/single-output payloads one after the other."""
    cur: list[Any] = [x.numpy() for x in xs]
    for i, p in enumerate(low.payloads):
        cur = run_delegate(p, cur)
        if between is not None and i + 1 < len(low.payloads):
            cur = [between(i, cur[0])]
    return cur


# ------------------------------------------------------------------------------- strict mode

def test_strict_mode_names_every_cpu_operator_with_its_reason() -> None:
    torch.manual_seed(0)
    ex = (torch.randn(1, 3, 8, 8),)
    q = quantize_module(ConvExpConv(), ex)
    part = EspNNPartitioner(target="generic", allow_cpu_fallback=False)
    from executorch.exir import to_edge_transform_and_lower

    with pytest.raises(StrictModeError) as err:
        to_edge_transform_and_lower(torch.export.export(q, ex), partitioner=[part])
    msg = str(err.value)
    cpu = [d for d in part.decisions if not d.delegated]
    assert cpu, part.decisions
    assert f"{len(cpu)} operator(s)" in msg
    for d in cpu:
        assert d.op in msg and d.node in msg and d.reason in msg
    assert "aten.exp.default" in msg
    assert "allow CPU fallback" in msg


def test_strict_mode_passes_when_everything_is_delegated() -> None:
    torch.manual_seed(0)
    low = lower(Chain(2), (torch.randn(1, 3, 8, 8),), allow_cpu_fallback=False)
    assert low.cpu() == [] and len(low.payloads) == 1


# --------------------------------------------------------------------- value-dependent checks

def test_conv_with_multiplier_ge_1_stays_on_cpu() -> None:
    torch.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(3, 8, 3), nn.Conv2d(8, 4, 1)).eval()
    ex = (torch.randn(1, 3, 8, 8),)
    q = quantize_module(m, ex)
    _edit_output_scale(q, "conv2d", 1e-4, which=1)  # second conv: s_in * s_w / s_out >> 1
    low = lower(m, ex, converted=q)
    convs = [d for d in low.decisions if d.op == "aten.convolution.default"]
    assert [d.delegated for d in convs] == [True, False]
    assert ">= 1" in convs[1].reason and "multiplier" in convs[1].reason
    with pytest.raises(StrictModeError, match="multiplier"):
        lower(m, ex, converted=q, allow_cpu_fallback=False)


def test_linear_with_multiplier_ge_1_is_decomposed_and_keeps_its_reason() -> None:
    """ops_to_not_decompose refuses the linear with the same check, so it decomposes into CPU
    operators whose decisions carry the linear's reason."""
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(10, 6)).eval()
    ex = (torch.randn(2, 10),)
    q = quantize_module(m, ex)
    _edit_output_scale(q, "linear", 1e-4)
    low = lower(m, ex, converted=q)
    assert low.payloads == []
    assert not any(d.delegated for d in low.decisions)
    reasons = [d.reason for d in low.decisions if not d.op.startswith("quantized_decomposed")]
    assert reasons and all("aten.linear.default" in r and ">= 1" in r for r in reasons), reasons


def test_conv_bias_beyond_2_pow_24_stays_on_cpu() -> None:
    torch.manual_seed(0)
    conv = nn.Conv2d(3, 8, 3)
    with torch.no_grad():
        conv.bias.zero_()
        conv.bias[5] = 5000.0  # in accumulator units (s_in * s_w ~ 1e-4) beyond 2**24
    m = nn.Sequential(conv).eval()
    low = lower(m, (torch.randn(1, 3, 8, 8),))
    (d,) = [d for d in low.decisions if d.op == "aten.convolution.default"]
    assert not d.delegated
    assert "output channel 5" in d.reason and "2^24" in d.reason


# ------------------------------------------------------------------ module-scoped quantization

def test_module_left_float_by_the_quantizer_stays_on_cpu() -> None:
    torch.manual_seed(0)
    qz = EspNNQuantizer().set_module_name("classifier", None)
    low = lower(WithClassifier(), (torch.randn(1, 3, 9, 9),), quantizer=qz)
    assert len(low.payloads) == 1
    delegated = {d.op for d in low.delegated()}
    assert {"aten.convolution.default", "aten.relu.default", "aten.mean.dim"} <= delegated
    cpu_compute = [d for d in low.cpu() if not d.op.startswith("quantized_decomposed")]
    assert cpu_compute, low.decisions
    for d in cpu_compute:  # the linear was refused whole (its result is float), then decomposed
        assert "aten.linear.default" in d.reason and "without int8 quantization" in d.reason
    # the delegate hands the float classifier a float tensor: no CPU dequantize
    assert all(not d.op.startswith("quantized_decomposed") for d in low.cpu())
    p = low.decoded()
    assert p.tensors[p.outputs[0]].dtype == DType.FLOAT32


# ------------------------------------------------------------------------ islands, splitting

def test_cpu_island_gives_two_partitions_with_float_boundaries() -> None:
    torch.manual_seed(0)
    ex = (torch.randn(1, 3, 8, 8),)
    low = lower(ConvExpConv(), ex)
    assert len(low.payloads) == 2
    by_op = {d.op: d for d in low.decisions if not d.op.startswith("quantized_decomposed")}
    convs = [d for d in low.decisions if d.op == "aten.convolution.default"]
    assert [d.partition for d in convs] == [0, 1]
    assert not by_op["aten.exp.default"].delegated
    assert "no ESP-NN lowering" in by_op["aten.exp.default"].reason
    # the only CPU operator is the island itself: both sides' q/dq nodes are absorbed
    assert [d.op for d in low.cpu()] == ["aten.exp.default"]
    for i in range(2):
        p = low.decoded(i)
        assert [p.tensors[t].dtype for t in (*p.inputs, *p.outputs)] == [DType.FLOAT32, DType.FLOAT32]
    xs = low.grid_inputs()
    got = _run_chain(low, xs, between=lambda _, y: torch.exp(torch.from_numpy(y)).numpy())
    want = low.converted(*xs)
    assert lsb_errors(got, [want], low.output_qparams())[0] <= 1


def test_partition_limits_split_into_consecutive_partitions() -> None:
    torch.manual_seed(0)
    ex = (torch.randn(1, 3, 8, 8),)
    low = lower(Chain(6), ex, max_ops=4)
    assert low.cpu() == []
    assert len(low.payloads) >= 2
    for i in range(len(low.payloads)):
        assert len(low.decoded(i).ops) <= 4
    parts = [d.partition for d in low.decisions]
    assert parts == sorted(parts), "partitions follow the graph order"
    # between the pieces the tensors stay int8
    first, last = low.decoded(0), low.decoded(len(low.payloads) - 1)
    assert first.tensors[first.outputs[0]].dtype == DType.INT8
    assert last.tensors[last.inputs[0]].dtype == DType.INT8
    xs = low.grid_inputs()
    got = _run_chain(low, xs)
    assert lsb_errors(got, [low.converted(*xs)], low.output_qparams())[0] <= 1


def test_tensor_limit_splits_too() -> None:
    torch.manual_seed(0)
    low = lower(Chain(4), (torch.randn(1, 3, 8, 8),), max_tensors=12)
    assert len(low.payloads) >= 2 and low.cpu() == []
    assert all(len(low.decoded(i).tensors) <= 12 for i in range(len(low.payloads)))


def test_a_unit_larger_than_the_limits_stays_on_cpu_with_reason() -> None:
    torch.manual_seed(0)
    low = lower(Chain(2), (torch.randn(1, 3, 8, 8),), max_ops=1)
    convs = [d for d in low.decisions if d.op == "aten.convolution.default"]
    assert convs and not any(d.delegated for d in convs)
    assert all("ops" in d.reason and "allows 1" in d.reason for d in convs)


# --------------------------------------------------------------------------- graph shapes

def test_shared_weights_are_delegated_twice() -> None:
    torch.manual_seed(0)
    conv = nn.Conv2d(4, 4, 3, padding=1)
    low = lower(nn.Sequential(conv, nn.ReLU(), conv), (torch.randn(1, 4, 6, 6),))
    assert low.cpu() == [] and len(low.payloads) == 1
    assert low.opcodes().count("CONV2D") == 2
    check_numerics(low)


def test_two_outputs_in_one_partition() -> None:
    class Two(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a, self.b = nn.Conv2d(3, 4, 1), nn.Conv2d(3, 5, 3)

        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return self.a(x), F.relu(self.b(x))

    torch.manual_seed(0)
    low = lower(Two(), (torch.randn(1, 3, 7, 7),))
    p = low.decoded()
    assert len(p.inputs) == 1 and len(p.outputs) == 2
    assert all(p.tensors[t].storage == Storage.OUTPUT for t in p.outputs)
    check_numerics(low)


def test_decisions_have_source_locations_and_partitions() -> None:
    torch.manual_seed(0)
    low = lower(ConvExpConv(), (torch.randn(1, 3, 8, 8),))
    exp = next(d for d in low.decisions if d.op == "aten.exp.default")
    assert exp.location is not None and exp.location.startswith("test_partitioner.py:")
    assert exp.location.endswith("in forward")
    line = int(exp.location.split(":")[1].split()[0])
    import inspect

    src, start = inspect.getsourcelines(ConvExpConv.forward)
    assert start <= line < start + len(src)
    assert all((d.partition is None) != d.delegated for d in low.decisions)


# ------------------------------------------------------------------- targets, compile specs

def _first(p: Any, code: Opcode) -> Any:
    return next(o for o in p.ops if o.opcode == code)


def test_target_selects_the_esp_nn_scratch_sizes() -> None:
    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.c3 = nn.Conv2d(3, 8, 3, padding=1)
            self.c1 = nn.Conv2d(8, 16, 1)
            self.dw = nn.Conv2d(16, 16, 3, padding=1, groups=16)
            self.fc = nn.Linear(16, 10)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = self.dw(self.c1(self.c3(x)))
            return torch.softmax(self.fc(torch.flatten(F.adaptive_avg_pool2d(y, 1), 1)), -1)

    torch.manual_seed(0)
    ex = (torch.randn(1, 3, 10, 10),)
    q = quantize_module(Net(), ex)
    sizes = {}
    banded = {}
    for target in ("esp32s3", "esp32p4", "esp32", "generic"):
        p = lower(Net(), ex, converted=q, target=target).decoded()
        assert p.target == Target.parse(target)
        convs = [o for o in p.ops if o.opcode == Opcode.CONV2D]
        dw = next(i for i, o in enumerate(p.ops) if o.opcode == Opcode.DEPTHWISE_CONV2D)
        # the depthwise's whole-map rule; the payload may give it a band's instead (below)
        sizes[target] = (convs[0].scratch_size, convs[1].scratch_size, kernel_scratch(p, dw),
                         _first(p, Opcode.SOFTMAX).scratch_size)
        banded[target] = (band_rows(p, dw), p.ops[dw].scratch_size)
    # hand-computed from what ESP-NN 1.2.3's S3 kernels write (esp_nn_conv_esp32s3.c,
    # esp_nn_depthwise_conv_s8_esp32s3.c):
    # 3x3 conv, 3 -> 8 channels: im2col path (row 9 < 16, window 27 >= 16, aligned 32):
    #   filter sums 8*4 = 32, filter copy at 32: 8*32 = 256, im2col window at 288: 32 -> 320
    # 1x1 conv, 8 -> 16 on 10x10: the mult8 kernel's transpose buffer, 8 positions x 8 ch x 2
    # depthwise 3x3, 16 channels, pad 1: filter 144, its align gap 16, padded map 12*12*16
    # softmax over 10 classes: 4 bytes each
    assert sizes["esp32s3"] == (320, 128, 2464, 40)
    # that 2,464 B would set the S3 arena's peak, so optimize="speed" runs the depthwise in
    # bands of one output row: 3 padded rows of 12x16 (576), then the 3x3x16 filter copy (144)
    assert banded["esp32s3"] == (1, 576 + 144)
    assert all(banded[t] == (0, 0) for t in ("esp32p4", "esp32", "generic"))
    # P4 (esp_nn_conv_esp32p4.c): 3x3 padded with a window of 27 >= 16: im2col, filter sums
    # 8*4 then one window of 27 = 59; 1x1: filter sums only, 16*4 = 64; depthwise 0
    assert sizes["esp32p4"] == (59, 64, 0, 40)
    assert sizes["esp32"] == (0, 0, 0, 40)
    assert sizes["generic"] == (0, 0, 0, 0)


def test_options_reach_preprocess_through_compile_specs() -> None:
    part = EspNNPartitioner(target="esp32", max_ops=7)
    specs = {s.key: bytes(s.value) for s in part.delegation_spec.compile_specs}
    assert specs["target"] == b"esp32"
    assert b'"max_ops": 7' in specs["options"]


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"target": "esp8266"}, UnsupportedTargetError, "unknown target 'esp8266'"),
        ({"fast": True}, LoweringError, "unknown EspNNPartitioner option"),
        ({"max_ops": 0}, LoweringError, "max_ops=0"),
        ({"max_io": 33}, LoweringError, "1..32"),
        ({"nhwc_inputs": [-1]}, LoweringError, "nhwc_inputs"),
        ({"nhwc_inputs": "0"}, LoweringError, "nhwc_inputs"),
    ],
)
def test_bad_partitioner_arguments(kwargs: dict[str, Any], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        EspNNPartitioner(**kwargs)


def test_preprocess_rejects_unknown_compile_specs() -> None:
    from executorch.exir.backend.compile_spec_schema import CompileSpec

    from executorch_espnn.backend import parse_compile_specs

    with pytest.raises(LoweringError, match="unknown compile spec 'speed'"):
        parse_compile_specs([CompileSpec("speed", b"1")])
    with pytest.raises(UnsupportedTargetError):
        parse_compile_specs([CompileSpec("target", b"esp9000")])


# ------------------------------------------------------------- coexistence and .pte parsing

class EspNNBackend(BackendDetails):  # type: ignore[misc]
    """Stand-in for upstream's in-tree prototype of the same name."""

    @staticmethod
    def preprocess(edge_program: Any, compile_specs: Any) -> PreprocessResult:
        return PreprocessResult(processed_bytes=b"upstream")


def test_coexists_with_a_backend_named_EspNNBackend() -> None:
    assert {c.__name__ for c in BackendDetails.__subclasses__()} >= {"EspNNBackend", "EspNNDelegateBackend"}
    torch.manual_seed(0)
    low = lower(Chain(1), (torch.randn(1, 3, 6, 6),))
    assert pte.backend_ids(low.pte) == ["EspNNDelegateBackend"]
    assert decode(low.payloads[0]).ops  # our payload, not the stand-in's bytes


def test_pte_errors() -> None:
    with pytest.raises(PteError, match="not a readable ExecuTorch program"):
        pte.delegate_payloads(b"\x00" * 64)
    with pytest.raises(PteError, match="truncated or corrupt"):
        pte.backend_ids(b"\x00\x00\x00\x00ET12" + b"\xff" * 40)
    m = nn.Conv2d(3, 4, 1).eval()
    plain = to_edge(torch.export.export(m, (torch.randn(1, 3, 4, 4),))).to_executorch().buffer
    assert pte.backend_ids(plain) == []
    with pytest.raises(PteError, match=r"no EspNNDelegateBackend delegate.*no delegates at all"):
        pte.delegate_payloads(plain)


# ----------------------------------------------------------------------------- whole models

@pytest.mark.slow
@pytest.mark.parametrize("name", ["mobilenet_v2_0.35_96", "ds_cnn_kws"])
def test_zoo_model_is_one_partition_and_matches_pytorch(name: str) -> None:
    """A fully supported network is one partition with no CPU operator at all.  Numerics:
    the payload agrees with the quantized PyTorch model op by op until the first float32
    near-tie (a value within ~1e-6 of .5, where the float model's rounding is noise), which
    changes one or two elements by 1 LSB; the prediction is the same on every input."""
    from devkit.lowering_helpers import op_by_op
    from devkit.zoo import ZOO

    z = ZOO[name]
    low = lower(z.model(), z.example_inputs(), calib=z.calibration_data(8), target="esp32s3")
    assert len(low.payloads) == 1
    assert low.cpu() == [], [(d.op, d.reason) for d in low.cpu()]
    p = low.decoded()
    assert p.target == Target.ESP32S3
    assert [p.tensors[t].dtype for t in (*p.inputs, *p.outputs)] == [DType.FLOAT32, DType.FLOAT32]
    inputs = [*z.test_inputs(4), *(low.grid_inputs(s) for s in range(4))]
    for xs in inputs:
        got = run_delegate(low.payloads[0], [x.numpy() for x in xs])[0]
        want = low.converted(*xs).detach().numpy()
        assert got.argmax() == want.argmax()
        steps = op_by_op(low, xs)
        assert steps, "every unit output is compared"
        first = next((s for s in steps if s[2]), None)
        assert first is None or (first[2] <= 2 and first[3] == 1), first


def test_to_edge_then_to_backend_flow_also_sees_real_constants() -> None:
    """Without to_edge_transform_and_lower the partitioner gets FakeTensor constants only;
    it reads the real values through the fake tensors' memo."""
    torch.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU()).eval()
    ex = (torch.randn(1, 3, 8, 8),)
    q = quantize_module(m, ex)
    part = EspNNPartitioner(target="generic")
    edge = to_edge(torch.export.export(q, ex)).to_backend(part)
    assert [d.delegated for d in part.decisions if d.op == "aten.convolution.default"] == [True]
    payloads = pte.delegate_payloads(edge.to_executorch().buffer)
    assert [o.opcode for o in decode(payloads[0]).ops] == [Opcode.QUANTIZE, Opcode.CONV2D, Opcode.DEQUANTIZE]
