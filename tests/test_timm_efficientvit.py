"""timm's own EfficientViT-B0 (issue 25), not the hand-written block of tests/arch_blocks.py:
one partition, nothing on the CPU, and on the example input (one of the calibration batches) every
logit within 1 LSB of convert_pt2e.  Random weights: on unseen random inputs only 61-87 % of the
1000 logits are within 1 LSB (worst 3-6 LSB), which is the random-weight net's chaos, not a
mismatch: per layer in place every op is within 1 LSB of convert_pt2e and the forced run is exact
(docs/operators.md, EfficientViT-B0), so only the example input is asserted here.

Optional: timm is no dependency of the project (CI has none; the test skips).  To run it, a side
venv that keeps the project's torch 2.13.0 (never let pip touch torch):

    python3.11 -m venv --system-site-packages /work/venv-timm
    /work/venv-timm/bin/pip install --no-deps timm huggingface_hub safetensors pyyaml pillow \\
        torchvision==0.28.0

with the project's site-packages on its path.  The registry's torchvision 0.28.0 is a CUDA build
whose ``_C.so`` does not load beside torch 2.13.0+cpu, so ``import torchvision`` needs its
``torchvision::*`` op names defined first (timm's classifiers call none of them).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from devkit.lowering_helpers import lower
from executorch_espnn.reference import run_delegate

timm = pytest.importorskip(
    "timm", reason="timm is optional: see this module's docstring for the side venv that has it")


@pytest.mark.slow
def test_timm_efficientvit_b0_is_one_partition_with_nothing_on_the_cpu() -> None:
    torch.manual_seed(0)
    m = timm.create_model("efficientvit_b0", pretrained=False).eval()
    low = lower(m, (torch.randn(1, 3, 64, 64),), target="esp32s3")
    assert len(low.payloads) == 1, low.partitioner.partition_starts
    assert not low.cpu(), sorted({(str(d.op), d.reason) for d in low.cpu()})
    (x,) = low.example
    got = run_delegate(low.payloads[0], [x.numpy()])[0]
    with torch.no_grad():
        want = low.converted(x).numpy()
    ((scale, _),) = low.output_qparams()
    lsb = np.abs(np.round(got / scale) - np.round(want / scale))
    assert lsb.max() <= 1, f"{float((lsb <= 1).mean()):.4f} within 1 LSB, worst {lsb.max()}"
