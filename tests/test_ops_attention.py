"""Attention and shuffle operators (issues 17, 25): layer norm, activation x activation matmul,
division by a number and by a non-negative tensor (linear attention), expand, and the rank-5/6 movement, SDPA and unbind rewrites.  Each
one-op (or small) module goes through EspNNQuantizer -> EspNNPartitioner; the delegate must
take all of it, hold the expected payload ops, and match PyTorch's convert_pt2e module
within 1 LSB on every element (devkit.lowering_helpers.check_numerics).  What stays on the
CPU says why."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from devkit.lowering_helpers import check_numerics, lower, opcode_set
from executorch_espnn.graph.qdq import QParams
from executorch_espnn.ops.norm import layer_norm_constants
from executorch_espnn.payload import Opcode
from executorch_espnn.quantizer import EspNNQuantizer
from executorch_espnn.reference import run_delegate
from executorch_espnn.unsupported import Unsupported
from tests import engine_helpers as eh
from tests.arch_blocks import Attention, LiteMLA, channel_shuffle


class Fn(nn.Module):
    def __init__(self, fn: Callable[..., torch.Tensor], *mods: nn.Module) -> None:
        super().__init__()
        self.fn = fn
        self.mods = nn.ModuleList(mods)

    def forward(self, *xs: torch.Tensor) -> torch.Tensor:
        return self.fn(self.mods, *xs)


def _ln(d: int, affine: bool = True) -> nn.Module:
    m = nn.LayerNorm(d, elementwise_affine=affine)
    if affine:
        with torch.no_grad():  # a trained norm's weight and bias, not 1 and 0
            m.weight.uniform_(0.5, 1.5)
            m.bias.uniform_(-0.3, 0.3)
    return m


CASES: list[tuple[str, Callable[[], nn.Module], tuple[tuple[int, ...], ...], set[Opcode]]] = [
    ("layer_norm_tokens", lambda: _ln(16), ((2, 5, 16),), {Opcode.LAYER_NORM}),
    ("layer_norm_no_affine", lambda: _ln(24, affine=False), ((3, 24),), {Opcode.LAYER_NORM}),
    ("layer_norm_rank4", lambda: _ln(20), ((1, 2, 3, 20),), {Opcode.LAYER_NORM}),
    ("matmul_q_kT", lambda: Fn(lambda m, q, k: q @ k.transpose(-2, -1)), ((1, 2, 6, 8), (1, 2, 6, 8)),
     {Opcode.BATCH_MATMUL}),
    ("bmm", lambda: Fn(lambda m, a, b: torch.bmm(a, b)), ((2, 5, 8), (2, 8, 6)), {Opcode.BATCH_MATMUL}),
    ("mm_relu", lambda: Fn(lambda m, a, b: F.relu(a @ b)), ((7, 16), (16, 9)), {Opcode.BATCH_MATMUL}),
    ("matmul_broadcast_a", lambda: Fn(lambda m, a, b: a @ b), ((4, 20), (3, 20, 5)), {Opcode.BATCH_MATMUL}),
    ("div_by_number", lambda: Fn(lambda m, x: x / 2.8284), ((1, 3, 4, 5),), {Opcode.LUT}),
    ("expand", lambda: Fn(lambda m, x: m[0](x).expand(1, 3, 4, 5), nn.Conv2d(3, 3, 1)), ((1, 3, 1, 5),),
     {Opcode.CONCAT}),
    ("channel_shuffle_rank5", lambda: Fn(lambda m, x: channel_shuffle(m[0](x), 2), nn.Conv2d(4, 8, 1)),
     ((1, 4, 5, 6),), {Opcode.CONV2D}),
    ("attention_head_split_sdpa", lambda: Attention(16, 4), ((1, 6, 16),),
     {Opcode.FULLY_CONNECTED, Opcode.BATCH_MATMUL, Opcode.SOFTMAX}),
]


@pytest.mark.parametrize(("name", "make", "shapes", "ops"), CASES, ids=[c[0] for c in CASES])
def test_op_is_delegated_and_matches_pytorch(name: str, make: Callable[[], nn.Module],
                                             shapes: tuple[tuple[int, ...], ...], ops: set[Opcode]) -> None:
    torch.manual_seed(0)
    low = lower(make().eval(), tuple(torch.randn(s) for s in shapes))
    assert low.cpu() == [], [(d.op, d.reason) for d in low.cpu()]
    assert ops <= opcode_set(low), low.opcodes()
    check_numerics(low)


def test_channel_shuffle_costs_no_transpose_after_a_conv() -> None:
    """The conv's NHWC result viewed as [N, g, C/g, H, W] and transposed costs one TRANSPOSE
    (the rank-5 chain rebuilt as reshape -> permute -> reshape of rank 4, both reshapes
    free in the layouts they keep)."""
    torch.manual_seed(0)
    m = Fn(lambda m, x: m[1](channel_shuffle(m[0](x), 2)), nn.Conv2d(4, 8, 1), nn.Conv2d(8, 8, 1)).eval()
    low = lower(m, (torch.randn(1, 4, 5, 6),))
    assert low.cpu() == []
    ops = low.opcodes()
    # QUANTIZE and DEQUANTIZE do the boundary's NCHW <-> NHWC: the one TRANSPOSE is the shuffle
    assert ops == ["QUANTIZE", "CONV2D", "RESHAPE", "TRANSPOSE", "RESHAPE", "CONV2D", "DEQUANTIZE"], ops
    check_numerics(low)


def test_sdpa_rewrite_keeps_pytorch_numerics_of_the_quantized_model() -> None:
    """The decomposed attention is what convert_pt2e quantizes: its float model equals the
    original SDPA model's output."""
    torch.manual_seed(0)
    m = Attention(16, 4).eval()
    x = torch.randn(1, 6, 16)
    gm = torch.export.export(m, (x,)).module()
    rewritten = EspNNQuantizer().transform_for_annotation(gm)
    targets = {str(n.target) for n in rewritten.graph.nodes if n.op == "call_function"}
    assert "aten.scaled_dot_product_attention.default" not in targets
    assert "aten.unbind.int" not in targets
    torch.testing.assert_close(rewritten(x), m(x), rtol=1e-5, atol=1e-5)


def test_rank5_rewrite_is_rank_4_and_exact() -> None:
    m = Fn(lambda m, x: channel_shuffle(x, 4)).eval()
    x = torch.randn(1, 8, 3, 5)
    gm = EspNNQuantizer().transform_for_annotation(torch.export.export(m, (x,)).module())
    for n in gm.graph.nodes:
        val = n.meta.get("val")
        if isinstance(val, torch.Tensor):
            assert val.dim() <= 4, (n.name, val.shape)
    assert torch.equal(gm(x), m(x))


@pytest.mark.parametrize(
    ("make", "shapes", "op", "reason"),
    [
        (lambda: Fn(lambda m, a, b: a / b), ((1, 3, 4), (1, 3, 4)), "aten.div.Tensor", "division by a tensor"),
        (lambda: Fn(lambda m, a, b: a @ b), ((2, 1, 4, 8), (1, 3, 8, 5)), "aten.bmm.default",
         "broadcast partially"),
        (lambda: Fn(lambda m, x: x.reshape(1, 2, 2, 2, 3, 2).permute(0, 2, 1, 4, 3, 5).reshape(1, 8, 6)),
         ((1, 8, 6),), "aten.permute_copy.default", "rank 6"),
    ],
    ids=["div_by_tensor", "matmul_partial_broadcast", "rank6_permutation"],
)
def test_what_stays_on_the_cpu_says_why(make: Callable[[], nn.Module], shapes: tuple[tuple[int, ...], ...],
                                         op: str, reason: str) -> None:
    torch.manual_seed(0)
    low = lower(make().eval(), tuple(torch.randn(s) for s in shapes))
    cpu = {d.op: d.reason for d in low.cpu()}
    assert op in cpu, [(d.op, d.reason) for d in low.decisions]
    assert reason in cpu[op], cpu[op]


def test_layer_norm_constants_out_of_the_fixed_point_are_refused_naming_them() -> None:
    """gamma / s_out and beta / s_out beyond the engine's int32 constants, and an eps too
    large for the input scale, are refused (the op then stays on the CPU with this reason)."""
    qin, qout = QParams(0.05, 0), QParams(1e-6, 0)
    with pytest.raises(Unsupported, match="layer norm weight / output scale"):
        layer_norm_constants(np.full(4, 1e9), None, 1e-5, 4, qin, qout)
    with pytest.raises(Unsupported, match="layer norm bias / output scale"):
        layer_norm_constants(None, np.full(4, 1e6), 1e-5, 4, qin, QParams(1.0, 0))
    with pytest.raises(Unsupported, match="too large for the input scale"):
        layer_norm_constants(None, None, 1e6, 4096, QParams(1e-4, 0), QParams(1.0, 0))


def test_causal_or_boolean_masked_sdpa_is_left_alone_saying_why() -> None:
    """-inf scores cannot be int8: such an SDPA is not decomposed (to_edge's decomposition
    then stays on the CPU, its masking operators named by the partitioner)."""
    from executorch_espnn.quantizer.rewrites import sdpa_refusal

    q = torch.randn(1, 2, 4, 8)
    for kwargs, why in (({"is_causal": True}, "is_causal=True"),
                        ({"attn_mask": torch.ones(4, 4, dtype=torch.bool)}, "boolean mask")):
        m = Fn(lambda m, q, k, v, kw=kwargs: F.scaled_dot_product_attention(q, k, v, **kw)).eval()
        gm = EspNNQuantizer().transform_for_annotation(torch.export.export(m, (q, q, q)).module())
        (sdpa,) = [n for n in gm.graph.nodes if n.target is torch.ops.aten.scaled_dot_product_attention.default]
        reason = sdpa_refusal(sdpa)
        assert reason is not None and why in reason and "instead" in reason, reason


# ------------------------------------------------------------------ linear attention (issue 25)


def test_autocast_off_block_is_inlined_and_exact() -> None:
    """``with torch.autocast(enabled=False)`` (LiteMLA's ``_attn``) exports as a
    ``wrap_with_autocast`` operator around a submodule; the rewrite puts its operators in the
    graph (less the no-op float32 casts), computing exactly what the block computes."""
    torch.manual_seed(0)
    m = LiteMLA(16, 8).eval()
    x = torch.randn(1, 16, 6, 6)
    gm = torch.export.export(m, (x,)).module()
    assert any("autocast" in str(n.target) for n in gm.graph.nodes)
    rewritten = EspNNQuantizer().transform_for_annotation(gm)
    targets = [str(n.target) for n in rewritten.graph.nodes if n.op == "call_function"]
    assert not any("autocast" in t or "to.dtype" in t for t in targets), targets
    assert targets.count("aten.matmul.default") == 2 and "aten.div.Tensor" in targets
    assert torch.equal(rewritten(x), m(x))


def test_enabled_autocast_block_is_left_alone() -> None:
    """An enabled autocast casts for real (bfloat16 on the CPU): it is not inlined."""

    class Cast(nn.Module):
        def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
            with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
                return (a @ b).float()

    gm = torch.export.export(Cast(), (torch.randn(4, 8), torch.randn(8, 4))).module()
    rewritten = EspNNQuantizer().transform_for_annotation(gm)
    assert any("autocast" in str(n.target) for n in rewritten.graph.nodes)


def test_lite_mla_is_one_partition_bit_exact_on_the_engine() -> None:
    """EfficientViT-B's ReLU linear attention (tests/arch_blocks.LiteMLA: qkv conv,
    multi-scale aggregation, head split, ReLU kernels, ``v`` padded with ones, ``k^T @ v``,
    ``q @ kv``, the normaliser ``out[..., :-1] / (out[..., -1:] + eps)``, projection): one
    partition with nothing on the CPU, its two matmuls and the division among the payload's
    ops; the delegate within 1 LSB of convert_pt2e on every element, and the C engine's
    outputs byte for byte the Python reference's."""
    torch.manual_seed(0)
    m = LiteMLA(32, 8).eval()
    low = lower(m, (torch.randn(1, 32, 8, 8),))
    assert low.cpu() == [], [(d.op, d.reason) for d in low.cpu()]
    assert len(low.payloads) == 1
    ops = low.opcodes()
    assert ops.count("BATCH_MATMUL") == 2 and ops.count("DIV") == 1, ops
    errs = check_numerics(low)
    assert max(errs) <= 1
    exe = eh.build(eh.HOST)
    for seed in (0, 1):
        xs = [x.numpy() for x in low.grid_inputs(seed)]
        ref = run_delegate(low.payloads[0], xs)
        r = eh.run(exe, eh.HOST, low.payloads[0], xs, len(ref))
        assert r.returncode == 0, r.stderr[-2000:]
        assert r.outputs == [np.ascontiguousarray(a).tobytes() for a in ref]
