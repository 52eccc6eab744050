"""EspNNQuantizer and quantize(): the graph convert_pt2e produces, checked against PyTorch.

Golden values come from PyTorch itself (torch.quantize_per_channel, min/max of the
calibration data pushed through the float ops), never from the quantizer's own helpers.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from quantizer_helpers import (
    DQ,
    DQC,
    QDQ,
    Q,
    const,
    count,
    input_qparams,
    is_float_output,
    observer_of,
    observers_around,
    one,
    ops,
    output_q,
    output_qparams,
    prepared,
    qparams,
    run_pt2e,
    sqnr_db,
    weight_dq,
)
from torch import nn
from torch.fx import GraphModule, Node
from torchao.quantization.pt2e import HistogramObserver, MinMaxObserver, PerChannelMinMaxObserver
from torchao.quantization.pt2e.quantizer import QuantizationSpec

from executorch_espnn.errors import CalibrationError, ExportError, QuantizerConfigError
from executorch_espnn.quantizer import (
    EspNNQuantizationConfig,
    EspNNQuantizer,
    QuantizeResult,
    quantize,
)
from executorch_espnn.quantizer.annotators.patterns import clamp_bounds
from executorch_espnn.quantizer.workflow import random_calibration

aten = torch.ops.aten
MINMAX = EspNNQuantizationConfig.default(observer="minmax")


def minmax_quantizer() -> EspNNQuantizer:
    return EspNNQuantizer(MINMAX)


class Fn(nn.Module):
    """Wraps a function of the inputs so one-op graphs are quick to build."""

    def __init__(self, fn: Callable[..., Any], *mods: nn.Module) -> None:
        super().__init__()
        self.fn = fn
        self.mods = nn.ModuleList(mods)

    def forward(self, *xs: torch.Tensor) -> Any:
        return self.fn(self, *xs)


def minmax_golden(values: list[torch.Tensor]) -> tuple[float, int]:
    """PyTorch's own per-tensor affine int8 qparams for the range of ``values``."""
    obs = torch.ao.quantization.MinMaxObserver(
        dtype=torch.qint8, qscheme=torch.per_tensor_affine, quant_min=-128, quant_max=127
    )
    for v in values:
        obs(v)
    s, z = obs.calculate_qparams()
    return float(s), int(z)


# --------------------------------------------------------------------------- weights / bias


def _check_weight_and_bias(gm: GraphModule, node: Node, w: torch.Tensor, b: torch.Tensor) -> None:
    s_in, _ = input_qparams(node, 0)
    wq, ws, wdq = weight_dq(gm, node, 1)
    # dequantize_per_channel(w_int8, scales, zero_points, axis 0, -127, 127, int8)
    assert wdq.args[3:] == (0, -127, 127, torch.int8)
    assert wq.dtype == torch.int8 and wq.shape == w.shape
    assert int(wq.min()) >= -127 and int(wq.max()) <= 127
    assert torch.equal(const(gm, wdq.args[2]), torch.zeros(w.shape[0], dtype=torch.int64))
    golden_scale = w.detach().abs().flatten(1).amax(1) / 127.0
    torch.testing.assert_close(ws, golden_scale.float(), rtol=1e-6, atol=0)
    zeros = torch.zeros_like(golden_scale, dtype=torch.int32)
    fq = torch.fake_quantize_per_channel_affine(w.detach(), golden_scale, zeros, 0, -127, 127)
    golden_w = torch.round(fq / golden_scale.view(-1, *([1] * (w.dim() - 1)))).to(torch.int8)
    assert torch.equal(wq, golden_w)
    # every channel uses its full symmetric range
    assert torch.equal(wq.flatten(1).abs().amax(1), torch.full((w.shape[0],), 127, dtype=torch.int8))

    bq, bs, bdq = weight_dq(gm, node, 2)
    assert bdq.args[3:] == (0, -(2**31), 2**31 - 1, torch.int32)
    assert bq.dtype == torch.int32 and bq.shape == b.shape
    golden_bs = torch.tensor(s_in, dtype=torch.float64) * golden_scale.double()
    torch.testing.assert_close(bs.double(), golden_bs, rtol=1e-6, atol=0)
    golden_b = torch.round(b.detach().double() / golden_bs).to(torch.int32)
    assert int((bq - golden_b).abs().max()) <= 1
    assert torch.equal(const(gm, bdq.args[2]), torch.zeros(b.shape[0], dtype=torch.int64))


@pytest.mark.parametrize(
    "conv",
    [
        nn.Conv2d(3, 8, 3, padding=1),
        nn.Conv2d(4, 6, 1),
        nn.Conv2d(4, 8, 3, stride=2, padding=1),
        nn.Conv2d(4, 4, 3, groups=4, padding=1),  # depthwise
        nn.Conv2d(4, 8, 3, groups=4),  # depthwise, channel multiplier 2
        nn.Conv2d(4, 8, 3, groups=2, dilation=2, padding=2),  # grouped + dilated
        nn.Conv2d(4, 8, 3, padding="same"),
    ],
    ids=["3x3", "1x1", "strided", "depthwise", "dw-mult2", "grouped-dilated", "same"],
)
def test_conv_weights_per_channel_int8_and_int32_bias(conv: nn.Conv2d) -> None:
    torch.manual_seed(0)
    conv.weight.data *= torch.linspace(0.2, 3.0, conv.out_channels).view(-1, 1, 1, 1)
    ex = (torch.randn(1, conv.in_channels, 10, 10),)
    gm = run_pt2e(Fn(lambda s, x: s.mods[0](x), conv), ex)
    node = one(gm, conv_target(gm))
    assert conv.bias is not None
    _check_weight_and_bias(gm, node, conv.weight, conv.bias)
    # activation in and out: per-tensor q/dq, nothing else
    assert node.args[0].target == DQ
    assert output_q(node).args[3:] == (-128, 127, torch.int8)
    assert count(gm, Q) == 2 and count(gm, DQC) == 2


def conv_target(gm: GraphModule) -> Any:
    return aten.conv2d.padding if ops(gm, aten.conv2d.padding) else aten.conv2d.default


@pytest.mark.parametrize(
    "conv",
    [
        nn.Conv1d(3, 8, 3, padding=1),
        nn.Conv1d(4, 6, 5, stride=2, padding=2),
        nn.Conv1d(4, 4, 3, groups=4, padding=1),  # depthwise
        nn.Conv1d(4, 8, 3, groups=2, dilation=2, padding=2),  # grouped + dilated
        nn.Conv1d(4, 8, 3, padding="same"),
    ],
    ids=["k3", "strided", "depthwise", "grouped-dilated", "same"],
)
def test_conv1d_weights_per_channel_int8_and_int32_bias(conv: nn.Conv1d) -> None:
    """conv1d is annotated like conv2d: the 3-D [out, in/groups, k] weight per output channel."""
    torch.manual_seed(0)
    conv.weight.data *= torch.linspace(0.2, 3.0, conv.out_channels).view(-1, 1, 1)
    ex = (torch.randn(2, conv.in_channels, 16),)
    gm = run_pt2e(Fn(lambda s, x: s.mods[0](x), conv), ex)
    node = one(gm, aten.conv1d.padding if ops(gm, aten.conv1d.padding) else aten.conv1d.default)
    assert conv.bias is not None
    _check_weight_and_bias(gm, node, conv.weight, conv.bias)
    assert node.args[0].target == DQ
    assert output_q(node).args[3:] == (-128, 127, torch.int8)
    assert count(gm, Q) == 2 and count(gm, DQC) == 2


def test_conv1d_without_bias_and_module_configs() -> None:
    """No bias constant without a bias; a per-module None keeps just that conv1d float."""

    class TwoConv1d(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = nn.Conv1d(3, 4, 3, bias=False)
            self.b = nn.Conv1d(4, 4, 1)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.b(self.a(x))

    ex = (torch.randn(1, 3, 10),)
    gm = run_pt2e(TwoConv1d(), ex)
    assert count(gm, DQC) == 1 + 2  # a: weight; b: weight and bias
    a = next(n for n in ops(gm, aten.conv1d.default) if _scope(n) == "a")
    assert len(a.args) < 3 or a.args[2] is None
    assert weight_dq(gm, a, 1)[0].dtype == torch.int8
    gm2 = run_pt2e(TwoConv1d(), ex, EspNNQuantizer().set_module_name("b", None))
    convs = {_scope(n): n for n in ops(gm2, aten.conv1d.default)}
    assert weight_dq(gm2, convs["a"], 1)[0].dtype == torch.int8
    assert const(gm2, convs["b"].args[1]).dtype == torch.float32 and _is_float_module_node(convs["b"])
    gm3 = run_pt2e(TwoConv1d(), ex, EspNNQuantizer().set_module_type(nn.Conv1d, None))
    assert count(gm3, DQC) == 0


def test_linear_weights_per_channel_int8_and_int32_bias() -> None:
    torch.manual_seed(1)
    lin = nn.Linear(16, 10)
    ex = (torch.randn(2, 16),)
    gm = run_pt2e(Fn(lambda s, x: s.mods[0](x), lin), ex)
    node = one(gm, aten.linear.default)
    _check_weight_and_bias(gm, node, lin.weight, lin.bias)
    assert count(gm, Q) == 2 and count(gm, DQC) == 2


def test_conv_without_bias_has_no_bias_constant() -> None:
    conv = nn.Conv2d(3, 4, 3, bias=False)
    gm = run_pt2e(Fn(lambda s, x: s.mods[0](x), conv), (torch.randn(1, 3, 8, 8),))
    assert count(gm, DQC) == 1
    assert len(one(gm, aten.conv2d.default).args) < 3 or one(gm, aten.conv2d.default).args[2] is None


def test_activation_qparams_match_pytorch_minmax() -> None:
    """Per-tensor affine int8 over the calibrated range, computed by PyTorch's observer."""
    torch.manual_seed(2)
    conv = nn.Conv2d(3, 4, 3)
    batches = [(torch.randn(1, 3, 8, 8) * (i + 1) + 0.3,) for i in range(4)]
    gm = run_pt2e(Fn(lambda s, x: s.mods[0](x), conv), batches[0], minmax_quantizer(), batches)
    node = one(gm, aten.conv2d.default)
    assert input_qparams(node) == pytest.approx(minmax_golden([b[0] for b in batches]))
    with torch.no_grad():
        outs = [conv(b[0]) for b in batches]
    s, z = output_qparams(node)
    gs, gz = minmax_golden(outs)
    assert s == pytest.approx(gs, rel=1e-5) and abs(z - gz) <= 1


# --------------------------------------------------------------------------- fused activations

ACTIVATIONS: dict[str, tuple[Callable[[torch.Tensor], torch.Tensor], tuple[float | None, float | None]]] = {
    "nn.ReLU": (nn.ReLU(), (0.0, None)),
    "nn.ReLU(inplace)": (nn.ReLU(inplace=True), (0.0, None)),
    "F.relu": (F.relu, (0.0, None)),
    "nn.ReLU6": (nn.ReLU6(), (0.0, 6.0)),
    "nn.ReLU6(inplace)": (nn.ReLU6(inplace=True), (0.0, 6.0)),
    "F.relu6": (F.relu6, (0.0, 6.0)),
    "F.hardtanh positional": (lambda x: F.hardtanh(x, 0.0, 6.0), (0.0, 6.0)),
    "F.hardtanh keywords": (lambda x: F.hardtanh(x, min_val=0.0, max_val=6.0), (0.0, 6.0)),
    "nn.Hardtanh(0, 6)": (nn.Hardtanh(0.0, 6.0), (0.0, 6.0)),
    "torch.clamp keywords": (lambda x: torch.clamp(x, min=0, max=6), (0.0, 6.0)),
    "Tensor.clamp positional": (lambda x: x.clamp(0.0, 6.0), (0.0, 6.0)),
    "clamp max only": (lambda x: torch.clamp(x, max=6.0), (None, 6.0)),
    "clamp(-1, 1)": (lambda x: torch.clamp(x, -1.0, 1.0), (-1.0, 1.0)),
    "clamp_min": (lambda x: torch.clamp_min(x, 0.0), (0.0, None)),
}

ANCHORS: dict[str, tuple[Callable[[], nn.Module], Any, Callable[[], tuple[torch.Tensor, ...]]]] = {
    "conv": (lambda: nn.Conv2d(3, 4, 3), aten.conv2d.default, lambda: (torch.randn(1, 3, 8, 8),)),
    "conv1d": (lambda: nn.Conv1d(3, 4, 3), aten.conv1d.default, lambda: (torch.randn(2, 3, 12),)),
    "linear": (lambda: nn.Linear(8, 4), aten.linear.default, lambda: (torch.randn(2, 8),)),
    "add": (lambda: nn.Identity(), aten.add.Tensor, lambda: (torch.randn(1, 4, 5, 5), torch.randn(1, 4, 5, 5))),
}


@pytest.mark.parametrize("act_name", list(ACTIVATIONS))
@pytest.mark.parametrize("anchor_name", list(ANCHORS))
def test_activation_fuses_into_conv_linear_add(anchor_name: str, act_name: str) -> None:
    make, target, inputs = ANCHORS[anchor_name]
    act, bounds = ACTIVATIONS[act_name]
    if anchor_name == "add":
        model = Fn(lambda s, x, y: act(x + y))
    else:
        model = Fn(lambda s, x: act(s.mods[0](x)), make())
    gm = run_pt2e(model, inputs())
    node = one(gm, target)
    # no q/dq between the op and its activation: the activation is its only user ...
    (act_node,) = node.users
    assert act_node.target not in QDQ, gm.graph
    assert act_node.args[0] is node
    # ... and the activation's output is the quantized one
    output_q(act_node)
    assert clamp_bounds(act_node) == bounds
    # inputs quantized per tensor
    for a in node.args[:1] if anchor_name != "add" else node.args[:2]:
        assert isinstance(a, Node) and a.target == DQ


def test_activation_not_fused_when_output_has_other_users() -> None:
    model = Fn(lambda s, x: torch.cat([F.relu(y := s.mods[0](x)), y], 1), nn.Linear(8, 4))
    gm = run_pt2e(model, (torch.randn(2, 8),))
    node = one(gm, aten.linear.default)
    q = output_q(node)  # the linear output itself is quantized, relu runs standalone
    relu = one(gm, aten.relu.default)
    assert relu.args[0].target == DQ and qparams(relu.args[0]) == qparams(q)


def test_batchnorm_is_folded_and_relu_fused() -> None:
    torch.manual_seed(3)
    conv, bn = nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8)
    bn.running_mean.uniform_(-1, 1)
    bn.running_var.uniform_(0.5, 2)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.5, 0.5)
    model = Fn(lambda s, x: F.relu(s.mods[1](s.mods[0](x))), conv, bn).eval()
    ex = (torch.randn(1, 3, 12, 12),)
    calib = [(torch.randn(1, 3, 12, 12),) for _ in range(8)]
    gm = run_pt2e(model, ex, calib=calib)
    assert count(gm, aten.batch_norm.default) == 0
    assert count(gm, aten._native_batch_norm_legit_no_training.default) == 0
    node = one(gm, aten.conv2d.default)
    (relu,) = node.users
    assert relu.target == aten.relu.default
    output_q(relu)
    # the folded weights are PyTorch's BN folding, quantized per channel
    fused = torch.nn.utils.fusion.fuse_conv_bn_eval(conv, bn)
    _check_weight_and_bias(gm, node, fused.weight, fused.bias)
    x = torch.randn(1, 3, 12, 12)
    with torch.no_grad():
        assert sqnr_db(model(x), gm(x)) > 25.0


# --------------------------------------------------------------------------- shared qparams

SHARED: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "max_pool2d": nn.MaxPool2d(2),
    "avg_pool2d": nn.AvgPool2d(3, stride=1, padding=1),
    "adaptive_avg_pool2d": nn.AdaptiveAvgPool2d(1),
    "mean HW": lambda x: x.mean((2, 3)),
    "mean -1,-2 keepdim": lambda x: x.mean((-1, -2), keepdim=True),
    "F.pad": lambda x: F.pad(x, (1, 2, 0, 1)),
    "ZeroPad2d": nn.ZeroPad2d(1),
    "reshape": lambda x: x.reshape(1, -1),
    "view": lambda x: x.view(1, 4, 36),
    "flatten": nn.Flatten(),
    "squeeze": lambda x: x[:, :1].squeeze(1),
    "unsqueeze": lambda x: x.unsqueeze(0),
    "permute": lambda x: x.permute(0, 2, 3, 1),
    "transpose": lambda x: x.transpose(1, 3),
    "slice": lambda x: x[:, 1:3],
    "select": lambda x: x[:, 0],
    "narrow": lambda x: x.narrow(2, 1, 3),
    "dropout (eval)": nn.Dropout(0.3),
    "F.dropout training=False": lambda x: F.dropout(x, 0.3, training=False),
    "upsample nearest": nn.Upsample(scale_factor=2, mode="nearest"),
    "interpolate nearest size": lambda x: F.interpolate(x, size=(9, 9), mode="nearest"),
}


def _single_op(gm: GraphModule) -> Node:
    skip = QDQ | {aten.conv2d.default, aten.squeeze.dim, aten.slice.Tensor}
    found = [n for n in gm.graph.nodes if n.op == "call_function" and n.target not in skip]
    if not found:  # squeeze/slice tests: take the last data-movement op
        found = [n for n in gm.graph.nodes if n.target in (aten.squeeze.dim, aten.slice.Tensor)]
    return found[-1]


@pytest.mark.parametrize("name", list(SHARED))
def test_shared_ops_reuse_input_qparams(name: str) -> None:
    fn = SHARED[name]
    model = Fn(lambda s, x: fn(s.mods[0](x)), nn.Conv2d(3, 4, 3, padding=1), *(
        [fn] if isinstance(fn, nn.Module) else []))
    gm = run_pt2e(model, (torch.randn(1, 3, 6, 6),))
    node = _single_op(gm)
    conv = one(gm, aten.conv2d.default)
    assert input_qparams(node) == output_qparams(node) == output_qparams(conv)
    # not just equal values: one observer instance serves the input and the output
    p = prepared(model, (torch.randn(1, 3, 6, 6),))
    ins, out = observers_around(p, node.target)
    assert ins == [out] and ins[0] is out


@pytest.mark.parametrize(("pool", "target"), [
    (nn.MaxPool1d(3, 2, 1), aten.max_pool1d.default),
    (nn.AvgPool1d(2, count_include_pad=False), aten.avg_pool1d.default),
], ids=["max_pool1d", "avg_pool1d"])
def test_pool1d_reuses_input_qparams(pool: nn.Module, target: Any) -> None:
    model = Fn(lambda s, x: s.mods[1](s.mods[0](x)), nn.Conv1d(3, 4, 3, padding=1), pool)
    gm = run_pt2e(model, (torch.randn(1, 3, 12),))
    node = one(gm, target)
    assert input_qparams(node) == output_qparams(node) == output_qparams(one(gm, aten.conv1d.default))
    ins, out = observers_around(prepared(model, (torch.randn(1, 3, 12),)), target)
    assert ins == [out] and ins[0] is out


@pytest.mark.parametrize("op", ["cat", "stack"])
def test_cat_and_stack_inputs_and_output_share_one_qparam_set(op: str) -> None:
    join = getattr(torch, op)
    target = getattr(aten, op).default
    model = Fn(
        lambda s, x, y: join([s.mods[0](x), s.mods[1](x) * 3.0, y], 1),
        nn.Conv2d(3, 4, 1), nn.Conv2d(3, 4, 1),
    )
    gm = run_pt2e(model, (torch.randn(1, 3, 5, 5), torch.randn(1, 4, 5, 5) * 10))
    node = one(gm, target)
    out = output_qparams(node)
    for a in node.args[0]:
        assert a.target == DQ and qparams(a) == out
    # the producers write their outputs directly in the shared qparams (no requantisation)
    assert output_qparams(ops(gm, aten.conv2d.default)[0]) == out
    assert output_qparams(one(gm, aten.mul.Tensor)) == out
    ins, obs = observers_around(prepared(model, (torch.randn(1, 3, 5, 5), torch.randn(1, 4, 5, 5))), target)
    assert len(ins) == 3 and all(o is obs for o in ins)


@pytest.mark.parametrize(("fn", "target"), [
    (lambda y: torch.split(y, [1, 2, 1], 1), aten.split_with_sizes.default),
    (lambda y: torch.split(y, 2, -1), aten.split.Tensor),
    (lambda y: torch.chunk(y, 4, 1), aten.chunk.default),
], ids=["split_sizes", "split_int", "chunk"])
def test_split_pieces_share_the_input_qparams(fn: Callable[[torch.Tensor], Any], target: Any) -> None:
    # the pieces feed different ops (and the graph output); the unused ones get no quantize
    def forward(s: Fn, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        pieces = fn(s.mods[0](x))
        return s.mods[1](pieces[0]) if pieces[0].shape[1] == 1 else pieces[0] * 2.0, pieces[1]

    model = Fn(forward, nn.Conv2d(3, 4, 3, padding=1), nn.Conv2d(1, 2, 1))
    ex = (torch.randn(1, 3, 6, 6),)
    gm = run_pt2e(model, ex)
    split = one(gm, target)
    conv = ops(gm, aten.conv2d.default)[0]
    assert input_qparams(split) == output_qparams(conv)
    used = [u for u in split.users if u.users]
    assert len(used) == 2
    for piece in used:
        assert piece.target is operator.getitem
        assert output_qparams(piece) == output_qparams(conv)
    # one observer instance serves the input and every used piece
    p = prepared(model, ex)
    (node,) = [n for n in p.graph.nodes if n.op == "call_function" and n.target == target]
    (obs_in,) = [observer_of(p, a) for a in node.args if isinstance(a, Node)]
    outs = [observer_of(p, next(iter(g.users))) for g in node.users if g.users]
    assert len(outs) == 2 and all(o is obs_in for o in outs)


def test_mean_over_channels_gets_its_own_observer() -> None:
    gm = run_pt2e(Fn(lambda s, x: x.mean(1)), (torch.randn(1, 8, 4, 4),), minmax_quantizer())
    node = one(gm, aten.mean.dim)
    assert node.args[0].target == DQ
    assert output_qparams(node) != input_qparams(node)


def test_float64_results_stay_float() -> None:
    # found by ExecuTorch's backend suite (test_mean_output_dtype): quantize_per_tensor
    # accepts float32 (and 16-bit floats) only, so a float64 mean must not be annotated
    x = torch.randn(5, 10)
    gm = run_pt2e(Fn(lambda s, x: torch.mean(x, dim=1, dtype=torch.float64)), (x,), minmax_quantizer())
    assert count(gm, Q) == 0
    assert gm(x).dtype == torch.float64
    torch.export.export(gm, (x,))  # the converted model still exports


# --------------------------------------------------------------------------- softmax / LUT / mul


def test_softmax_output_fixed_qparams() -> None:
    gm = run_pt2e(Fn(lambda s, x: F.softmax(s.mods[0](x), -1), nn.Linear(8, 10)), (torch.randn(2, 8),))
    sm = one(gm, aten.softmax.int)
    assert sm.args[0].target == DQ
    assert output_qparams(sm) == (1.0 / 256.0, -128)


def test_shared_op_after_softmax_keeps_fixed_qparams() -> None:
    gm = run_pt2e(Fn(lambda s, x: F.softmax(x, -1).reshape(-1)), (torch.randn(2, 8),))
    assert output_qparams(one(gm, aten.reshape.default)) == (1.0 / 256.0, -128)
    assert count(gm, Q) == 3  # input, softmax output, reshape output (same qparams)


UNARY: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "hardswish": F.hardswish,
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
    "silu": F.silu,
    "gelu": F.gelu,
    "gelu tanh": lambda x: F.gelu(x, approximate="tanh"),
    "hardsigmoid": F.hardsigmoid,
    "leaky_relu": lambda x: F.leaky_relu(x, 0.1),
    "relu standalone": F.relu,
    "relu6 standalone": F.relu6,
    "hardtanh standalone": lambda x: F.hardtanh(x, min_val=-2.0, max_val=2.0),
    "clamp standalone": lambda x: x.clamp(min=-0.5),
}


@pytest.mark.parametrize("name", list(UNARY))
def test_unary_lut_ops_observe_input_and_output(name: str) -> None:
    fn = UNARY[name]
    batches = [(torch.randn(1, 4, 6, 6) * 3,) for _ in range(4)]
    gm = run_pt2e(Fn(lambda s, x: fn(x)), batches[0], minmax_quantizer(), batches)
    node = next(n for n in gm.graph.nodes if n.op == "call_function" and n.target not in QDQ)
    assert input_qparams(node) == pytest.approx(minmax_golden([b[0] for b in batches]))
    s, z = output_qparams(node)
    gs, gz = minmax_golden([fn(b[0]) for b in batches])
    assert s == pytest.approx(gs, rel=1e-5) and abs(z - gz) <= 1


@pytest.mark.parametrize(
    "shape_b", [(1, 4, 5, 5), (1, 4, 1, 1), (1, 1, 5, 5)], ids=["same", "per-channel", "spatial"]
)
def test_mul_observes_inputs_and_output(shape_b: tuple[int, ...]) -> None:
    batches = [(torch.randn(1, 4, 5, 5), torch.rand(shape_b) * 2) for _ in range(3)]
    gm = run_pt2e(Fn(lambda s, x, y: x * y), batches[0], minmax_quantizer(), batches)
    node = one(gm, aten.mul.Tensor)
    assert input_qparams(node, 0) == pytest.approx(minmax_golden([b[0] for b in batches]))
    assert input_qparams(node, 1) == pytest.approx(minmax_golden([b[1] for b in batches]))
    s, z = output_qparams(node)
    gs, gz = minmax_golden([b[0] * b[1] for b in batches])
    assert s == pytest.approx(gs, rel=1e-5) and abs(z - gz) <= 1


def test_add_with_scalar_quantizes_tensor_input_only() -> None:
    gm = run_pt2e(Fn(lambda s, x: x + 1.5), (torch.randn(1, 4),))
    node = one(gm, aten.add.Tensor)
    assert node.args[0].target == DQ and node.args[1] == 1.5
    output_q(node)


# --------------------------------------------------------------------------- module configs


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
            nn.Conv2d(8, 8, 3, groups=8, padding=1), nn.ReLU6(),
        )
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, 16)
        self.classifier = nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 10))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(self.features(x)).flatten(1)
        return self.classifier(F.relu(self.fc(x)))  # type: ignore[no-any-return]


NET_EX = (torch.randn(1, 3, 12, 12),)


def _scope(node: Node) -> str:
    return list(node.meta["nn_module_stack"].values())[-1][0]


def _is_float_module_node(node: Node) -> bool:
    """No annotation touched this node: float weights, no q/dq around it from itself."""
    weights_float = all(
        not (isinstance(a, Node) and a.target in QDQ and a.target != DQ) for a in node.args
    )
    return weights_float and is_float_output(node)


def test_set_module_name_none_leaves_module_entirely_float() -> None:
    q = EspNNQuantizer().set_module_name("classifier", None)
    gm = run_pt2e(Net(), NET_EX, q)
    linears = {_scope(n): n for n in ops(gm, aten.linear.default)}
    assert set(linears) == {"fc", "classifier.0", "classifier.2"}
    for name in ("classifier.0", "classifier.2"):
        n = linears[name]
        assert n.args[1].op == "get_attr" and const(gm, n.args[1]).dtype == torch.float32
        assert n.args[2].op == "get_attr" and const(gm, n.args[2]).dtype == torch.float32
        assert _is_float_module_node(n)
    # the relu inside the float module stays float and is not fused into anything
    relu_in_classifier = [r for r in ops(gm, aten.relu.default) if _scope(r) == "classifier.1"]
    assert len(relu_in_classifier) == 1 and relu_in_classifier[0].args[0] is linears["classifier.0"]
    assert is_float_output(relu_in_classifier[0])
    assert linears["classifier.2"].args[0] is relu_in_classifier[0]
    # the rest is quantized
    assert weight_dq(gm, linears["fc"], 1)[0].dtype == torch.int8
    assert count(gm, DQC) == 3 * 2  # two convs + fc: weight and bias each


def test_set_module_type_none_keeps_all_linears_float() -> None:
    q = EspNNQuantizer().set_module_type(nn.Linear, None)
    gm = run_pt2e(Net(), NET_EX, q)
    for n in ops(gm, aten.linear.default):
        assert const(gm, n.args[1]).dtype == torch.float32
    for n in ops(gm, aten.conv2d.default):
        assert weight_dq(gm, n, 1)[0].dtype == torch.int8
    assert count(gm, DQC) == 2 * 2
    # relu after the (float) fc lives in Net.forward: quantized standalone, nothing fused
    fc = next(n for n in ops(gm, aten.linear.default) if _scope(n) == "fc")
    (user,) = fc.users
    assert user.target == Q


def test_module_name_beats_type_beats_global() -> None:
    q = (
        EspNNQuantizer()
        .set_global(None)
        .set_module_type(nn.Linear, MINMAX)
        .set_module_name("classifier.2", None)
    )
    gm = run_pt2e(Net(), NET_EX, q)
    linears = {_scope(n): n for n in ops(gm, aten.linear.default)}
    assert weight_dq(gm, linears["fc"], 1)[0].dtype == torch.int8
    assert weight_dq(gm, linears["classifier.0"], 1)[0].dtype == torch.int8
    assert const(gm, linears["classifier.2"].args[1]).dtype == torch.float32
    for n in ops(gm, aten.conv2d.default):  # global None
        assert const(gm, n.args[1]).dtype == torch.float32 and _is_float_module_node(n)
    # a more specific name wins over an enclosing one
    q2 = EspNNQuantizer().set_module_name("classifier", None).set_module_name("classifier.0", MINMAX)
    gm2 = run_pt2e(Net(), NET_EX, q2)
    linears2 = {_scope(n): n for n in ops(gm2, aten.linear.default)}
    assert weight_dq(gm2, linears2["classifier.0"], 1)[0].dtype == torch.int8
    assert const(gm2, linears2["classifier.2"].args[1]).dtype == torch.float32


def test_configured_observer_is_used_per_module() -> None:
    q = EspNNQuantizer().set_module_name("fc", EspNNQuantizationConfig.default("histogram"))
    p = prepared(Net(), NET_EX, q)
    fc = next(n for n in p.graph.nodes if n.target == aten.linear.default and _scope(n) == "fc")
    # fc's relu is fused and carries fc's output observer
    (relu,) = fc.users
    assert relu.target == aten.relu.default
    (obs_node,) = relu.users
    assert isinstance(getattr(p, obs_node.target), HistogramObserver)
    cls0 = next(n for n in p.graph.nodes if n.target == aten.linear.default and _scope(n) == "classifier.0")
    (relu0,) = cls0.users
    (obs0,) = relu0.users
    assert isinstance(getattr(p, obs0.target), MinMaxObserver)


def test_fusion_never_crosses_into_a_float_module() -> None:
    block = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU())
    model = Fn(lambda s, x: s.mods[0](x), block)
    ex = (torch.randn(1, 3, 8, 8),)
    # activation's module float: the conv quantizes its own output, the relu stays float
    gm = run_pt2e(model, ex, EspNNQuantizer().set_module_name("mods.0.1", None))
    conv, relu = one(gm, aten.conv2d.default), one(gm, aten.relu.default)
    output_q(conv)
    assert is_float_output(relu)
    # conv's module float: nothing is fused into it, the relu is quantized standalone
    gm = run_pt2e(model, ex, EspNNQuantizer().set_module_name("mods.0.0", None))
    conv, relu = one(gm, aten.conv2d.default), one(gm, aten.relu.default)
    assert const(gm, conv.args[1]).dtype == torch.float32
    assert relu.args[0].target == DQ
    output_q(relu)


def test_shared_ops_in_a_float_module_stay_float() -> None:
    model = Fn(lambda s, x: s.mods[1](s.mods[0](x)), nn.Conv2d(3, 4, 3), nn.MaxPool2d(2))
    gm = run_pt2e(model, (torch.randn(1, 3, 8, 8),), EspNNQuantizer().set_module_type(nn.MaxPool2d, None))
    pool = one(gm, aten.max_pool2d.default)
    assert is_float_output(pool)


# --------------------------------------------------------------------------- accuracy


class SmallConvNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16), nn.ReLU6(),
            nn.Conv2d(16, 16, 3, padding=1, groups=16), nn.BatchNorm2d(16), nn.ReLU6(),
            nn.Conv2d(16, 24, 1), nn.BatchNorm2d(24),
            nn.MaxPool2d(2),
        )
        self.res = nn.Conv2d(24, 24, 3, padding=1)
        self.head = nn.Linear(24, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.body(x)
        y = F.relu(y + self.res(y))
        return self.head(y.mean((2, 3)))  # type: ignore[no-any-return]


def _trained_like_net(seed: int) -> nn.Module:
    torch.manual_seed(seed)
    net = SmallConvNet()
    for m in net.modules():  # non-trivial BN statistics, as after training
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.2, 0.2)
            m.running_var.uniform_(0.5, 1.5)
            m.weight.data.uniform_(0.7, 1.3)
    return net.eval()


@pytest.mark.parametrize("observer", ["histogram", "minmax"])
def test_quantized_small_conv_net_sqnr(observer: str) -> None:
    """One int8 tensor quantized over its range gives ~40 dB SQNR (Gaussian data); this net, with five requantized tensors in series, measures 41-45 dB over four
    seeds with either observer.  35 dB leaves margin for seeds while a real scheme error
    (bias scale off by a factor, weights on the wrong axis, a clamp lost from the range)
    costs far more than 6 dB."""
    net = _trained_like_net(4)
    g = torch.Generator().manual_seed(5)
    calib = [(torch.randn(1, 3, 32, 32, generator=g),) for _ in range(16)]
    gm = run_pt2e(net, calib[0], EspNNQuantizer(EspNNQuantizationConfig.default(observer)), calib)  # type: ignore[arg-type]
    test = torch.randn(8, 3, 32, 32, generator=g)
    with torch.no_grad():
        ref = net(test)
        got = torch.cat([gm(test[i : i + 1]) for i in range(8)])
    assert sqnr_db(ref, got) > 35.0


def test_observer_choice() -> None:
    assert EspNNQuantizationConfig.default() == MINMAX
    assert EspNNQuantizationConfig.default().activation.observer_or_fake_quant_ctr is MinMaxObserver
    hist = EspNNQuantizationConfig.default("histogram").activation.observer_or_fake_quant_ctr
    assert hist is HistogramObserver
    assert EspNNQuantizationConfig.default().weight.observer_or_fake_quant_ctr is PerChannelMinMaxObserver


class InvertedResidual(nn.Module):
    def __init__(self, c: int, expand: int) -> None:
        super().__init__()
        h = c * expand
        self.block = nn.Sequential(
            nn.Conv2d(c, h, 1, bias=False), nn.BatchNorm2d(h), nn.ReLU6(inplace=True),
            nn.Conv2d(h, h, 3, padding=1, groups=h, bias=False), nn.BatchNorm2d(h), nn.ReLU6(inplace=True),
            nn.Conv2d(h, c, 1, bias=False), nn.BatchNorm2d(c),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.block(x)  # type: ignore[no-any-return]


class MiniMobileNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU6())
        self.blocks = nn.Sequential(InvertedResidual(8, 4), InvertedResidual(8, 6))
        self.head = nn.Sequential(nn.Dropout(0.2), nn.Linear(8, 5))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.blocks(self.stem(x))
        y = F.adaptive_avg_pool2d(y, 1).flatten(1)
        return F.softmax(self.head(y), dim=-1)


class DsCnn(nn.Module):
    """Keyword-spotting DS-CNN shape: conv, depthwise-separable blocks, avg pool, linear."""

    def __init__(self) -> None:
        super().__init__()
        layers: list[nn.Module] = [nn.Conv2d(1, 16, (10, 4), stride=2, padding=(5, 1)), nn.BatchNorm2d(16), nn.ReLU()]
        for _ in range(2):
            layers += [nn.Conv2d(16, 16, 3, padding=1, groups=16), nn.BatchNorm2d(16), nn.ReLU(),
                       nn.Conv2d(16, 16, 1), nn.BatchNorm2d(16), nn.ReLU()]
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(16, 12)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(F.avg_pool2d(self.features(x), (25, 5)).flatten(1))  # type: ignore[no-any-return]


def _assert_fully_quantized(gm: GraphModule) -> None:
    """Every compute op reads dequantized int8/int32 data and its result (or its fused
    activation's) is quantized: the delegate can take the whole graph."""
    fused: set[Node] = set()
    for n in gm.graph.nodes:
        if n.op != "call_function" or n.target in QDQ:
            continue
        tensor_args = [a for a in n.args if isinstance(a, Node)]
        for a in n.args:
            if isinstance(a, (list, tuple)):
                tensor_args += [t for t in a if isinstance(t, Node)]
        for a in tensor_args:
            assert a.target in (DQ, DQC) or a in fused, n.format_node()
        (user,) = n.users
        if user.target == Q:
            continue
        assert clamp_bounds(user) is not None and output_q(user) is not None, n.format_node()
        fused.add(n)


@pytest.mark.parametrize(("net", "shape"), [(MiniMobileNet, (1, 3, 32, 32)), (DsCnn, (1, 1, 49, 10))],
                         ids=["mobilenet-like", "ds-cnn"])
def test_whole_networks_are_fully_quantized(net: Callable[[], nn.Module], shape: tuple[int, ...]) -> None:
    torch.manual_seed(8)
    model = _bn_stats(net().eval())
    g = torch.Generator().manual_seed(9)
    calib = [(torch.randn(shape, generator=g),) for _ in range(8)]
    gm = run_pt2e(model, calib[0], calib=calib)
    _assert_fully_quantized(gm)
    convs = ops(gm, aten.conv2d.default) + ops(gm, aten.linear.default)
    assert count(gm, aten.batch_norm.default) == 0
    assert count(gm, DQC) == 2 * len(convs)  # BN folding gave every conv an int32 bias
    x = torch.randn(shape, generator=g)
    with torch.no_grad():
        assert sqnr_db(model(x), gm(x)) > 30.0


def _bn_stats(net: nn.Module) -> nn.Module:
    for m in net.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.2, 0.2)
            m.running_var.uniform_(0.5, 1.5)
    return net


# --------------------------------------------------------------------------- configs


def test_config_rejects_schemes_espnn_cannot_run() -> None:
    base = EspNNQuantizationConfig.default()
    uint8_act = QuantizationSpec(
        dtype=torch.uint8, quant_min=0, quant_max=255, qscheme=torch.per_tensor_affine,
        observer_or_fake_quant_ctr=MinMaxObserver,
    )
    with pytest.raises(QuantizerConfigError, match="activation dtype"):
        EspNNQuantizationConfig(activation=uint8_act, weight=base.weight)
    per_tensor_w = QuantizationSpec(
        dtype=torch.int8, quant_min=-127, quant_max=127, qscheme=torch.per_tensor_symmetric,
        observer_or_fake_quant_ctr=MinMaxObserver,
    )
    with pytest.raises(QuantizerConfigError, match="weight qscheme"):
        EspNNQuantizationConfig(activation=base.activation, weight=per_tensor_w)
    narrow_w = QuantizationSpec(
        dtype=torch.int8, quant_min=-128, quant_max=127, qscheme=torch.per_channel_symmetric,
        ch_axis=0, observer_or_fake_quant_ctr=MinMaxObserver,
    )
    with pytest.raises(QuantizerConfigError, match=r"weight range \[-128, 127\]"):
        EspNNQuantizationConfig(activation=base.activation, weight=narrow_w)
    minmax_w = QuantizationSpec(
        dtype=torch.int8, quant_min=-127, quant_max=127, qscheme=torch.per_channel_symmetric,
        ch_axis=0, observer_or_fake_quant_ctr=MinMaxObserver.with_args(eps=1e-6),
    )
    with pytest.raises(QuantizerConfigError, match="weight observer MinMaxObserver is not per-channel"):
        EspNNQuantizationConfig(activation=base.activation, weight=minmax_w)
    custom = EspNNQuantizationConfig(  # a per-channel observer with other arguments is fine
        activation=base.activation,
        weight=QuantizationSpec(
            dtype=torch.int8, quant_min=-127, quant_max=127, qscheme=torch.per_channel_symmetric,
            ch_axis=0, observer_or_fake_quant_ctr=PerChannelMinMaxObserver.with_args(eps=1e-6),
        ),
    )
    assert custom.weight.ch_axis == 0
    with pytest.raises(QuantizerConfigError, match="unknown activation observer 'percentile'"):
        EspNNQuantizationConfig.default("percentile")  # type: ignore[arg-type]


def test_quantizer_setters_reject_wrong_types() -> None:
    q = EspNNQuantizer()
    with pytest.raises(TypeError, match="EspNNQuantizationConfig"):
        q.set_global("int8")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"nn\.Module subclass"):
        q.set_module_type("Linear", None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="qualified module name"):
        q.set_module_name(nn.Linear, None)  # type: ignore[arg-type]


def test_global_none_quantizes_nothing() -> None:
    gm = run_pt2e(Net(), NET_EX, EspNNQuantizer().set_global(None))
    assert not any(n.target in QDQ for n in gm.graph.nodes)


# --------------------------------------------------------------------------- quantize()


class Tiny(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.drop = nn.Dropout(0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.drop(F.relu(self.conv(x)))  # type: ignore[no-any-return]


TINY_EX = (torch.randn(1, 3, 8, 8),)


def test_quantize_without_calibration_uses_random_data_and_says_so() -> None:
    m = Tiny().train()
    r = quantize(m, TINY_EX)
    assert isinstance(r, QuantizeResult)
    assert r.calibrated is False and r.calibration_batches == 8
    assert isinstance(r.exported, torch.export.ExportedProgram)
    assert m.training  # the caller's mode is restored
    assert count(r.graph_module, DQC) == 2
    # seeded: the same model gives the same qparams every time
    r2 = quantize(m, TINY_EX)
    assert [qparams(n) for n in ops(r.graph_module, Q)] == [qparams(n) for n in ops(r2.graph_module, Q)]


def test_random_calibration_is_drawn_like_the_example_inputs() -> None:
    image = torch.rand(1, 3, 16, 16)
    ids = torch.randint(3, 9, (1, 5))
    mask = torch.rand(1, 5) > 0.5
    ex = (image, ids, mask, 0.5)
    batches = random_calibration(ex, batches=8, seed=1)
    assert len(batches) == 8 and batches[0] == ex
    for b in batches[1:]:
        assert [type(v) for v in b] == [type(v) for v in ex]
        assert b[0].shape == image.shape and b[0].dtype == image.dtype
        assert float(b[0].min()) >= float(image.min()) and float(b[0].max()) <= float(image.max())
        assert abs(float(b[0].mean()) - float(image.mean())) < 0.05
        assert b[1].dtype == torch.int64 and int(b[1].min()) >= 3 and int(b[1].max()) <= 8
        assert b[2].dtype == torch.bool and b[3] == 0.5
        assert not torch.equal(b[0], image)
    again = random_calibration(ex, batches=8, seed=1)
    assert all(torch.equal(a[0], b[0]) for a, b in zip(batches, again, strict=True))


def test_quantize_drops_the_replaced_float_weights() -> None:
    r = quantize(Tiny(), TINY_EX)
    assert not list(r.graph_module.parameters())
    dtypes = sorted({str(b.dtype) for b in r.graph_module.buffers()})
    assert dtypes == ["torch.float32", "torch.int32", "torch.int64", "torch.int8"]  # scales, bias, zps, weights
    ep = torch.export.export(r.graph_module, TINY_EX)
    assert all(n.users for n in ep.graph.nodes if n.op == "placeholder")


def test_quantize_with_calibration() -> None:
    g = torch.Generator().manual_seed(7)
    batches: list[Any] = [(torch.randn(1, 3, 8, 8, generator=g),) for _ in range(31)]
    batches.append(torch.randn(1, 3, 8, 8, generator=g))  # a bare tensor is a 1-input batch
    torch.manual_seed(7)
    r = quantize(Tiny(), TINY_EX, calibration=iter(batches))
    assert r.calibrated is True and r.calibration_batches == 32
    x = torch.randn(1, 3, 8, 8, generator=g)
    with torch.no_grad():  # 32 batches cover the input range well: measured ~40 dB
        assert sqnr_db(r.exported.module()(x), r.graph_module(x)) > 30.0


@pytest.mark.parametrize(
    ("bad", "pattern"),
    [
        (torch.randn(1, 3, 9, 9),
         r"calibration batch 2, input 0: expected tensor of shape \(1, 3, 8, 8\) and dtype "
         r"torch.float32, got tensor of shape \(1, 3, 9, 9\) and dtype torch.float32"),
        (torch.randn(1, 3, 8, 8).double(),
         r"calibration batch 2, input 0: .* got tensor of shape \(1, 3, 8, 8\) and dtype torch.float64"),
        ((torch.randn(1, 3, 8, 8), torch.randn(1, 3, 8, 8)),
         r"calibration batch 2: expected 1 input\(s\) like example_inputs, got 2"),
        ({"x": torch.randn(1, 3, 8, 8)}, r"calibration batch 2: expected a tuple of 1 input\(s\)"),
        (("not a tensor",), r"calibration batch 2, input 0: expected tensor .* got str"),
    ],
    ids=["shape", "dtype", "arity", "type", "non-tensor"],
)
def test_quantize_rejects_bad_calibration_batch(bad: Any, pattern: str) -> None:
    good = (torch.randn(1, 3, 8, 8),)
    with pytest.raises(CalibrationError, match=pattern):
        quantize(Tiny(), TINY_EX, calibration=[good, good, bad])


def test_quantize_rejects_a_bare_tensor_as_calibration() -> None:
    with pytest.raises(CalibrationError, match=r"iterable of input tuples .* shape \(4, 3, 8, 8\)"):
        quantize(Tiny(), TINY_EX, calibration=torch.randn(4, 3, 8, 8))  # type: ignore[arg-type]


def test_non_float_inputs_are_never_observed() -> None:
    class Gather(nn.Module):
        def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            return x * mask

    gm = run_pt2e(Gather(), (torch.randn(1, 8), torch.ones(1, 8, dtype=torch.int64)),
                  calib=[(torch.randn(1, 8), torch.ones(1, 8, dtype=torch.int64))])
    mul = one(gm, aten.mul.Tensor)
    assert mul.args[0].target == DQ and mul.args[1].op == "placeholder"


class RangeChecked(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        torch._assert_async(x.abs().max() < 100, "input out of range")
        return self.fc(x)  # type: ignore[no-any-return]


def test_quantize_reports_the_batch_the_model_failed_on() -> None:
    calib = [(torch.randn(1, 4),), (torch.full((1, 4), 1000.0),)]
    with pytest.raises(CalibrationError, match="calibration batch 1: the model failed on it: "
                                               "RuntimeError: input out of range"):
        quantize(RangeChecked(), (torch.randn(1, 4),), calibration=calib)


def test_quantize_rejects_empty_calibration() -> None:
    with pytest.raises(CalibrationError, match="calibration data is empty"):
        quantize(Tiny(), TINY_EX, calibration=[])


class DataDependent(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.sum() > 0:
            return x * 2
        return x


def test_quantize_export_failure_raises_export_error_with_hint() -> None:
    with pytest.raises(ExportError) as info:
        quantize(DataDependent(), (torch.randn(1, 4),))
    msg = str(info.value)
    assert msg.startswith("torch.export failed for DataDependent: ")
    assert "data-dependent control flow" in msg and "torch.cond" in msg
    assert "pytorch.org/docs/stable/export.html" in msg
    assert "at test_quantizer.py:" in msg and "in forward: if x.sum() > 0:" in msg
    assert isinstance(info.value.__cause__, Exception)
    # first line of the original error is quoted
    first = str(info.value.__cause__).strip().splitlines()[0]
    assert first in msg


def test_quantize_rejects_non_tuple_example_inputs() -> None:
    with pytest.raises(ExportError, match="example_inputs must be a tuple"):
        quantize(Tiny(), {"x": torch.randn(1, 3, 8, 8)})  # type: ignore[arg-type]


# --------------------------------------------------------------------------- helpers for the lowering


def test_clamp_bounds_reads_keywords_and_defaults() -> None:
    g = torch.fx.Graph()
    x = g.placeholder("x")
    cases = {
        g.call_function(aten.hardtanh.default, (x,), {"min_val": 0.0, "max_val": 6.0}): (0.0, 6.0),
        g.call_function(aten.hardtanh.default, (x,)): (-1.0, 1.0),
        g.call_function(aten.hardtanh_.default, (x, -2.0), {"max_val": 3}): (-2.0, 3.0),
        g.call_function(aten.clamp.default, (x,), {"max": 6}): (None, 6.0),
        g.call_function(aten.clamp.default, (x, None, 4.0)): (None, 4.0),
        g.call_function(aten.clamp_min.default, (x, 0.5)): (0.5, None),
        g.call_function(aten.clamp_max.default, (x,), {"max": 2.0}): (None, 2.0),
        g.call_function(aten.relu_.default, (x,)): (0.0, None),
        g.call_function(aten.relu6.default, (x,)): (0.0, 6.0),
    }
    for node, want in cases.items():
        assert clamp_bounds(node) == want, node.format_node()
    with pytest.raises(ValueError, match="not a clamp-like activation"):
        clamp_bounds(g.call_function(aten.sigmoid.default, (x,)))


def test_clamp_bounds_on_edge_dialect_nodes() -> None:
    from executorch.exir import to_edge

    model = Fn(lambda s, x: F.relu6(s.mods[0](x)), nn.Conv2d(3, 4, 3))
    r = quantize(model, (torch.randn(1, 3, 8, 8),))
    edge = to_edge(torch.export.export(r.graph_module, (torch.randn(1, 3, 8, 8),)))
    (ht,) = [n for n in edge.exported_program().graph.nodes
             if n.op == "call_function" and "hardtanh" in str(n.target)]
    assert clamp_bounds(ht) == (0.0, 6.0)
