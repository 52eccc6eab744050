"""Whole zoo models: the delegate's bit-exact reference against the PyTorch quantized model.

Each model here lowers to one delegate (quantize -> network -> dequantize inside the
payload), so ``reference`` running the payload computes the whole model the way the device
does.  The golden is the quantized PyTorch program that was lowered (``convert_pt2e``'s q/dq
graph), evaluated with torch.

Two checks:

- **Layer by layer, in place**: the payload runs op by op in the simulated device memory;
  after each op, its int8 output is compared with the golden's value of that tensor (within
  1 LSB on every element) and then overwritten with it, so every op is judged on the
  golden's inputs.  This covers every op the lowering emitted for the model, with the
  model's real memory plan.
- **Free running**: the payload from the float input to the float output, against the same
  quantized program evaluated exactly (``tests/exact_quant.py``: float64 math, exact
  quantize/dequantize).  Torch's float32 evaluation of that program is itself unstable on
  deep networks (float32 round-off near rounding boundaries, amplified layer after layer;
  see exact_quant's docstring), so it is the reference only for top-1, and its agreement is
  printed.  Against the exact program every model must agree in top-1 on every input, up to
  the per-element tolerance (the winner's exact value is within 2 LSB of the exact maximum:
  two outputs each 1 LSB off can swap places), and have at least 99% of its output elements
  within 1 LSB, except MobileNetV1 (below).

The MobileNets (random weights, 30-60 layers) can fall below 99% free running.  Traced element by
element, each divergence starts at ONE output of one layer (e.g. 1 of 36,864 in MobileNetV1's
fourth conv) whose exact value sits within ~1e-5 LSB of a rounding boundary (e.g. -2.4999927):
ESP-NN's fixed-point requantisation (an int32 multiplier of 21-31 significant bits; for
multipliers below 2^-11 a second rounding in the right shift) lands on the other side, and the
network amplifies that single LSB over the following layers.  The engine must stay bit-exact
with ESP-NN, so that is the floor of int8 fixed-point arithmetic on these networks, and where
the flips land depends on the calibration (MobileNetV1 has 2 outputs: one element of its 4
test inputs is 12.5%; measured 75-87.5%; MobileNetV2 93% with 4 calibration batches, 99.75%
with the 8 used here, so it is held at 99%).  For MobileNetV1 the precise check is the in-place
one above (every layer within 1 LSB of the exact program on exact inputs); its free-running
bounds only catch gross errors (a wrong zero point, layout or multiplier moves outputs by tens
of LSB), and the figures are printed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
import torch

from devkit.lowered_zoo import lowered_zoo
from devkit.lowering_helpers import check_in_place
from devkit.zoo import ZOO
from executorch_espnn.lowering import LoweredModel
from executorch_espnn.payload import Opcode, Payload, decode
from executorch_espnn.pte import delegate_payloads
from executorch_espnn.reference import run_delegate
from tests.exact_quant import lsb_distance, run_exact

pytestmark = pytest.mark.slow


@dataclass(frozen=True)
class Expect:
    name: str
    classifier: bool
    min_within_1lsb: float = 0.99  # share of output elements within 1 LSB of the exact program
    max_lsb: float | None = None  # worst output element, in LSB of the exact program


MODELS = [
    Expect("dense_autoencoder", False),
    Expect("ds_cnn_kws", True),
    Expect("resnet8", True),
    # MobileNetV2 meets the 99% with this calibration (measured 99.75%, worst 2 LSB; 93% with 4
    # calibration batches); MobileNetV1 does not: gross-error bounds, see the module docstring
    Expect("mobilenet_v2_0.35_96", True, 0.99, 2),
    Expect("mobilenet_v1_0.25_96_gray", True, 0.5, 8),
]


def _lower(name: str) -> tuple[LoweredModel, bytes, Payload]:
    lm = lowered_zoo(name)
    assert lm.report.cpu_ops == [] and len(lm.report.partitions) == 1, str(lm.report)
    payload = delegate_payloads(lm.pte)[0]
    return lm, payload, decode(payload)


def _lsb(p: Payload) -> float:
    op = next(o for o in p.ops if o.output == p.outputs[0])
    assert op.opcode == Opcode.DEQUANTIZE and op.inputs[0] is not None
    return p.tensors[op.inputs[0]].scale


@pytest.mark.parametrize("exp", MODELS, ids=[m.name for m in MODELS])
def test_reference_matches_pytorch_quantized(exp: Expect) -> None:
    z = ZOO[exp.name]
    lm, payload, p = _lower(exp.name)
    assert lm.quantized_program is not None
    golden_model = lm.quantized_program.module()
    lsb = _lsb(p)
    inputs = z.test_inputs(4)

    # layer by layer, fed the golden's inputs in place
    checked = check_in_place(golden_model, payload, inputs[0][0])
    assert checked >= len([o for o in p.ops if o.opcode != Opcode.DEQUANTIZE]) // 2

    # free running, whole model
    within = within_f32 = total = 0
    worst_lsb = 0.0
    for (xb,) in inputs:
        with torch.no_grad():
            want_f32 = golden_model(xb).numpy()
        want = run_exact(golden_model, [xb])[0]
        got_f = run_delegate(payload, [xb.numpy()])[0]
        assert got_f.shape == want.shape and got_f.dtype == np.float32
        diff = lsb_distance(got_f, want, lsb)
        within += int((diff <= 1).sum())
        within_f32 += int((lsb_distance(got_f, want_f32, lsb) <= 1).sum())
        total += diff.size
        worst_lsb = max(worst_lsb, float(diff.max()))
        if exp.classifier:
            # the same top-1 up to the per-element tolerance: with every output within t LSB,
            # the winners can differ only where the golden's top two are within 2t LSB
            tie = 2 * (exp.max_lsb or 1) + 1e-3
            top = int(got_f.argmax())
            for w in (want, want_f32):
                assert w.flat[top] >= w.max() - tie * lsb, (exp.name, top, got_f, w)
    share = within / total
    print(f"\n{exp.name}: {checked} ops within 1 LSB in place; free running {100 * share:.2f}% "
          f"of outputs within 1 LSB of the exact program (worst {worst_lsb:.0f} LSB), "
          f"{100 * within_f32 / total:.2f}% of torch's float32 evaluation")
    assert share >= exp.min_within_1lsb
    if exp.max_lsb is not None:
        assert worst_lsb <= exp.max_lsb
