"""Helpers for the quantizer tests: run PT2E end to end and read the converted graph."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
from torch import nn
from torch.fx import GraphModule, Node
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

from executorch_espnn.quantizer import EspNNQuantizer

qd = torch.ops.quantized_decomposed
Q = qd.quantize_per_tensor.default
DQ = qd.dequantize_per_tensor.default
DQC = qd.dequantize_per_channel.default
QDQ = {Q, DQ, DQC, qd.quantize_per_channel.default}


def export_module(m: nn.Module, ex: tuple[Any, ...]) -> GraphModule:
    return torch.export.export(m.eval(), ex).module()  # type: ignore[return-value]


def prepared(m: nn.Module, ex: tuple[Any, ...], quantizer: EspNNQuantizer | None = None) -> GraphModule:
    return prepare_pt2e(export_module(m, ex), quantizer or EspNNQuantizer())  # type: ignore[no-any-return]


def run_pt2e(
    m: nn.Module,
    ex: tuple[Any, ...],
    quantizer: EspNNQuantizer | None = None,
    calib: Iterable[tuple[Any, ...]] | None = None,
    seed: int = 0,
) -> GraphModule:
    """export → prepare → calibrate (example + 3 random batches) → convert."""
    p = prepared(m, ex, quantizer)
    if calib is None:
        g = torch.Generator().manual_seed(seed)
        calib = [ex] + [tuple(torch.randn(x.shape, generator=g) for x in ex) for _ in range(3)]
    with torch.no_grad():
        for b in calib:
            p(*b)
    return convert_pt2e(p)  # type: ignore[no-any-return]


def ops(gm: GraphModule, target: Any) -> list[Node]:
    return [n for n in gm.graph.nodes if n.op == "call_function" and n.target == target]


def one(gm: GraphModule, target: Any) -> Node:
    found = ops(gm, target)
    assert len(found) == 1, f"expected exactly one {target}, found {len(found)}:\n{gm.graph}"
    return found[0]


def count(gm: GraphModule, target: Any) -> int:
    return len(ops(gm, target))


def const(gm: GraphModule, node: Any) -> torch.Tensor:
    assert isinstance(node, Node) and node.op == "get_attr", f"not a constant: {node}"
    t = gm
    for part in str(node.target).split("."):
        t = getattr(t, part)
    assert isinstance(t, torch.Tensor)
    return t


def qparams(node: Node) -> tuple[float, int]:
    """(scale, zero point) of a quantize/dequantize_per_tensor node."""
    assert node.target in (Q, DQ), node.format_node()
    return float(node.args[1]), int(node.args[2])  # type: ignore[arg-type]


def input_qparams(node: Node, index: int = 0) -> tuple[float, int]:
    """qparams of the dequantize feeding input ``index`` of ``node``."""
    src = node.args[index]
    assert isinstance(src, Node) and src.target == DQ, f"input {index} of {node} is {src}"
    return qparams(src)


def output_q(node: Node) -> Node:
    """The single quantize node consuming ``node``'s output."""
    users = [u for u in node.users if u.target == Q]
    assert len(users) == 1 and len(node.users) == 1, f"{node} users: {list(node.users)}"
    return users[0]


def output_qparams(node: Node) -> tuple[float, int]:
    return qparams(output_q(node))


def is_float_output(node: Node) -> bool:
    return not any(u.target in QDQ for u in node.users)


def weight_dq(gm: GraphModule, node: Node, index: int) -> tuple[torch.Tensor, torch.Tensor, Node]:
    """(int values, per-channel scales, dq node) of the constant feeding input ``index``."""
    dq = node.args[index]
    assert isinstance(dq, Node) and dq.target == DQC, f"input {index} of {node} is {dq}"
    return const(gm, dq.args[0]), const(gm, dq.args[1]), dq


def sqnr_db(ref: torch.Tensor, test: torch.Tensor) -> float:
    noise = (ref - test).pow(2).sum()
    return float(10 * torch.log10(ref.pow(2).sum() / noise.clamp_min(1e-30)))


def observer_of(gm: GraphModule, node: Node) -> Any:
    """The observer module a prepared graph calls on ``node`` (an observer call node)."""
    assert node.op == "call_module", node.format_node()
    return getattr(gm, str(node.target))


def observers_around(gm: GraphModule, target: Any) -> tuple[list[Any], Any]:
    """(observers of the tensor inputs, observer of the output) of the single ``target`` call
    in a prepared graph."""
    (node,) = [n for n in gm.graph.nodes if n.op == "call_function" and n.target == target]
    ins: list[Any] = []
    for a in node.args:
        for x in a if isinstance(a, (list, tuple)) else [a]:
            if isinstance(x, Node):
                ins.append(observer_of(gm, x))
    (out,) = node.users
    return ins, observer_of(gm, out)
