"""Accuracy on the user's validation data (lower(..., validation=...), --validation): float vs
PT2E vs the delegate's exact int8 result per output, and the layer-wise error table.

The model is trained on scikit-learn's bundled digits (8x8 handwritten digits; real data, no
download).  Every figure of the report is checked against an independent computation here:
PyTorch runs the float nn.Module and the PT2E program, the delegate's int8 result comes from
the bit-exact reference executing the payload taken from the serialized .pte (not the edge
program the report ran), and SQNR, top-1 and the LSB histogram are recomputed with numpy.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from torch import nn

import executorch_espnn as ee
from executorch_espnn.errors import ValidationDataError
from executorch_espnn.layout import inverse
from executorch_espnn.modelfile import ValidationData, load_validation_npz
from executorch_espnn.payload import decode
from executorch_espnn.pte import read_program
from executorch_espnn.reference import Executor, run_delegate

N_VAL = 120


@dataclass
class Trained:
    model: nn.Sequential
    x_train: torch.Tensor  # (n, 1, 1, 8, 8): one sample per entry, like the example input
    x_val: torch.Tensor
    y_val: np.ndarray


@pytest.fixture(scope="module")
def threads() -> Iterator[None]:
    old = torch.get_num_threads()
    torch.set_num_threads(1)  # the same float sums on every run
    yield
    torch.set_num_threads(old)


@pytest.fixture(scope="module")
def trained(threads: None) -> Trained:
    from sklearn.datasets import load_digits

    d = load_digits()
    x = torch.tensor(d.data, dtype=torch.float32).reshape(-1, 1, 8, 8)
    y = torch.tensor(d.target)
    order = torch.from_numpy(np.random.default_rng(0).permutation(len(x)))
    train, val = order[:1400], order[1400:1400 + N_VAL]
    torch.manual_seed(0)
    # conv -> batch norm with no activation between: the quantizer folds the batch norm into the
    # convolution, so the layer's float value is the batch norm's output, not the conv's
    m = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.Flatten(),
                      nn.Linear(512, 32), nn.ReLU(), nn.Linear(32, 10))
    opt = torch.optim.Adam(m.parameters(), lr=0.01)
    g = torch.Generator().manual_seed(0)
    for _ in range(200):
        b = torch.randint(0, len(train), (64,), generator=g)
        loss = nn.functional.cross_entropy(m(x[train][b]), y[train][b])
        opt.zero_grad()
        loss.backward()
        opt.step()
    m.eval()
    return Trained(m, x[train].unsqueeze(1), x[val].unsqueeze(1), d.target[val.numpy()])


def _sqnr(ref: np.ndarray, test: np.ndarray) -> float:
    ref, test = ref.astype(np.float64), test.astype(np.float64)
    noise = np.sum((ref - test) ** 2)
    return math.inf if noise == 0 else float(10 * np.log10(np.sum(ref**2) / noise))


def _db(v: Any) -> float:
    return math.inf if v == "inf" else float(v)


def _delegate_outputs(pte: bytes, xs: torch.Tensor) -> np.ndarray:
    """The chip's result: the .pte's (single) payload run by the bit-exact reference."""
    info = read_program(pte)
    assert len(info.payloads) == 1 and not info.kernel_calls, "fully delegated"
    return np.stack([run_delegate(info.payloads[0], [x.numpy()])[0] for x in xs])


@pytest.fixture(scope="module")
def lowered(trained: Trained) -> ee.LoweredModel:
    calib = [(trained.x_train[i],) for i in range(64)]
    val = ValidationData([(x,) for x in trained.x_val], trained.y_val, "digits test split")
    return ee.lower(trained.model, (trained.x_train[0],), calib, validation=val)


def test_output_figures_match_pytorch_and_the_reference(trained: Trained, lowered: ee.LoweredModel) -> None:
    acc = lowered.report.to_dict()["accuracy"]  # what report.json holds
    assert acc["n_samples"] == N_VAL and acc["labelled"] and acc["has_float"]
    (out,) = acc["outputs"]
    with torch.no_grad():
        f = trained.model(trained.x_val.squeeze(1)).numpy()  # float, the nn.Module itself
        assert lowered.quantized_program is not None
        pt2e = lowered.quantized_program.module()
        q = np.stack([pt2e(x).numpy() for x in trained.x_val]).reshape(N_VAL, -1)
    d = _delegate_outputs(lowered.pte, trained.x_val).reshape(N_VAL, -1)
    f = f.reshape(N_VAL, -1)

    y = trained.y_val
    assert out["top1_accuracy"] == pytest.approx(
        {"float": np.mean(f.argmax(1) == y), "pt2e": np.mean(q.argmax(1) == y), "delegate": np.mean(d.argmax(1) == y)})
    assert out["top1_accuracy"]["delegate"] > 0.85  # a trained model: the figure means something
    comps = {(c["test"], c["reference"]): c for c in out["comparisons"]}
    for (t, r), (tv, rv) in {("pt2e", "float"): (q, f), ("delegate", "float"): (d, f),
                             ("delegate", "pt2e"): (d, q)}.items():
        assert comps[t, r]["top1_agreement"] == pytest.approx(np.mean(tv.argmax(1) == rv.argmax(1)))
        assert _db(comps[t, r]["sqnr_db"]) == pytest.approx(_sqnr(rv, tv), abs=1e-3)
    assert 20 < _db(comps["delegate", "float"]["sqnr_db"]) < 80

    # LSB histogram: ESP-NN - PT2E on the output's int8 grid
    scale, zp = out["scale"], out["zero_point"]
    (spec,) = lowered.report.outputs
    assert scale == pytest.approx(spec.scale) and zp == spec.zero_point
    grid_d = np.rint(d.astype(np.float64) / np.float32(scale)) + zp
    grid_q = np.rint(q.astype(np.float64) / np.float32(scale)) + zp
    diffs, counts = np.unique((grid_d - grid_q).astype(int), return_counts=True)
    assert out["lsb_histogram"] == {str(k): int(n) for k, n in zip(diffs, counts, strict=True)}
    assert sum(out["lsb_histogram"].values()) == d.size


def test_layer_table_against_pytorch_and_the_payload_run_op_by_op(trained: Trained,
                                                                  lowered: ee.LoweredModel) -> None:
    acc = lowered.report.to_dict()["accuracy"]
    layers = acc["layers"]
    dbs = [_db(la["sqnr_db"]) for la in layers]
    assert dbs == sorted(dbs), "worst first"
    by_op = {la["opcode"]: la for la in layers}
    assert {"CONV2D", "FULLY_CONNECTED"} <= set(by_op)

    # the float values of each layer, from PyTorch hooks on the nn.Module
    seen: dict[int, list[np.ndarray]] = {1: [], 4: [], 5: []}  # batch norm, relu, last linear
    hooks = [trained.model[i].register_forward_hook(
        lambda _m, _i, o, i=i: seen[i].append(o.detach().numpy().copy())) for i in seen]
    with torch.no_grad():
        for x in trained.x_val:
            trained.model(x)
    for h in hooks:
        h.remove()

    # the chip's layer outputs: the .pte's payload stepped op by op by the reference
    (payload,) = read_program(lowered.pte).payloads
    p = decode(payload)
    conv = by_op["CONV2D"]
    assert conv["node"] == "batch_norm", "the folded batch norm's output is the conv layer's value"
    fcs = sorted((la for la in layers if la["opcode"] == "FULLY_CONNECTED"), key=lambda la: la["op"])
    assert [la["node"] for la in fcs] == ["relu", "linear_1"]
    for layer, float_vals, perm in ((conv, seen[1], (0, 2, 3, 1)), (fcs[0], seen[4], (0, 1)),
                                    (fcs[1], seen[5], (0, 1))):
        op = p.ops[layer["op"]]
        t = p.tensors[op.output]
        got = []
        for x in trained.x_val:
            ex = Executor(payload, [x.numpy()])
            for i in range(layer["op"] + 1):
                ex.run_op(i)
            q = np.transpose(np.asarray(ex.tensor(op.output)), inverse(perm)).astype(np.float64)
            got.append((q - t.zero_point) * np.float32(t.scale))
        want = _sqnr(np.stack(float_vals), np.stack(got))
        assert _db(layer["sqnr_db"]) == pytest.approx(want, abs=1e-3), layer
        assert layer["location"] and "forward" in layer["location"]
    # the last layer's output is the program's output: the same SQNR as the output's
    out_db = next(c["sqnr_db"] for c in acc["outputs"][0]["comparisons"]
                  if (c["test"], c["reference"]) == ("delegate", "float"))
    assert _db(fcs[1]["sqnr_db"]) == pytest.approx(_db(out_db), abs=1e-3)


def test_report_text_has_the_accuracy_section(lowered: ee.LoweredModel) -> None:
    text = str(lowered.report)
    acc = lowered.report.to_dict()["accuracy"]
    assert f"Accuracy on the digits test split ({N_VAL} samples, with labels)" in text
    top = acc["outputs"][0]["top1_accuracy"]
    assert f"top-1 accuracy: float {100 * top['float']:.2f}%, PT2E {100 * top['pt2e']:.2f}%, " \
           f"ESP-NN {100 * top['delegate']:.2f}%" in text
    assert "ESP-NN - PT2E in LSB: 0: " in text
    assert "Layer-wise error (each delegated layer's int8 output against the float model, worst first)" in text
    worst = acc["layers"][0]
    assert f"{worst['opcode'].lower()}" in text.split("Layer-wise error")[1].splitlines()[3]


def test_the_build_summary_prints_the_accuracy(lowered: ee.LoweredModel) -> None:
    """The PlatformIO build's summary (executorch_espnn/firmware/summary.py) shows the accuracy line the
    model step's child read from report.json."""
    from devkit.model_files import model_info_from
    from executorch_espnn.firmware import artifact as lower_driver
    from executorch_espnn.firmware import summary as report

    r = lowered.report.to_dict()
    (line,) = lower_driver.accuracy_lines(r)
    top = r["accuracy"]["outputs"][0]["top1_accuracy"]
    assert line.startswith(f"accuracy of output0 on {N_VAL} validation samples: top-1 float "
                           f"{100 * top['float']:.2f}%, PT2E {100 * top['pt2e']:.2f}%, ESP-NN {100 * top['delegate']:.2f}%")
    assert lower_driver.accuracy_lines({"accuracy": None}) == []
    sizes = {"arena_bytes": 1, "state_bytes": 1, "planned_bytes": 1, "weights_bytes": 0,
             "method_allocator_bytes": 1, "temp_allocator_bytes": 0, "pointer_bytes": 4}
    info = model_info_from({"pte": {"size": 2048, "sha256": "0" * 64, "delegates": []}, "sizes": sizes,
                            "ops": {"delegated": 3, "cpu": 0, "cpu_list": []}, "warnings": [],
                            "accuracy": [line]})
    assert f"  {line}" in report.summary_lines(info, None)


@pytest.mark.slow  # a second whole lowering, through the CLI
def test_cli_without_labels_writes_the_accuracy_to_both_reports(trained: Trained, tmp_path: Path) -> None:
    from executorch_espnn import cli

    ep = torch.export.export(trained.model, (trained.x_train[0],))
    torch.export.save(ep, tmp_path / "digits.pt2")
    np.savez(tmp_path / "cal.npz", input0=trained.x_train[:32].numpy())
    np.savez(tmp_path / "val.npz", input0=trained.x_val[:40].numpy())
    out = tmp_path / "out"
    assert cli.main(["build", str(tmp_path / "digits.pt2"), "--out", str(out), "--calibration",
                     str(tmp_path / "cal.npz"), "--validation", str(tmp_path / "val.npz"), "--quiet"]) == 0
    acc = json.loads((out / "report.json").read_text())["accuracy"]
    assert acc["n_samples"] == 40 and not acc["labelled"] and acc["outputs"][0]["top1_accuracy"] == {}
    d = _delegate_outputs((out / "model.pte").read_bytes(), trained.x_val[:40]).reshape(40, -1)
    with torch.no_grad():
        f = trained.model(trained.x_val[:40].squeeze(1)).numpy()
    c = next(c for c in acc["outputs"][0]["comparisons"] if (c["test"], c["reference"]) == ("delegate", "float"))
    assert c["top1_agreement"] == pytest.approx(np.mean(d.argmax(1) == f.argmax(1)))
    assert _db(c["sqnr_db"]) == pytest.approx(_sqnr(f, d), abs=1e-3)
    text = (out / "report.txt").read_text()
    assert f"Accuracy on the validation file {tmp_path / 'val.npz'} (40 samples, no labels)" in text
    assert "top-1 accuracy" not in text


def test_an_already_quantized_model_is_compared_with_its_own_pt2e_program(trained: Trained) -> None:
    """A model quantized by the user (or QAT's convert_qat) has no float model: the report
    compares the chip's bits with the PT2E program only, per output and per layer."""
    from devkit.lowering_helpers import quantize_module

    ex = (trained.x_train[0],)
    converted = quantize_module(trained.model, ex, calib=[(trained.x_train[i],) for i in range(32)])
    val = ValidationData([(x,) for x in trained.x_val[:24]], trained.y_val[:24])
    low = ee.lower(torch.export.export(converted, ex), ex, validation=val)
    assert low.accuracy is not None
    acc = low.accuracy.to_dict()
    assert not acc["has_float"] and acc["labelled"]
    (out,) = acc["outputs"]
    assert set(out["top1_accuracy"]) == {"pt2e", "delegate"}
    assert [(c["test"], c["reference"]) for c in out["comparisons"]] == [("delegate", "pt2e")]
    d = _delegate_outputs(low.pte, trained.x_val[:24]).reshape(24, -1)
    with torch.no_grad():
        q = np.stack([converted(x).numpy() for x in trained.x_val[:24]]).reshape(24, -1)
    assert _db(out["comparisons"][0]["sqnr_db"]) == pytest.approx(_sqnr(q, d), abs=1e-3)
    assert out["top1_accuracy"]["delegate"] == pytest.approx(np.mean(d.argmax(1) == trained.y_val[:24]))
    assert acc["layers"] and all(la["sqnr_db"] is None and la["max_lsb"] <= 1 for la in acc["layers"])
    assert "the model came quantized: no float model" in str(low.report)


# --- bad validation data: the message names the problem and the fix ------------------------

EX = (torch.zeros(1, 1, 8, 8),)


@pytest.mark.parametrize(("arrays", "message"), [
    ({"x": np.zeros((3, 1, 1, 8, 8), np.float32)},
     r"must hold exactly input0 \(and optionally labels\) \(missing: \['input0'\], unexpected: \['x'\]\)"),
    ({"input0": np.zeros((3, 8, 8), np.float32)},
     r"input0 has shape \(3, 8, 8\), expected \(n_samples, 1, 1, 8, 8\): a leading sample axis"),
    ({"input0": np.zeros((3, 1, 1, 8, 8), np.int64)},
     r"input0 has dtype int64, the model input is torch.float32"),
    ({"input0": np.zeros((3, 1, 1, 8, 8), np.float32), "labels": np.zeros(3, np.float32)},
     r"labels has dtype float32; give one integer class index per sample"),
    ({"input0": np.zeros((3, 1, 1, 8, 8), np.float32), "labels": np.zeros((3, 10), np.int64)},
     r"labels has shape \(3, 10\), expected one label per sample \(3,\)"),
])
def test_bad_validation_npz_names_the_problem_and_the_fix(tmp_path: Path, arrays: dict[str, np.ndarray],
                                                          message: str) -> None:
    np.savez(tmp_path / "val.npz", **arrays)  # type: ignore[arg-type]
    with pytest.raises(ValidationDataError, match=message) as info:
        load_validation_npz(tmp_path / "val.npz", EX)
    assert "val.npz" in str(info.value)


def test_a_label_the_output_cannot_select_is_refused(trained: Trained) -> None:
    from executorch_espnn.accuracy.evaluate import check_labels

    with pytest.raises(ValidationDataError, match=r"label 10 of sample 1 is not a class index of the "
                                                  r"model's output \(0 to 9\); give labels as the index"):
        check_labels(np.array([3, 10, 2]), 3, [10], "val.npz")
    got = check_labels(np.array([3, 9], np.int32), 2, [10], "val.npz")
    assert got is not None and list(got) == [3, 9]
    with pytest.raises(ValidationDataError, match=r"val.npz: 2 labels for 3 samples; give one label per sample"):
        check_labels(np.array([3, 9]), 3, [10], "val.npz")
