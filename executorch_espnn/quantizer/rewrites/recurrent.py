"""GRU and LSTM (``nn.GRU``, ``nn.LSTM``, ``nn.GRUCell``, ``nn.LSTMCell``) -> their time steps
as the operators the delegate runs.

torch.export keeps a recurrent layer as one operator (``aten.lstm.input``, ``aten.gru.input``,
``aten.lstm_cell``, ``aten.gru_cell``) that the quantizer cannot annotate; ``to_edge`` later
unrolls it into about 20 float operators per step, which all stayed on the CPU.  Unrolled here,
before annotation, every step is ``linear`` (ESP-NN's fully-connected kernel), ``add``, ``mul``,
``sub``, ``sigmoid``/``tanh`` (lookup tables) and ``select``/``stack`` (copies), each
quantized, so ``convert_pt2e``'s model computes what the device computes, step by step.

Per step, with the gates' biases folded into the input projection (``b_ih + b_hh``; the state
projection has no bias) and PyTorch's gate order::

    LSTM  i, f, g, o = sig(Wi x + Ui h + bi), sig(..f), tanh(..g), sig(..o)
          c' = f * c + i * g        h' = o * tanh(c')
    GRU   r, z = sig(Wr x + Ur h + br), sig(..z)
          n = tanh(Wn x + bn_i + r * (Un h + bn_h))     h' = n + z * (h - n)

A zero initial state (the default, or ``torch.zeros`` in the model) drops the terms it
zeroes at the first step (``Ui h``, ``f * c``; the GRU's ``Un h + bn_h`` becomes the constant
``bn_h``), so no zero tensor reaches the device.  Every quantity of a step is tagged with its
role (``ROLE_META``: a gate's input projection, pre-activation, activation, ``c``, ``h``, ...) so
that the annotation quantizes a role with one set of parameters at every step
(``tie_recurrent_steps``): the recurrence reads the same scale at every step, the steps share
their constants (weights, biases, requantisation multipliers, tables: one copy in the payload)
and ``stack`` of the steps (``return_sequences``) needs no requantisation.
``output[:, -1]`` / ``h_n[-1]`` of the stacked results read the step's tensor directly.

Not rewritten (``recurrent_refusal`` says why; to_edge's decomposition then stays on the CPU):
bidirectional layers, LSTM projections (``proj_size``), training mode (dropout between layers),
unbatched or symbolic shapes.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch.fx import GraphModule, Node

from .nodes import attr_value, call, constant, shape

aten = torch.ops.aten

#: node.meta key of each quantity of a step: (layer uid, its role in the step: "h", "c",
#: "pre0" (gate 0's pre-activation), ..., step)
ROLE_META = "espnn_recurrent_role"

_SEQUENCE = frozenset({aten.lstm.input, aten.gru.input})
_CELLS = frozenset({aten.lstm_cell.default, aten.gru_cell.default})
_ZEROS = frozenset({aten.zeros.default, aten.zeros_like.default, aten.new_zeros.default})
# which gates take the state projection's bias into the input projection's: all of the LSTM's
# (the state projection then has none); the GRU's r and z, not n, whose U h + b is scaled by r
_LSTM_FOLD = (True, True, True, True)
_GRU_FOLD = (True, True, False)


@dataclass(frozen=True)
class _Weights:
    """One layer's weights as get_attr tensors: ``[gates * H, in]``, ``[gates * H, H]``, biases."""

    w_ih: torch.Tensor
    w_hh: torch.Tensor
    b_ih: torch.Tensor | None
    b_hh: torch.Tensor | None


def _is_zero(node: object) -> bool:
    """A zero initial state built inside the model (nn.GRU's default, torch.zeros(...))."""
    if not isinstance(node, Node) or node.op != "call_function":
        return False
    if node.target in _ZEROS:
        return True
    if node.target is aten.full.default and len(node.args) > 1:
        return isinstance(node.args[1], (int, float)) and float(node.args[1]) == 0.0
    return False


def _weights(gm: GraphModule, params: Sequence[object], has_biases: bool, layers: int) -> list[_Weights] | str:
    per = 4 if has_biases else 2
    if len(params) != per * layers:
        return "an LSTM with projections (proj_size > 0)"
    out: list[_Weights] = []
    for layer in range(layers):
        vals = [attr_value(gm, p) for p in params[layer * per:(layer + 1) * per]]
        if any(v is None for v in vals):
            return "a recurrent layer whose weights are not constants of the model"
        ts = [v for v in vals if v is not None]
        out.append(_Weights(ts[0], ts[1], ts[2] if has_biases else None, ts[3] if has_biases else None))
    return out


def recurrent_refusal(node: Node) -> str | None:
    """Why a recurrent operator is not unrolled (None: it is)."""
    if node.target in _CELLS:
        x = node.args[0]
        s = shape(x) if isinstance(x, Node) else None
        if s is None or len(s) != 2:
            return f"{node.target} with an unbatched or symbolic-shaped input; pass [batch, features]"
        return None
    args = node.args
    train, bidirectional = bool(args[6]), bool(args[7])
    if bidirectional:
        return f"a bidirectional {_kind(node)}; only unidirectional layers are delegated"
    if train:
        return f"{_kind(node)} in training mode; export the model in eval mode"
    x = args[0]
    s = shape(x) if isinstance(x, Node) else None
    if s is None or len(s) != 3:
        return f"{_kind(node)} with an unbatched or symbolic-shaped input; pass a 3-D input"
    return None


def _kind(node: Node) -> str:
    return "LSTM" if node.target in (aten.lstm.input, aten.lstm_cell.default) else "GRU"


#: one gate's (input weight, input bias or None, state weight) constants
Gate = tuple[Node, Node | None, Node]


class _Builder:
    """Emits one recurrent operator's steps before ``like`` (its node)."""

    def __init__(self, gm: GraphModule, like: Node) -> None:
        self.gm = gm
        self.like = like
        self.uid = like.name

    def call(self, target: object, *args: object) -> Node:
        return call(self.gm, target, tuple(args), like=self.like)  # type: ignore[arg-type]

    def const(self, name: str, value: torch.Tensor) -> Node:
        return constant(self.gm, f"_espnn_{self.uid}_{name}", value.detach().to(torch.float32), self.like)

    def gate_weights(self, layer: int, w: _Weights, gates: int, fold_hh_bias: Sequence[bool]) -> list[Gate]:
        """Per gate: (input weight, input bias, state weight); the state projection's bias is
        folded into the input bias for the gates where ``fold_hh_bias`` says so."""
        hidden = w.w_hh.shape[1]
        out = []
        for k in range(gates):
            sl = slice(k * hidden, (k + 1) * hidden)
            bias: torch.Tensor | None = None
            if w.b_ih is not None and w.b_hh is not None:
                bias = w.b_ih[sl] + w.b_hh[sl] if fold_hh_bias[k] else w.b_ih[sl]
            wi = self.const(f"l{layer}_wih{k}", w.w_ih[sl])
            bi = self.const(f"l{layer}_bih{k}", bias) if bias is not None else None
            wh = self.const(f"l{layer}_whh{k}", w.w_hh[sl])
            out.append((wi, bi, wh))
        return out

    def linear(self, x: Node, w: Node, b: Node | None) -> Node:
        return self.call(aten.linear.default, x, w, b) if b is not None else self.call(aten.linear.default, x, w)

    def tag(self, node: Node, layer: int, role: str, step: int) -> Node:
        node.meta[ROLE_META] = (f"{self.uid}:{layer}", role, step)
        return node

    def lstm_step(self, layer: int, x: Node, h: Node | None, c: Node | None,
                  g: list[Gate], step: int) -> tuple[Node, Node]:
        def t(node: Node, role: str) -> Node:
            return self.tag(node, layer, role, step)

        pre = []
        for k, (wi, bi, wh) in enumerate(g):
            a = self.linear(x, wi, bi)
            if h is None:
                pre.append(t(a, f"pre{k}"))
            else:
                a = t(a, f"x{k}")
                pre.append(t(self.call(aten.add.Tensor, a, t(self.linear(h, wh, None), f"u{k}")), f"pre{k}"))
        i, f, o = (t(self.call(aten.sigmoid.default, pre[k]), f"gate{k}") for k in (0, 1, 3))
        gg = t(self.call(aten.tanh.default, pre[2]), "gate2")
        if c is None:  # the first step of a zero state: c' = i * g
            c_new = t(self.call(aten.mul.Tensor, i, gg), "c")
        else:
            fc = t(self.call(aten.mul.Tensor, f, c), "fc")
            c_new = t(self.call(aten.add.Tensor, fc, t(self.call(aten.mul.Tensor, i, gg), "ig")), "c")
        h_new = self.call(aten.mul.Tensor, o, t(self.call(aten.tanh.default, c_new), "tanh_c"))
        return t(h_new, "h"), c_new

    def gru_step(self, layer: int, x: Node, h: Node | None,
                 g: list[Gate], bhn: Node | None,
                 step: int) -> Node:
        def t(node: Node, role: str) -> Node:
            return self.tag(node, layer, role, step)

        (wr, br, whr), (wz, bz, whz), (wn, bn, whn) = g
        gates = []
        for k, (wi, bi, wh) in enumerate(((wr, br, whr), (wz, bz, whz))):
            a = self.linear(x, wi, bi)
            if h is None:
                pre = t(a, f"pre{k}")
            else:
                pre = t(self.call(aten.add.Tensor, t(a, f"x{k}"), t(self.linear(h, wh, None), f"u{k}")), f"pre{k}")
            gates.append(t(self.call(aten.sigmoid.default, pre), f"gate{k}"))
        r, z = gates
        if h is None:
            # Un h + bn_h with h = 0 is the constant bn_h (none without biases: n = tanh(Wn x + bn))
            rec = None if bhn is None else t(self.call(aten.mul.Tensor, r, bhn), "rec")
        else:
            rec = t(self.call(aten.mul.Tensor, r, t(self.linear(h, whn, bhn), "u2")), "rec")
        a = self.linear(x, wn, bn)
        pre_n = t(a, "pre2") if rec is None else t(self.call(aten.add.Tensor, t(a, "x2"), rec), "pre2")
        n = t(self.call(aten.tanh.default, pre_n), "gate2")
        if h is None:  # h' = n - z * n
            h_new = self.call(aten.sub.Tensor, n, t(self.call(aten.mul.Tensor, z, n), "zd"))
        else:  # h' = n + z * (h - n)
            d = t(self.call(aten.sub.Tensor, h, n), "d")
            h_new = self.call(aten.add.Tensor, n, t(self.call(aten.mul.Tensor, z, d), "zd"))
        return t(h_new, "h")


def _gru_bhn(b: _Builder, layer: int, w: _Weights) -> Node | None:
    """The n gate's state bias (kept out of the input projection: it is scaled by r)."""
    if w.b_hh is None:
        return None
    hidden = w.w_hh.shape[1]
    return b.const(f"l{layer}_bhn", w.b_hh[2 * hidden:3 * hidden])


def _state(b: _Builder, hx: object, layer: int) -> Node | None:
    """Layer ``layer``'s initial state: None for zeros, else ``hx[layer]``."""
    if hx is None or _is_zero(hx):
        return None
    assert isinstance(hx, Node)
    return b.call(aten.select.int, hx, 0, layer)


def _replace_getitems(node: Node, results: Sequence[Node]) -> None:
    for user in list(node.users):
        if user.target is operator.getitem and isinstance(user.args[1], int):
            user.replace_all_uses_with(results[user.args[1]])


def _stack(b: _Builder, items: list[Node], dim: int) -> Node:
    return b.call(aten.stack.default, items, dim)


def _read_through_stack(gm: GraphModule, stacked: Node, items: list[Node], dim: int) -> None:
    """``select(stack(items, dim), dim, i)`` is ``items[i]``: read the step's tensor directly."""
    for user in list(stacked.users):
        if user.target is aten.select.int and len(user.args) == 3 and user.args[1] == dim:
            idx = user.args[2]
            if isinstance(idx, int) and -len(items) <= idx < len(items):
                user.replace_all_uses_with(items[idx])
                gm.graph.erase_node(user)
    if not stacked.users:
        gm.graph.erase_node(stacked)


def _unroll_sequence(gm: GraphModule, node: Node) -> bool:
    x, hx, params, has_biases, layers = node.args[:5]
    batch_first = bool(node.args[8])
    lstm = node.target is aten.lstm.input
    assert isinstance(x, Node) and isinstance(params, (list, tuple)) and isinstance(layers, int)
    weights = _weights(gm, params, bool(has_biases), layers)
    if isinstance(weights, str):
        return False
    xs = shape(x)
    assert xs is not None
    tdim = 1 if batch_first else 0
    steps = xs[tdim]
    b = _Builder(gm, node)
    h0s, c0s = (hx[0], hx[1]) if lstm else (hx, None)  # type: ignore[index]
    seq: list[Node] = [b.call(aten.select.int, x, tdim, t) for t in range(steps)]
    last_h: list[Node] = []
    last_c: list[Node] = []
    for layer, w in enumerate(weights):
        h = _state(b, h0s, layer)
        c = _state(b, c0s, layer) if lstm else None
        out: list[Node] = []
        g = b.gate_weights(layer, w, 4, _LSTM_FOLD) if lstm else b.gate_weights(layer, w, 3, _GRU_FOLD)
        bhn = None if lstm else _gru_bhn(b, layer, w)
        for t in range(steps):
            if lstm:
                h, c = b.lstm_step(layer, seq[t], h, c, g, t)
            else:
                h = b.gru_step(layer, seq[t], h, g, bhn, t)
            out.append(h)
        seq = out
        last_h.append(out[-1])
        if c is not None:
            last_c.append(c)
    y = _stack(b, seq, tdim)
    results = [y, _stack(b, last_h, 0)]
    if lstm:
        results.append(_stack(b, last_c, 0))
    _replace_getitems(node, results)
    _read_through_stack(gm, y, seq, tdim)
    _read_through_stack(gm, results[1], last_h, 0)
    if lstm:
        _read_through_stack(gm, results[2], last_c, 0)
    return True


def _unroll_cell(gm: GraphModule, node: Node) -> bool:
    lstm = node.target is aten.lstm_cell.default
    x, hx, w_ih, w_hh = node.args[:4]
    b_ih = node.args[4] if len(node.args) > 4 else node.kwargs.get("b_ih")
    b_hh = node.args[5] if len(node.args) > 5 else node.kwargs.get("b_hh")
    vals = [attr_value(gm, p) for p in (w_ih, w_hh)]
    bias = [attr_value(gm, p) if p is not None else None for p in (b_ih, b_hh)]
    if any(v is None for v in vals) or any(p is not None and v is None for p, v in zip((b_ih, b_hh), bias,
                                                                                       strict=True)):
        return False
    assert vals[0] is not None and vals[1] is not None and isinstance(x, Node)
    has_bias = bias[0] is not None and bias[1] is not None
    w = _Weights(vals[0], vals[1], bias[0] if has_bias else None, bias[1] if has_bias else None)
    b = _Builder(gm, node)
    if lstm:
        assert isinstance(hx, (list, tuple))
        h = None if _is_zero(hx[0]) else hx[0]
        c = None if _is_zero(hx[1]) else hx[1]
        g = b.gate_weights(0, w, 4, _LSTM_FOLD)
        h_new, c_new = b.lstm_step(0, x, h, c, g, 0)  # type: ignore[arg-type]
        _replace_getitems(node, [h_new, c_new])
    else:
        h = None if hx is None or _is_zero(hx) else hx
        g = b.gate_weights(0, w, 3, _GRU_FOLD)
        node.replace_all_uses_with(b.gru_step(0, x, h, g, _gru_bhn(b, 0, w), 0))  # type: ignore[arg-type]
    return True


def rewrite_recurrent(gm: GraphModule, quantized: Callable[[Node], bool]) -> bool:
    changed = False
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target not in _SEQUENCE | _CELLS or not quantized(node):
            continue
        if recurrent_refusal(node) is not None:
            continue
        done = _unroll_sequence(gm, node) if node.target in _SEQUENCE else _unroll_cell(gm, node)
        if not done:
            continue
        for user in list(node.users):
            if user.target is operator.getitem and not user.users:
                gm.graph.erase_node(user)
        if not node.users:
            hx = node.args[1]
            gm.graph.erase_node(node)
            for s in (hx if isinstance(hx, (list, tuple)) else [hx]):
                if isinstance(s, Node) and _is_zero(s) and not s.users:
                    gm.graph.erase_node(s)
        changed = True
    return changed
