"""Whole models of the kinds that split before format 2.1, trained on real data (digits): an
MTCNN-style PReLU CNN (P-, R- and O-Net), an LR-ASPP segmentation head (bilinear upsampling,
add, mul) and a transposed-conv decoder (``tests/models_prelu_seg_decoder.py``).

Each must lower for the ESP32-S3 into ONE partition with nothing on the CPU, and on the 360
held-out digits:

- **in place, layer by layer** (first test images): the payload runs op by op; each op's int8
  output is within 1 LSB of the convert_pt2e model's value of that tensor, and is then
  overwritten with it, so every op (PRELU, UPSAMPLE_BILINEAR, TRANSPOSE_CONV2D included) is
  judged on the golden's inputs;
- **free running**: at least 99% of the output elements within 1 LSB of the convert_pt2e
  model (torch's float32 evaluation of the quantized program), the figures printed; the
  classifiers' top-1 agrees on every image whose golden top-1 leads by more than 2 LSB;
- **host == reference**: the .pte run by ExecuTorch with the host C engine (``host.run``)
  gives exactly the bytes the Python reference computes.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pytest
import torch

import executorch_espnn as ee
from devkit.lowering_helpers import check_in_place
from executorch_espnn import host
from executorch_espnn.lowering import LoweredModel
from executorch_espnn.payload import Opcode
from executorch_espnn.pte import read_program
from executorch_espnn.reference import run_delegate
from tests.models_prelu_seg_decoder import Trained, train

pytestmark = pytest.mark.slow


@dataclass(frozen=True)
class Arch:
    name: str
    opcode: Opcode  # the format 2.1 op the architecture needs
    classifier: bool


ARCHS = [
    Arch("pnet", Opcode.PRELU, True),
    Arch("rnet", Opcode.PRELU, True),
    Arch("onet", Opcode.PRELU, True),
    Arch("lraspp", Opcode.UPSAMPLE_BILINEAR, False),
    Arch("unet", Opcode.TRANSPOSE_CONV2D, False),
]


@pytest.fixture(scope="module", autouse=True)
def _one_thread() -> Iterator[None]:
    old = torch.get_num_threads()
    torch.set_num_threads(1)  # the same float sums on every run: the same weights, the same numbers
    yield
    torch.set_num_threads(old)


@functools.cache
def _trained(name: str) -> Trained:
    return train(name)


@functools.cache
def _lowered(name: str) -> LoweredModel:
    tr = _trained(name)
    x = tr.inputs(tr.data.x_train[:64], 0)
    return ee.lower(tr.model, (x[:1],), calibration=[(x[i:i + 1],) for i in range(64)], target="esp32s3")


def _test_inputs(tr: Trained) -> list[torch.Tensor]:
    x = tr.inputs(tr.data.x_test, 0)
    return [x[i:i + 1] for i in range(x.shape[0])]


@pytest.mark.parametrize("arch", ARCHS, ids=[a.name for a in ARCHS])
def test_one_partition_nothing_on_the_cpu(arch: Arch) -> None:
    lm = _lowered(arch.name)
    r = lm.report
    assert r.cpu_ops == [] and len(r.partitions) == 1, str(r)
    assert arch.opcode.name in r.partitions[0].ops
    # the report's per-layer fast-path table names the op ESP-NN has no kernel for
    rows = [f for f in r.fast_path if r.partitions[0].ops[f.op] == arch.opcode.name]
    assert rows and all(not f.fast and f.why.startswith("engine C kernel") for f in rows), str(r)
    print(f"\n{arch.name}: {len(r.delegated_ops)} operators delegated, {len(r.cpu_ops)} on the CPU, "
          f"{len(r.partitions)} partition; {r.planned_bytes} bytes of ExecuTorch planned memory")


@pytest.mark.parametrize("arch", ARCHS, ids=[a.name for a in ARCHS])
def test_every_op_within_1_lsb_in_place(arch: Arch) -> None:
    lm = _lowered(arch.name)
    (payload,) = read_program(lm.pte).payloads
    assert lm.quantized_program is not None
    for x in _test_inputs(_trained(arch.name))[:3]:
        check_in_place(lm.quantized_program.module(), payload, x, what=arch.name)


@pytest.mark.parametrize("arch", ARCHS, ids=[a.name for a in ARCHS])
def test_free_running_agrees_with_pytorch_and_host_equals_reference(arch: Arch) -> None:
    lm = _lowered(arch.name)
    assert lm.quantized_program is not None
    golden = lm.quantized_program.module()
    (payload,) = read_program(lm.pte).payloads
    scales = [o.scale for o in lm.outputs]
    within = total = worst = 0
    agree = decided = 0
    inputs = _test_inputs(_trained(arch.name))
    for k, x in enumerate(inputs):
        got = run_delegate(payload, [x.numpy()])
        if k % 4 == 0:  # a quarter of the images through ExecuTorch and the C engine
            on_host = host.run(lm.pte, [x])
            for h, g in zip(on_host, got, strict=True):
                assert h.dtype == g.dtype and np.array_equal(h, g), f"{arch.name} image {k}: host != reference"
        with torch.no_grad():
            want = golden(x)
        wants = [w.numpy() for w in (want if isinstance(want, tuple | list) else [want])]
        for g, w, s in zip(got, wants, scales, strict=True):
            d = np.abs(np.round(g.astype(np.float64) / s) - np.round(w.astype(np.float64) / s))
            within += int((d <= 1).sum())
            total += d.size
            worst = max(worst, int(d.max()))
        if arch.classifier:  # the softmax head is the last output
            w, g, s = wants[-1].reshape(-1), got[-1].reshape(-1), scales[-1]
            top2 = np.sort(w)[-2:]
            if top2[1] - top2[0] > 2 * s + 1e-6:
                decided += 1
                agree += int(np.argmax(g) == np.argmax(w))
    share = within / total
    extra = f"; top-1 agrees on {agree} of {decided} decided images (of {len(inputs)})" if arch.classifier else ""
    print(f"\n{arch.name}: {100 * share:.3f}% of {total} output elements within 1 LSB of the convert_pt2e "
          f"model (worst {worst} LSB){extra}")
    assert share >= 0.99
    assert agree == decided
