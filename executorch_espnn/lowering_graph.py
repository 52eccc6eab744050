"""Reading a quantized FX graph: operator names, quantization parameters, constants, and
the dequantize → operator → quantize groups ("units") that become payload ops.

Works on both the ATen program ``ops_to_not_decompose`` sees and the edge program the
partitioner and ``preprocess`` see: targets are compared by their canonical name
("aten.linear.default"), whatever dialect object carries them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
from torch._export.utils import (
    get_buffer,
    get_lifted_tensor_constant,
    get_param,
    is_buffer,
    is_lifted_tensor_constant,
    is_param,
)
from torch._subclasses.fake_tensor import FakeTensor
from torch.export import ExportedProgram
from torch.fx import Node

from .ops import OpLowering, Registry, Unit, Unsupported

QUANTIZE = "quantized_decomposed.quantize_per_tensor.default"
DEQUANTIZE = "quantized_decomposed.dequantize_per_tensor.default"
DEQUANTIZE_PER_CHANNEL = "quantized_decomposed.dequantize_per_channel.default"
QDQ_OPS = frozenset({
    QUANTIZE,
    DEQUANTIZE,
    DEQUANTIZE_PER_CHANNEL,
    "quantized_decomposed.quantize_per_tensor.tensor",
    "quantized_decomposed.dequantize_per_tensor.tensor",
    "quantized_decomposed.quantize_per_channel.default",
})
GETITEM = "getitem"

# clamp-like activations that fold into a preceding operator's output range
FUSABLE_ACTIVATIONS = frozenset({
    "aten.relu.default",
    "aten.relu6.default",
    "aten.hardtanh.default",
    "aten.clamp.default",
    "aten.clamp_min.default",
    "aten.clamp_max.default",
})

INT8_MIN = -128
INT8_MAX = 127

_MISSING: Any = object()


def op_name(target: object) -> str:
    """Canonical name of an FX call target: "aten.linear.default", "getitem", …"""
    if isinstance(target, torch._ops.OpOverload):
        return str(target)
    name = getattr(target, "__name__", None)
    if isinstance(name, str):
        # EdgeOpOverload.__name__ is already "aten.linear.default"
        return name
    return str(target)


def node_op(node: Node) -> str:
    return op_name(node.target) if node.op == "call_function" else node.op


def is_quantize(node: object) -> bool:
    return isinstance(node, Node) and node.op == "call_function" and node_op(node) == QUANTIZE


def is_dequantize(node: object) -> bool:
    return isinstance(node, Node) and node.op == "call_function" and node_op(node) == DEQUANTIZE


def is_qdq(node: Node) -> bool:
    return node.op == "call_function" and node_op(node) in QDQ_OPS


def node_arg(node: Node, index: int, name: str, default: Any = _MISSING) -> Any:
    """Argument ``index``/``name`` of a call, positional or keyword."""
    if len(node.args) > index:
        return node.args[index]
    if name in node.kwargs:
        return node.kwargs[name]
    if default is _MISSING:
        raise Unsupported(f"{node_op(node)} is missing its '{name}' argument")
    return default


def meta_val(node: Node) -> torch.Tensor:
    val = node.meta.get("val")
    if isinstance(val, (tuple, list)):
        val = val[0]
    if not isinstance(val, torch.Tensor):
        raise Unsupported(f"{node.name} has no tensor metadata")
    return val


def static_shape(node: Node) -> tuple[int, ...]:
    shape = meta_val(node).shape
    out: list[int] = []
    for d in shape:
        if not isinstance(d, int):
            try:
                d = int(d)
            except (TypeError, ValueError):
                raise Unsupported(f"{node.name} has a dynamic shape {tuple(shape)}") from None
        out.append(d)
    return tuple(out)


@dataclass(frozen=True)
class QParams:
    """Per-tensor affine int8 quantization: real = scale * (q - zero_point)."""

    scale: float
    zero_point: int

    @property
    def scale32(self) -> float:
        """The scale as dequantize_per_tensor applies it (a float32 multiply)."""
        return float(np.float32(self.scale))

    @property
    def inv_scale32(self) -> float:
        """1/scale as quantize_per_tensor applies it (a float32 multiply)."""
        return float(np.float32(1.0 / self.scale))

    def quantize(self, values: torch.Tensor) -> torch.Tensor:
        """Exactly what the program's quantize_per_tensor computes, as int8."""
        out: torch.Tensor = torch.ops.quantized_decomposed.quantize_per_tensor(
            values.to(torch.float32), self.scale, self.zero_point, INT8_MIN, INT8_MAX, torch.int8
        )
        return out

    def dequantize(self, values: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = torch.ops.quantized_decomposed.dequantize_per_tensor(
            values.to(torch.int8), self.scale, self.zero_point, INT8_MIN, INT8_MAX, torch.int8
        )
        return out

    def quantize_scalar(self, v: float) -> int:
        return int(self.quantize(torch.tensor([v], dtype=torch.float32))[0])


def qdq_params(node: Node) -> QParams:
    """The int8 per-tensor parameters of a quantize/dequantize node (refusing anything else)."""
    scale = node_arg(node, 1, "scale")
    zp = node_arg(node, 2, "zero_point")
    qmin = node_arg(node, 3, "quant_min")
    qmax = node_arg(node, 4, "quant_max")
    dtype = node_arg(node, 5, "dtype")
    if dtype != torch.int8:
        raise Unsupported(f"{node.name} quantizes to {dtype}, the engine runs int8 only")
    if (qmin, qmax) != (INT8_MIN, INT8_MAX):
        raise Unsupported(f"{node.name} uses the range [{qmin}, {qmax}]; activations need int8's full [-128, 127]")
    if isinstance(scale, Node) or isinstance(zp, Node):
        raise Unsupported(f"{node.name} has tensor-valued quantization parameters")
    scale = float(scale)
    if not (math.isfinite(scale) and scale > 0):
        raise Unsupported(f"{node.name} has scale {scale}")
    zp = int(zp)
    if not INT8_MIN <= zp <= INT8_MAX:
        raise Unsupported(f"{node.name} has zero point {zp} outside int8")
    return QParams(scale, zp)


@dataclass(frozen=True)
class QuantWeight:
    """A constant int8 weight with per-output-channel scales along ``axis``."""

    values: npt.NDArray[np.int8]
    scales: npt.NDArray[np.float64]  # one per index of `axis`
    axis: int


def _real_of_fake(fake: FakeTensor) -> torch.Tensor | None:
    """The real tensor a FakeTensor was made from, via its fake mode's conversion memo.

    This reads torch internals (pinned torch 2.13); any change there only makes the
    lookup fail, which the caller turns into a clear "values not visible" reason.
    """
    try:
        conv = fake.fake_mode.fake_tensor_converter.meta_converter
        for real, tid in conv.describer.lookup_tensor.items():  # type: ignore[no-untyped-call]
            if conv.tensor_memo.get(tid) is fake and not isinstance(real, FakeTensor):
                return real if isinstance(real, torch.Tensor) else None
    except Exception:
        return None
    return None


class GraphContext:
    """Constants and op registry for one exported program (ATen or edge).

    ExecuTorch hands partitioners a copy of the program whose parameters and buffers are
    FakeTensors.  Real values come from ``known`` (tensors the partitioner saw in the
    real ATen program, by state-dict key, see ``EspNNPartitioner.ops_to_not_decompose``)
    or, failing that, from the fake tensor's own memo of the real tensor it was made from.
    """

    def __init__(self, ep: ExportedProgram | None, registry: Registry,
                 known: dict[str, torch.Tensor] | None = None) -> None:
        self.ep = ep
        self.registry = registry
        self.known = known or {}
        self._keys: dict[str, str] | None = None
        self._values: dict[Node, torch.Tensor | None] = {}

    def _key(self, node: Node) -> str | None:
        if self.ep is None or node.op != "placeholder":
            return None
        if self._keys is None:
            # graph_signature rebuilds these mappings on every access: read them once
            sig = self.ep.graph_signature
            self._keys = {}
            for table in (sig.inputs_to_parameters, sig.inputs_to_buffers, sig.inputs_to_lifted_tensor_constants):
                self._keys.update({str(k): str(v) for k, v in table.items()})
        return self._keys.get(node.name)

    def is_constant(self, node: object) -> bool:
        """Whether ``node`` is a parameter, buffer or lifted constant (whatever its values)."""
        if not isinstance(node, Node):
            return False
        return node.op == "get_attr" or self._key(node) is not None

    def constant(self, node: object) -> torch.Tensor | None:
        """The real value of a constant node, None for anything computed at run time."""
        if not isinstance(node, Node):
            return None
        if node not in self._values:
            self._values[node] = self._constant(node)
        return self._values[node]

    def _constant(self, node: Node) -> torch.Tensor | None:
        if node.op == "get_attr" and self.ep is not None:
            obj: Any = self.ep.graph_module
            for part in str(node.target).split("."):
                obj = getattr(obj, part, None)
            return obj.detach() if isinstance(obj, torch.Tensor) else None
        key = self._key(node)
        if key is None or self.ep is None:
            return None
        ep = self.ep
        t: Any = None
        if is_param(ep, node):
            t = get_param(ep, node)
        elif is_buffer(ep, node):
            t = get_buffer(ep, node)
        elif is_lifted_tensor_constant(ep, node):
            t = get_lifted_tensor_constant(ep, node)
        if not isinstance(t, torch.Tensor):
            return None
        if isinstance(t, FakeTensor):
            real = self.known.get(key)
            if real is None or real.shape != t.shape or real.dtype != t.dtype:
                real = _real_of_fake(t)
            if real is None:
                raise Unsupported(
                    f"the values of constant '{key}' are not visible to the partitioner; lower with "
                    "to_edge_transform_and_lower(..., partitioner=[EspNNPartitioner()])"
                )
            t = real
        value: torch.Tensor = t.detach()
        return value

    def weight(self, node: object, what: str) -> QuantWeight:
        """A dequantize(_per_channel) of a constant int8 tensor, as symmetric int8 weights."""
        if not isinstance(node, Node) or node.op != "call_function":
            raise Unsupported(f"{what} is not a quantized constant (float weights stay on the CPU)")
        name = node_op(node)
        raw = self.constant(node.args[0])
        if raw is None:
            raise Unsupported(f"{what} is computed at run time, the engine needs constant weights")
        if raw.dtype != torch.int8:
            raise Unsupported(f"{what} is {raw.dtype}, expected int8")
        values = raw.numpy().astype(np.int8)
        if name == DEQUANTIZE_PER_CHANNEL:
            scales_t = self.constant(node.args[1])
            zps_t = self.constant(node.args[2]) if node.args[2] is not None else None
            axis = int(node_arg(node, 3, "axis"))
            if scales_t is None:
                raise Unsupported(f"{what} has non-constant scales")
            scales = scales_t.to(torch.float64).numpy().reshape(-1)
            zps = np.zeros_like(scales) if zps_t is None else zps_t.to(torch.float64).numpy().reshape(-1)
        elif name == DEQUANTIZE:
            s, z = node_arg(node, 1, "scale"), node_arg(node, 2, "zero_point")
            if isinstance(s, Node) or isinstance(z, Node):
                raise Unsupported(f"{what} has tensor-valued quantization parameters")
            axis = 0
            n = values.shape[0] if values.ndim else 1
            scales = np.full(n, float(s), dtype=np.float64)
            zps = np.full(n, float(z), dtype=np.float64)
        else:
            raise Unsupported(f"{what} is produced by {name}, expected a dequantize of int8 weights")
        if (zps != 0).any():
            raise Unsupported(f"{what} is asymmetric (non-zero zero point); ESP-NN needs symmetric weights")
        if (values == -128).any():
            raise Unsupported(f"{what} contains -128; ESP-NN weights must be symmetric in [-127, 127]")
        if not (np.isfinite(scales).all() and (scales > 0).all()):
            raise Unsupported(f"{what} has a zero, negative or non-finite scale")
        if values.ndim == 0 or scales.shape[0] != values.shape[axis]:
            raise Unsupported(f"{what} has {scales.shape[0]} scales for {values.shape} values on axis {axis}")
        return QuantWeight(values, scales, axis)

    def bias(self, node: object, what: str) -> npt.NDArray[np.float64] | None:
        """A bias operand as float64 reals (float constant, or dequantized int32 constant)."""
        if node is None:
            return None
        if not isinstance(node, Node):
            raise Unsupported(f"{what} is not a tensor")
        const = self.constant(node)
        if const is not None:
            if not const.dtype.is_floating_point:
                raise Unsupported(f"{what} is {const.dtype} without quantization parameters")
            return const.to(torch.float32).to(torch.float64).numpy().reshape(-1)
        name = node_op(node) if node.op == "call_function" else ""
        if name in (DEQUANTIZE, DEQUANTIZE_PER_CHANNEL):
            raw = self.constant(node.args[0])
            if raw is None:
                raise Unsupported(f"{what} is computed at run time, the engine needs a constant bias")
            args: list[Any] = [raw]
            for a in node.args[1:]:
                if isinstance(a, Node):
                    c = self.constant(a)
                    if c is None:
                        raise Unsupported(f"{what} has non-constant quantization parameters")
                    args.append(c)
                else:
                    args.append(a)
            # the exact float32 values the program adds
            op = torch.ops.quantized_decomposed
            fn = op.dequantize_per_tensor if name == DEQUANTIZE else op.dequantize_per_channel
            real: torch.Tensor = fn(*args)
            values: npt.NDArray[np.float64] = real.to(torch.float32).to(torch.float64).numpy().reshape(-1)
            return values
        raise Unsupported(f"{what} is computed at run time, the engine needs a constant bias")


def duplicate_dequantize(gm: torch.fx.GraphModule) -> bool:
    """Give each reader of a shared dequantize node its own copy (per tensor and per channel).

    Each quantized operator then owns the dequantize nodes in front of it, which keeps the
    groups the partitioner forms disjoint.  Works on ATen and edge graphs alike.
    """
    changed = False
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node_op(node) not in (DEQUANTIZE, DEQUANTIZE_PER_CHANNEL):
            continue
        readers = [u for u in node.users if u.op == "call_function"]
        for user in readers[1:] if len(readers) == len(node.users) else readers:
            with gm.graph.inserting_before(user):
                dup = gm.graph.call_function(node.target, node.args, dict(node.kwargs))
            dup.meta = dict(node.meta)
            user.replace_input_with(node, dup)
            changed = True
    if changed:
        gm.recompile()
    return changed


def clamp_bounds(node: Node) -> tuple[float | None, float | None]:
    """(min, max) of a relu/relu6/hardtanh/clamp node; None means unbounded."""
    name = node_op(node)
    if name == "aten.relu.default":
        return 0.0, None
    if name == "aten.relu6.default":
        return 0.0, 6.0
    if name == "aten.hardtanh.default":
        return float(node_arg(node, 1, "min_val", -1.0)), float(node_arg(node, 2, "max_val", 1.0))
    if name == "aten.clamp.default":
        lo = node_arg(node, 1, "min", None)
        hi = node_arg(node, 2, "max", None)
        if isinstance(lo, Node) or isinstance(hi, Node):
            raise Unsupported("clamp with tensor bounds")
        return (None if lo is None else float(lo)), (None if hi is None else float(hi))
    if name in ("aten.clamp_min.default", "aten.clamp_max.default"):
        bound = node_arg(node, 1, "min" if name.endswith("min.default") else "max")
        if isinstance(bound, Node):
            raise Unsupported(f"{name} with a tensor bound")
        return (float(bound), None) if name.endswith("min.default") else (None, float(bound))
    raise Unsupported(f"{name} is not a clamp-like activation")


def match_unit(node: Node, lowering: OpLowering, ctx: GraphContext) -> Unit:
    """Collect the dequantize/operator/activation/quantize group anchored at ``node``."""
    inputs: list[Node] = []
    for i, arg in enumerate(lowering.activation_args(node, ctx)):
        if not is_dequantize(arg):
            if isinstance(arg, Node) and node_op(arg) == DEQUANTIZE_PER_CHANNEL:
                raise Unsupported(f"operand {i} is dequantized per channel; activations must be per tensor")
            raise Unsupported(
                f"operand {i} ({getattr(arg, 'name', arg)}) is not an int8-quantized tensor "
                "(the quantizer left it in float)"
            )
        qdq_params(arg)
        inputs.append(arg)
    weights = lowering.weight_nodes(node, ctx)
    if lowering.returns_pieces:
        return _match_pieces(node, lowering, inputs, weights)
    result = lowering.result_node(node)
    compute = [node] if result is node else [node, result]
    fused: list[Node] = []
    cur = result
    while lowering.fuses_activation and len(cur.users) == 1:
        (user,) = cur.users
        if user.op != "call_function" or node_op(user) not in FUSABLE_ACTIVATIONS or user.args[0] is not cur:
            break
        clamp_bounds(user)
        fused.append(user)
        compute.append(user)
        cur = user
    if not cur.users:
        raise Unsupported("result is unused")
    return Unit(lowering, node, compute, inputs, weights, _only_quantize(cur, "result"), fused)


def _reader(n: Node) -> str:
    return "the graph output" if n.op == "output" else f"{node_op(n)} ({n.name})"


def _only_quantize(value: Node, subject: str) -> Node:
    """The one quantize node that must be the only reader of a unit's result ``value``."""
    users = list(value.users)
    bad = [u for u in users if not is_quantize(u)]
    if bad:
        raise Unsupported(f"{subject} feeds {_reader(bad[0])} without int8 quantization")
    if len(users) > 1:
        raise Unsupported(f"{subject} is quantized more than once")
    qdq_params(users[0])
    return users[0]


def _match_pieces(node: Node, lowering: OpLowering, inputs: list[Node], weights: list[Node]) -> Unit:
    """The group of an operator returning a list (split): each used piece is a ``getitem``
    followed by exactly one quantize; unused pieces' getitems join the group as well, so
    no node reading the operator is left behind on the CPU."""
    pieces: list[tuple[int, Node]] = []
    for u in node.users:
        if u.op != "call_function" or node_op(u) != GETITEM or not isinstance(u.args[1], int):
            raise Unsupported(f"its list of pieces is read by {_reader(u)}, not by indexing")
        pieces.append((u.args[1], u))
    pieces.sort(key=lambda p: p[0])
    outputs: list[Node] = []
    for _, piece in pieces:
        if piece.users:
            outputs.append(_only_quantize(piece, f"piece {piece.name}"))
    if not outputs:
        raise Unsupported("result is unused")
    compute = [node, *(p for _, p in pieces)]
    return Unit(lowering, node, compute, inputs, weights, outputs[0], [], outputs[1:])


# ---------------------------------------------------------------------------------------
# source locations

def _package_dirs() -> tuple[str, ...]:
    dirs = []
    for mod in ("torch", "torchao", "executorch"):
        try:
            m = __import__(mod)
        except ImportError:  # pragma: no cover - all three are dependencies
            continue
        f = getattr(m, "__file__", None)
        if f:
            dirs.append(str(Path(f).resolve().parent) + "/")
    return tuple(dirs)


_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')


def source_location(node: Node, skip_dirs: Iterable[str] | None = None) -> str | None:
    """"model.py:42 in forward" for the innermost user frame of the node's stack trace."""
    trace = node.meta.get("stack_trace")
    if not isinstance(trace, str) or not trace:
        return None
    frames = _FRAME.findall(trace)
    if not frames:
        return None
    skips = tuple(skip_dirs) if skip_dirs is not None else _package_dirs()
    for f in reversed(frames):
        try:
            resolved = str(Path(f[0]).resolve())
        except OSError:  # pragma: no cover
            resolved = f[0]
        if not resolved.startswith(skips):
            return f"{Path(f[0]).name}:{f[1]} in {f[2]}"
    # only library frames (an nn.Sequential of stock modules): name the module too
    chosen = frames[-1]
    where = f"{Path(chosen[0]).name}:{chosen[1]} in {chosen[2]}"
    stack = node.meta.get("nn_module_stack")
    if isinstance(stack, dict) and stack:
        path, kind = list(stack.values())[-1]
        kind_name = getattr(kind, "__name__", None) or str(kind).rsplit(".", 1)[-1].strip("'>")
        if path:
            where += f" (module {path}: {kind_name})"
    return where
