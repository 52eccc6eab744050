"""Whole models of the architecture kinds issues 17 and 25 found split (tests/arch_blocks.py): a
ShuffleNetV2-style network (rank-5 channel shuffle), a MobileViT-style network (patch
unfold/fold, layer norm, multi-head SDPA with the rank-5 qkv head split, SiLU MLP), the
EfficientViT-M and EfficientViT-B (ReLU linear attention, its division by a tensor) kinds.  Each
must be fully delegated in ONE partition, as the lowering report says, and its delegate
must agree with PyTorch's convert_pt2e model on real inputs (scikit-learn's digits) within
1 LSB on every logit."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from devkit.lowering_helpers import lower, lsb_errors
from executorch_espnn.payload import decode
from executorch_espnn.reference import run_delegate
from executorch_espnn.report import build_report
from tests.arch_blocks import (
    EfficientViTBTiny,
    EfficientViTTiny,
    MobileViTTiny,
    ShuffleNetTiny,
    digits_images,
    split,
)

MODELS: dict[str, type[nn.Module]] = {
    "shufflenet": ShuffleNetTiny, "mobilevit": MobileViTTiny, "efficientvit": EfficientViTTiny,
    "efficientvit_b": EfficientViTBTiny,
}


@pytest.mark.slow  # about a minute per model on one core
@pytest.mark.parametrize("name", list(MODELS))
def test_block_is_one_partition_and_matches_pytorch(name: str) -> None:
    x, _ = digits_images(32)
    train, test = split()
    torch.manual_seed(0)
    m = MODELS[name]().eval()
    calib = [(x[i:i + 1],) for i in train[:32]]
    low = lower(m, (x[test[:1]],), calib=calib, target="esp32s3")
    rep = build_report(low.pte, target="esp32s3")
    assert len(rep.partitions) == 1, rep.summary()
    assert rep.cpu_ops == [], [(e.op, e.reason) for e in rep.cpu_ops]
    assert len(low.payloads) == 1
    errs = []
    for i in test[:8]:
        xi = x[i:i + 1]
        got = run_delegate(low.payloads[0], [xi.numpy()])
        errs += lsb_errors(got, [low.converted(xi)], low.output_qparams())
    assert max(errs) <= 1, errs
    if name == "mobilevit":  # the attention ops run on the delegate, their fast path named
        norms = [f for f in rep.fast_path if f.layer.startswith("layer norm")]
        assert norms and all(not f.fast and "engine C kernel" in f.why for f in norms), norms
        assert [f for f in rep.fast_path if f.layer.startswith("matmul")], rep.fast_path
    if name == "efficientvit_b":  # each block's k^T @ v, q @ kv and normaliser on the delegate
        ops = [op.opcode.name for op in decode(low.payloads[0]).ops]
        assert ops.count("DIV") == 2 and ops.count("BATCH_MATMUL") == 4, ops
