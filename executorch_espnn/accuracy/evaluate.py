"""Accuracy on the user's validation data: float vs PT2E vs the delegate's exact int8 result.

``evaluate`` runs every validation sample through

* the float program (``torch.export`` of the user's model, before quantization),
* the PT2E program (convert_pt2e's quantized model, exported: PyTorch's simulation of int8),
* the lowered edge program with each ESP-NN delegate run by the bit-exact Python reference
  (``reference.program.run_program``; the chip computes the same bits),

capturing, on the way, the value of every delegated layer in all three (see ``layers``).
It must run before ``to_executorch()``, which rewrites the edge program in place.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ..errors import ValidationDataError
from ..graph.names import is_dequantize
from . import metrics
from .layers import LayerPlan, plan_layers
from .records import MODELS, AccuracyReport, Comparison, LayerError, OutputAccuracy

if TYPE_CHECKING:
    from torch.export import ExportedProgram
    from torch.fx import GraphModule

    from ..modelfile import ValidationData
    from ..reference import Executor
    from ..reference.program import OpObserver

PAIRS = (("pt2e", "float"), ("delegate", "float"), ("delegate", "pt2e"))


def _run_capturing(gm: GraphModule, sample: Sequence[Any], names: set[str]) -> tuple[list[Any], dict[str, Any]]:
    """The outputs of ``gm`` on ``sample`` and the values of the nodes named in ``names``."""
    import torch
    from torch.utils._pytree import tree_leaves

    captured: dict[str, Any] = {}

    class _Capture(torch.fx.Interpreter):
        def run_node(self, n: Any) -> Any:
            r = super().run_node(n)
            if n.name in names and isinstance(r, torch.Tensor):
                captured[n.name] = r.detach().numpy().copy()
            return r

    with torch.no_grad():
        result = _Capture(gm).run(*sample)
    return [y.detach().numpy().copy() for y in tree_leaves(result)], captured


def output_grids(quantized: ExportedProgram) -> list[tuple[float, int] | None]:
    """(scale, zero point) of the dequantize giving each program output, None for an output
    with no int8 side."""
    out_node = next(n for n in quantized.graph.nodes if n.op == "output")
    outs = out_node.args[0]
    return [(float(o.args[1]), int(o.args[2])) if is_dequantize(o) else None
            for o in (outs if isinstance(outs, (list, tuple)) else [outs])]


def check_labels(labels: Any, n_samples: int, n_classes: Sequence[int], source: str) -> npt.NDArray[np.int64] | None:
    """The labels as int64 class indices, or ValidationDataError naming the problem and fix."""
    if labels is None:
        return None
    from ..modelfile import check_label_dtype

    a = np.asarray(labels)
    check_label_dtype(a, source)
    if a.ndim != 1 or len(a) != n_samples:
        raise ValidationDataError(
            f"{source}: {a.size if a.ndim == 1 else tuple(a.shape)} labels for {n_samples} samples; "
            "give one label per sample, a 1-D array of class indices"
        )
    a = a.astype(np.int64)
    classes = max(n_classes, default=0)
    bad = (a < 0) | (a >= classes)
    if bad.any():
        k = int(np.argmax(bad))
        raise ValidationDataError(
            f"{source}: label {int(a[k])} of sample {k} is not a class index of the model's output "
            f"(0 to {classes - 1}); give labels as the index the model's arg-max should select"
        )
    return a


def evaluate(
    float_program: ExportedProgram | None,
    quantized: ExportedProgram,
    edge_program: ExportedProgram,
    data: ValidationData,
    output_names: Sequence[str] | None = None,
) -> AccuracyReport:
    """The accuracy report of ``data`` (see the module docstring); ``float_program`` is None
    for a model that came already quantized (QAT): its comparisons are then left out."""
    from ..graph.source import source_location
    from ..reference.program import ProgramRunner

    t0 = time.perf_counter()
    pt2e_gm = quantized.module()
    float_gm = float_program.module() if float_program is not None else None
    plans, notes = plan_layers(edge_program, pt2e_gm, float_gm)
    run_program = ProgramRunner(edge_program)
    by_op: dict[tuple[bytes, int], list[int]] = {}
    for k, p in enumerate(plans):
        by_op.setdefault((p.payload, p.op), []).append(k)
    float_names = {p.float_node for p in plans if p.float_node is not None}
    pt2e_names = {p.quantize for p in plans}

    outs: dict[str, list[list[Any]]] = {m: [] for m in MODELS}
    layer_vals: dict[str, list[list[Any]]] = {m: [[] for _ in plans] for m in MODELS}
    for sample in data.samples:
        d_layers: list[Any] = [None] * len(plans)
        outs["delegate"].append(run_program(list(sample), _capture(plans, by_op, d_layers)))
        y, got = _run_capturing(pt2e_gm, sample, pt2e_names)
        outs["pt2e"].append(y)
        if float_gm is not None:
            y, fgot = _run_capturing(float_gm, sample, float_names)
            outs["float"].append(y)
        for k, p in enumerate(plans):
            layer_vals["delegate"][k].append(d_layers[k])
            layer_vals["pt2e"][k].append(got.get(p.quantize))
            if float_gm is not None and p.float_node is not None:
                layer_vals["float"][k].append(fgot.get(p.float_node))

    models = [m for m in MODELS if outs[m]]
    stacked = {m: [np.stack([case[j] for case in outs[m]]) for j in range(len(outs[m][0]))] for m in models}
    n_out = len(stacked["delegate"])
    labels = check_labels(data.labels, len(data.samples), [int(np.prod(y.shape[1:])) for y in stacked["delegate"]], data.source)
    grids = output_grids(quantized)
    outputs = []
    for j in range(n_out):
        ys = {m: stacked[m][j] for m in models}
        grid = grids[j] if j < len(grids) else None
        top = {m: metrics.top1(v) for m, v in ys.items()}
        acc = {m: metrics.share_equal(top[m], labels) for m in models} if labels is not None else {}
        comps = tuple(Comparison(t, r, metrics.share_equal(top[t], top[r]), metrics.sqnr_db(ys[r], ys[t]))
                      for t, r in PAIRS if t in ys and r in ys)
        hist = None
        if grid is not None:
            hist = metrics.lsb_histogram(metrics.on_grid(ys["delegate"], *grid), metrics.on_grid(ys["pt2e"], *grid))
        name = output_names[j] if output_names and j < len(output_names) else f"output{j}"
        outputs.append(OutputAccuracy(name, tuple(ys["delegate"].shape[1:]), grid[0] if grid else None,
                                      grid[1] if grid else None, acc, comps, hist))

    layers = [_layer_error(p, layer_vals, k, float_gm, source_location) for k, p in enumerate(plans)]
    layers.sort(key=lambda la: (la.sqnr_db is None, la.sqnr_db if la.sqnr_db is not None else 0.0,
                                -la.max_lsb, la.partition, la.op))
    return AccuracyReport(data.source, len(data.samples), labels is not None, float_gm is not None,
                          tuple(outputs), tuple(layers), tuple(notes), time.perf_counter() - t0)


def _capture(plans: Sequence[LayerPlan], by_op: dict[tuple[bytes, int], list[int]],
             store: list[Any]) -> OpObserver:
    """The reference's op observer that keeps each planned layer's int8 output (logical order)
    in ``store``, read right after the op: a later op may reuse its arena bytes."""
    from ..layout import inverse

    def after_op(payload: bytes, i: int, ex: Executor) -> None:
        for k in by_op.get((payload, i), ()):
            p = plans[k]
            store[k] = np.transpose(np.asarray(ex.tensor(p.tensor)), inverse(p.perm)).copy()

    return after_op


def _layer_error(p: LayerPlan, vals: dict[str, list[list[Any]]], k: int, float_gm: GraphModule | None,
                 where: Any) -> LayerError:
    d = np.stack(vals["delegate"][k]).astype(np.int32)
    q = np.stack([np.asarray(v).reshape(d.shape[1:]) for v in vals["pt2e"][k]]).astype(np.int32)
    deq_d = (d - p.zero_point).astype(np.float64) * np.float32(p.scale)
    deq_q = (q - p.zero_point).astype(np.float64) * np.float32(p.scale)
    sqnr = pt2e_sqnr = None
    location = None
    if float_gm is not None and p.float_node is not None and vals["float"][k]:
        f = np.stack([np.asarray(v, dtype=np.float64).reshape(d.shape[1:]) for v in vals["float"][k]])
        sqnr, pt2e_sqnr = metrics.sqnr_db(f, deq_d), metrics.sqnr_db(f, deq_q)
        node = next(n for n in float_gm.graph.nodes if n.name == p.float_node)
        location = where(node)
    diff = np.abs(d - q)
    return LayerError(p.partition, p.op, p.opcode, p.float_node or p.quantize, location, p.shape, sqnr,
                      pt2e_sqnr, int(diff.max()) if diff.size else 0,
                      float(np.mean(diff > 0)) if diff.size else 0.0)
