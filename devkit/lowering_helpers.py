"""Helpers for the lowering tests and benchmarks: quantize with EspNNQuantizer, lower with EspNNPartitioner,
pull the payloads out of the .pte and run them through the reference executor."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import executorch.kernels.quantized  # noqa: F401 - CPU quantize/dequantize out-variants for to_executorch
import numpy as np
import torch
from executorch.exir import to_edge_transform_and_lower
from torch import nn
from torch.fx import GraphModule
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

from executorch_espnn import pte
from executorch_espnn.cia_ops_cache import cached_cia_ops
from executorch_espnn.decisions import OpDecision
from executorch_espnn.graph.names import DEQUANTIZE, QUANTIZE, node_op
from executorch_espnn.partitioner import EspNNPartitioner
from executorch_espnn.payload import Opcode, Payload, decode
from executorch_espnn.quantizer import EspNNQuantizer
from executorch_espnn.reference import run_delegate


@cached_cia_ops()  # as executorch_espnn.lower() does: one CIA-op walk, not one per decomposition
def quantize_module(
    m: nn.Module,
    ex: tuple[Any, ...],
    quantizer: EspNNQuantizer | None = None,
    calib: Iterable[tuple[Any, ...]] | None = None,
    seed: int = 0,
) -> GraphModule:
    """export → prepare_pt2e → calibrate (the example + 4 random batches) → convert_pt2e."""
    m = m.eval()
    prepared = prepare_pt2e(torch.export.export(m, ex).module(), quantizer or EspNNQuantizer())
    if calib is None:
        g = torch.Generator().manual_seed(seed)
        calib = [ex] + [tuple(torch.randn(x.shape, generator=g) * 2 for x in ex) for _ in range(4)]
    with torch.no_grad():
        for batch in calib:
            prepared(*batch)
    return convert_pt2e(prepared)  # type: ignore[no-any-return]


@dataclass
class Lowered:
    converted: GraphModule
    example: tuple[Any, ...]
    partitioner: EspNNPartitioner
    pte: bytes
    payloads: list[bytes]
    edge: Any = None  # the EdgeProgramManager, with the lowered modules

    @property
    def decisions(self) -> list[OpDecision]:
        return self.partitioner.decisions

    def cpu(self) -> list[OpDecision]:
        return [d for d in self.decisions if not d.delegated]

    def delegated(self) -> list[OpDecision]:
        return [d for d in self.decisions if d.delegated]

    def decoded(self, i: int = 0) -> Payload:
        return decode(self.payloads[i])

    def opcodes(self, i: int = 0) -> list[str]:
        return [op.opcode.name for op in self.decoded(i).ops]

    def input_qparams(self) -> list[tuple[float, int]]:
        """(scale, zero point) of each model input's quantize node."""
        out = []
        for n in self.converted.graph.nodes:
            if n.op == "placeholder":
                q = [u for u in n.users if u.op == "call_function" and node_op(u) == QUANTIZE]
                out.append((float(q[0].args[1]), int(q[0].args[2])))
        return out

    def output_qparams(self) -> list[tuple[float, int]]:
        """(scale, zero point) of the dequantize feeding each model output."""
        out_node = next(n for n in self.converted.graph.nodes if n.op == "output")
        res = []
        for o in out_node.args[0]:
            assert node_op(o) == DEQUANTIZE, f"output {o} is not a dequantize"
            res.append((float(o.args[1]), int(o.args[2])))
        return res

    def delegate_output_order(self) -> list[int]:
        """For each program output, the index of the (single) delegate's output that is it.
        The delegate returns its outputs in the partition's order, which need not be the
        program's: an LSTM cell computes ``c`` before ``h`` and returns ``(h, c)``."""
        graph = self.edge.exported_program().graph
        (call,) = [n for n in graph.nodes if n.op == "call_function"
                   and getattr(n.target, "__name__", "") == "executorch_call_delegate"]
        out_node = next(n for n in graph.nodes if n.op == "output")
        order = []
        for o in out_node.args[0]:
            assert o.op == "call_function" and o.args[0] is call, f"program output {o} is not the delegate's"
            order.append(int(o.args[1]))
        return order

    def grid_inputs(self, seed: int = 0) -> tuple[torch.Tensor, ...]:
        """Float inputs that lie exactly on each input's quantization grid, so the delegate's
        QUANTIZE and PyTorch's quantize agree without rounding ties."""
        g = torch.Generator().manual_seed(seed)
        xs = []
        for x, (s, z) in zip(self.example, self.input_qparams(), strict=True):
            q = torch.randint(-128, 128, tuple(x.shape), generator=g, dtype=torch.int32)
            xs.append(((q - z).to(torch.float32) * s).to(torch.float32))
        return tuple(xs)


@cached_cia_ops()
def lower(
    m: nn.Module,
    ex: tuple[Any, ...],
    *,
    quantizer: EspNNQuantizer | None = None,
    converted: GraphModule | None = None,
    target: str = "generic",
    calib: Iterable[tuple[Any, ...]] | None = None,
    **options: Any,
) -> Lowered:
    q = converted if converted is not None else quantize_module(m, ex, quantizer, calib)
    part = EspNNPartitioner(target=target, **options)
    edge = to_edge_transform_and_lower(torch.export.export(q, ex), partitioner=[part])
    data = edge.to_executorch().buffer
    try:
        payloads = pte.delegate_payloads(data)
    except Exception:
        payloads = []
    return Lowered(q, ex, part, data, payloads, edge)


def lsb_errors(
    got: Sequence[np.ndarray], want: Sequence[torch.Tensor], qparams: Sequence[tuple[float, int]]
) -> list[int]:
    """Largest difference, in output LSBs, between delegate and PyTorch outputs."""
    errs = []
    for g, w, (s, z) in zip(got, want, qparams, strict=True):
        gq = np.round(np.asarray(g, dtype=np.float64) / s) + z
        wq = np.round(w.detach().numpy().astype(np.float64) / s) + z
        assert gq.shape == wq.shape, (gq.shape, wq.shape)
        errs.append(int(np.abs(gq - wq).max()) if gq.size else 0)
    return errs


def check_numerics(low: Lowered, seeds: Iterable[int] = (0, 1, 2), max_lsb: int = 1) -> list[int]:
    """Run the (single, fully delegated) payload on grid inputs and compare with the
    convert_pt2e module: at most ``max_lsb`` on every element.  Returns the errors seen."""
    assert len(low.payloads) == 1, f"expected one delegate, got {len(low.payloads)}"
    assert not low.cpu(), [d for d in low.cpu()]
    seen = []
    for seed in seeds:
        xs = low.grid_inputs(seed)
        out = run_delegate(low.payloads[0], [x.numpy() for x in xs])
        got = [out[i] for i in low.delegate_output_order()]
        want = low.converted(*xs)
        want_t = list(want) if isinstance(want, (tuple, list)) else [want]
        errs = lsb_errors(got, want_t, low.output_qparams())
        assert max(errs) <= max_lsb, f"seed {seed}: {errs} LSB"
        seen.extend(errs)
    return seen


def opcode_set(low: Lowered, i: int = 0) -> set[Opcode]:
    return {op.opcode for op in low.decoded(i).ops}


def _from_names(node: Any) -> list[str]:
    """Names of the nodes ``node`` was derived from (edge → ATen → the converted module)."""
    out: list[str] = []
    stack = list(node.meta.get("from_node") or [])
    while stack:
        src = stack.pop(0)
        out.append(src.name)
        stack.extend(getattr(src, "from_node", None) or [])
    return out


def op_by_op(low: Lowered, xs: Sequence[torch.Tensor]) -> list[tuple[str, int, int, int]]:
    """Run the (single) payload op by op and compare every int8 tensor that holds a value of
    the graph with the convert_pt2e module's quantize output for that value.

    Returns (value, op index, elements off, max difference) in execution order."""
    from torch.fx import Interpreter

    from executorch_espnn.backend import partition_io
    from executorch_espnn.graph.constants import GraphContext
    from executorch_espnn.layout import inverse
    from executorch_espnn.ops import build_registry
    from executorch_espnn.payload import DType
    from executorch_espnn.reference import Executor
    from executorch_espnn.units import build_payload

    captured: dict[str, torch.Tensor] = {}

    class Capture(Interpreter):  # type: ignore[misc]
        def run_node(self, n: Any) -> Any:
            r = super().run_node(n)
            if n.op == "call_function" and node_op(n) == QUANTIZE:
                captured[n.name] = r.clone()
            return r

    Capture(low.converted).run(*xs)
    gm = low.edge.exported_program().graph_module
    (lowered,) = [getattr(gm, n.target) for n in gm.graph.nodes if n.op == "get_attr" and "lowered" in n.target]
    sub = lowered.original_module
    nodes, inputs, outputs = partition_io(sub)
    p = low.partitioner
    res = build_payload(nodes, inputs, outputs, GraphContext(sub, p._known), build_registry(), p.target,
                        p.options.limits)
    assert res.data == low.payloads[0], "preprocess is deterministic"
    by_name = {n.name: n for n in sub.graph.nodes}
    writer = {op.output: i for i, op in enumerate(res.payload.ops)}
    ex = Executor(res.data, [x.numpy() for x in xs])
    out: list[tuple[str, int, int, int]] = []
    for i in range(len(res.payload.ops)):
        ex.run_op(i)
        for tid, (name, perm, _shape) in res.tensor_values.items():
            if writer.get(tid) != i or res.payload.tensors[tid].dtype != DType.INT8:
                continue
            ref_name = next((f for f in [name, *_from_names(by_name[name])] if f in captured), None)
            if ref_name is None:
                continue
            got = np.transpose(np.asarray(ex.tensor(tid)), inverse(perm))
            ref = captured[ref_name].numpy()
            d = np.abs(got.astype(np.int32) - ref.reshape(got.shape).astype(np.int32))
            out.append((ref_name, i, int((d > 0).sum()), int(d.max())))
    return out


def golden_q_values(quantized: torch.fx.GraphModule, x: torch.Tensor) -> list[tuple[float, int, np.ndarray]]:
    """(scale, zero point, int8 values) of every quantize node of PyTorch's quantized program
    (``LoweredModel.quantized_program.module()``) run on ``x``: the independent golden of a
    layer-by-layer check."""
    out: list[tuple[float, int, np.ndarray]] = []

    class Tap(torch.fx.Interpreter):
        def run_node(self, n: torch.fx.Node) -> object:
            r = super().run_node(n)
            if n.op == "call_function" and n.target == torch.ops.quantized_decomposed.quantize_per_tensor.default:
                out.append((float(n.args[1]), int(n.args[2]), r.numpy().copy()))  # type: ignore[arg-type, union-attr]
            return r

    with torch.no_grad():
        Tap(quantized).run(x)
    return out


def as_payload_layout(v: np.ndarray, dims: tuple[int, ...], nhwc: bool) -> np.ndarray | None:
    """A golden NCHW value in the payload tensor's layout, or None when the sizes differ."""
    if v.size != int(np.prod(dims)):
        return None
    if nhwc and v.ndim == 4:
        v = v.transpose(0, 2, 3, 1)
    return v.reshape(dims)


def check_in_place(quantized: torch.fx.GraphModule, payload: bytes, x: torch.Tensor, max_lsb: int = 1,
                   what: str = "") -> int:
    """Run ``payload`` op by op through the reference executor, fed PyTorch's own int8 values:
    after each op, its int8 output must be within ``max_lsb`` of the golden tensor with the same
    quantization and size (the closest one, since a value may be quantized more than once), and
    the golden replaces it before the next op so an error cannot carry into later layers.
    Returns how many ops were checked."""
    from executorch_espnn.payload import DType
    from executorch_espnn.payload.format import TENSOR_FLAG_NHWC
    from executorch_espnn.reference import Executor

    p = decode(payload)
    golden = golden_q_values(quantized, x)
    ex = Executor(payload, [x.numpy()])
    checked = 0
    for i, op in enumerate(p.ops):
        ex.run_op(i)
        t = p.tensors[op.output]
        if t.dtype != DType.INT8:
            continue
        got = np.asarray(ex.tensor(op.output)).reshape(t.dims)
        cands = [g for s, zp, v in golden
                 if np.isclose(s, t.scale, rtol=1e-6, atol=0) and zp == t.zero_point
                 and (g := as_payload_layout(v, t.dims, bool(t.flags & TENSOR_FLAG_NHWC))) is not None]
        assert cands, f"{what} op {i} {op.opcode.name}: no golden tensor with its quantization and size"
        best = min(cands, key=lambda g: int(np.abs(g.astype(np.int32) - got.astype(np.int32)).max()))
        worst = int(np.abs(best.astype(np.int32) - got.astype(np.int32)).max())
        assert worst <= max_lsb, f"{what} op {i} {op.opcode.name}: {worst} LSB from the golden"
        ex.tensor(op.output)[...] = best.reshape(np.asarray(ex.tensor(op.output)).shape)
        checked += 1
    return checked
