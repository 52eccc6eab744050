"""The bytes a program cannot do without, counted from the quantized program's constants.

Walks the quantized ``ExportedProgram`` (q/dq nodes around float operators, what the
partitioner receives) and counts, at the size an int8 runtime needs:

* int8 weights: every constant read by a ``dequantize_per_channel``/``dequantize_per_tensor``
  whose consumer is a convolution or linear layer: 1 byte per element;
* biases of those layers: int32, 4 bytes per element;
* requantization parameters: an int32 multiplier and an int32 shift per output channel of
  each such layer (8 bytes per channel; what ESP-NN's ``quant_data_t`` reads);
* any other constant at its own element size (a float positional embedding, a layer norm's
  affine parameters kept on the CPU, ...).

The float scales and int64 zero points of the weights' dequantize nodes are not counted: the
requantization parameters replace them.  Nothing here reads the ``.pte`` or our payload.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torch.export import ExportedProgram

_DEQUANT = ("dequantize_per_channel", "dequantize_per_tensor")
_LAYERS = ("conv", "linear", "addmm", "mm")


@dataclass(frozen=True)
class ConstantBytes:
    weights: int
    biases: int
    requant: int
    other: int
    layers: int  # conv/linear layers found

    @property
    def total(self) -> int:
        return self.weights + self.biases + self.requant + self.other


def _name(target: Any) -> str:
    return str(getattr(target, "__name__", target))


def _constants(ep: ExportedProgram) -> dict[str, Any]:
    """Placeholder name -> tensor for parameters, buffers and lifted constants."""
    sig = ep.graph_signature
    out: dict[str, Any] = {}
    for name, target in {**sig.inputs_to_parameters, **sig.inputs_to_buffers}.items():
        out[name] = ep.state_dict[target]
    for name, target in sig.inputs_to_lifted_tensor_constants.items():
        out[name] = ep.constants[target]
    return out


def _source(node: Any, nodes: dict[str, Any]) -> tuple[str | None, Any]:
    """The constant placeholder behind a layer argument (through its dequantize), and the
    dequantize node (None when the argument is the constant itself)."""
    if node is None or not hasattr(node, "op"):
        return None, None
    if node.op == "placeholder":
        return (node.name if node.name in nodes else None), None
    if node.op == "call_function" and _name(node.target).startswith(_DEQUANT):
        src = node.args[0]
        if getattr(src, "op", None) == "placeholder" and src.name in nodes:
            return src.name, node
    return None, None


def constant_bytes(ep: ExportedProgram) -> ConstantBytes:
    consts = _constants(ep)
    nodes = {n.name: n for n in ep.graph.nodes if n.op == "placeholder" and n.name in consts}
    weights = biases = requant = other = layers = 0
    done: set[str] = set()  # counted, or replaced by the requantization parameters
    for node in ep.graph.nodes:
        if node.op != "call_function" or not any(k in _name(node.target) for k in _LAYERS):
            continue
        w_name, w_dq = _source(node.args[1] if len(node.args) > 1 else None, nodes)
        if w_name is None or w_dq is None:
            continue  # a float layer (or an activation-activation product): nothing to requantize
        layers += 1
        if w_name not in done:
            weights += consts[w_name].numel()
            requant += 8 * int(consts[w_name].shape[0])
            done.add(w_name)
        done.update(a.name for a in w_dq.args[1:3] if hasattr(a, "name"))
        b_name, b_dq = _source(node.args[2] if len(node.args) > 2 else None, nodes)
        if b_name is not None and b_name not in done:
            biases += 4 * consts[b_name].numel()
            done.add(b_name)
            if b_dq is not None:
                done.update(a.name for a in b_dq.args[1:3] if hasattr(a, "name"))
    for name, t in consts.items():
        if name in done or name not in nodes or not nodes[name].users:
            continue
        other += t.numel() * t.element_size()
    return ConstantBytes(weights, biases, requant, other, layers)
