"""GRU and LSTM (layers and cells) quantized and delegated whole (issue 25).

The quantizer unrolls them into their time steps before annotation
(``quantizer/rewrites/recurrent.py``); these tests check that the unrolled graph computes the
float layer, that the states of all steps share one quantization, that what is not unrolled
says why, and that the variants (1-2 layers, batch_first either way, last step or all steps,
with and without an initial state, cells) lower into one partition with nothing on the CPU and
the delegate within 1 LSB of ``convert_pt2e``.  The trained classifiers on scikit-learn's digits
(float, PT2E and ESP-NN accuracy, logits against PT2E, the C engine) are in
tests/test_trained_digits.py; their deployed (batch 1) program's memory is checked here.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch
from torch import nn

from devkit.lowering_helpers import check_numerics, lower, quantize_module
from executorch_espnn.graph.names import QUANTIZE, node_op
from executorch_espnn.quantizer.rewrites import (
    ROLE_META,
    recurrent_refusal,
    rewrite_for_annotation,
)

aten = torch.ops.aten


class Seq(nn.Module):
    """nn.GRU / nn.LSTM with the options the issue names."""

    def __init__(self, kind: str, layers: int = 1, batch_first: bool = True, init: bool = False,
                 last: bool = True, features: int = 4, hidden: int = 8) -> None:
        super().__init__()
        self.kind, self.init, self.last, self.batch_first = kind, init, last, batch_first
        self.rnn = (nn.GRU if kind == "gru" else nn.LSTM)(features, hidden, num_layers=layers,
                                                           batch_first=batch_first)

    def forward(self, x: torch.Tensor, h: torch.Tensor | None = None) -> object:
        if self.init:
            y, state = self.rnn(x, (h, torch.tanh(h)) if self.kind == "lstm" else h)
        else:
            y, state = self.rnn(x)
        if self.last:
            return y[:, -1] if self.batch_first else y[-1]
        return (y, *state) if self.kind == "lstm" else (y, state)


class Cell(nn.Module):
    def __init__(self, kind: str, init: bool, features: int = 4, hidden: int = 8) -> None:
        super().__init__()
        self.kind, self.init = kind, init
        self.cell = (nn.GRUCell if kind == "gru" else nn.LSTMCell)(features, hidden)

    def forward(self, x: torch.Tensor, h: torch.Tensor | None = None) -> object:
        if self.kind == "lstm":
            return self.cell(x, (h, 0.5 * h) if self.init else None)
        return self.cell(x, h if self.init else None)


def _inputs(m: nn.Module, steps: int = 3, batch: int = 2, seed: int = 0) -> tuple[torch.Tensor, ...]:
    """The input sequence, and the initial state when the model takes one."""
    g = torch.Generator().manual_seed(seed)
    if isinstance(m, Cell):
        x, h = torch.randn(batch, 4, generator=g), torch.randn(batch, 8, generator=g) * 0.5
    else:
        assert isinstance(m, Seq)
        x = torch.randn((batch, steps, 4) if m.batch_first else (steps, batch, 4), generator=g)
        h = torch.randn(m.rnn.num_layers, batch, 8, generator=g) * 0.5
    return (x, h) if m.init else (x,)


def _flat(out: object) -> list[torch.Tensor]:
    return list(out) if isinstance(out, (tuple, list)) else [out]  # type: ignore[list-item]


@pytest.fixture(scope="module", autouse=True)
def seeded() -> Iterator[None]:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        yield


VARIANTS = [
    *(pytest.param(Seq, (kind, layers, bf, init, last), id=f"{kind}-l{layers}-{'bf' if bf else 'tm'}-"
                   f"{'h0' if init else 'zero'}-{'last' if last else 'all'}")
      for kind in ("gru", "lstm") for layers, bf, init, last in
      ((1, True, False, True), (2, False, True, False), (1, False, False, False), (2, True, True, True))),
    *(pytest.param(Cell, (kind, init), id=f"{kind}cell-{'h0' if init else 'zero'}")
      for kind in ("gru", "lstm") for init in (False, True)),
]


@pytest.mark.parametrize(("cls", "args"), VARIANTS)
def test_unrolled_steps_compute_the_float_layer(cls: type[nn.Module], args: tuple[object, ...]) -> None:
    m = cls(*args).eval()
    xs = _inputs(m, steps=5)
    gm = torch.export.export(m, xs).module()
    want = _flat(gm(*xs))
    rewrite_for_annotation(gm, lambda n: True)
    left = [n.target for n in gm.graph.nodes if n.op == "call_function" and n.target in (
        aten.lstm.input, aten.gru.input, aten.lstm_cell.default, aten.gru_cell.default, aten.zeros.default)]
    assert left == []
    got = _flat(gm(*xs))
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-6)


def test_a_zero_initial_state_leaves_no_zero_tensor_and_no_state_product() -> None:
    """nn.GRU's default zero state: the first step has neither the state projection nor a zeros tensor."""
    m = Seq("gru").eval()
    xs = _inputs(m, steps=1)
    gm = torch.export.export(m, xs).module()
    rewrite_for_annotation(gm, lambda n: True)
    linears = [n for n in gm.graph.nodes if n.target is aten.linear.default]
    # r, z, n of the input projection; the state's n projection became the constant b_hn
    assert len(linears) == 3
    assert not any(n.target is aten.zeros.default for n in gm.graph.nodes)


def test_every_steps_state_has_one_quantization() -> None:
    m = Seq("lstm", last=False).eval()
    xs = _inputs(m, steps=4)
    conv = quantize_module(m, xs)
    states: dict[tuple[str, str], set[tuple[float, int]]] = {}
    prepared = torch.export.export(m, xs).module()
    rewrite_for_annotation(prepared, lambda n: True)
    tagged = {n.name for n in prepared.graph.nodes if ROLE_META in n.meta}
    for n in conv.graph.nodes:
        if n.name in tagged:
            qs = [u for u in n.users if node_op(u) == QUANTIZE]
            assert len(qs) == 1, n.name
            states.setdefault(n.meta[ROLE_META][:2], set()).add((float(qs[0].args[1]), int(qs[0].args[2])))
    assert {w for _, w in states} >= {"h", "c", "pre0"}
    assert all(len(v) == 1 for (_, w), v in states.items() if w in ("h", "c")), states
    assert len(states[next(k for k in states if k[1] == "pre0")]) > 1  # the others: one per step


@pytest.mark.parametrize(("make", "why"), [
    (lambda: nn.LSTM(4, 8, bidirectional=True), "bidirectional LSTM; only unidirectional layers"),
    (lambda: nn.GRU(4, 8, bidirectional=True), "bidirectional GRU"),
])
def test_what_is_not_unrolled_says_why(make: object, why: str) -> None:
    class M(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.rnn = make()  # type: ignore[operator]

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.rnn(x)[0]  # type: ignore[no-any-return]

    gm = torch.export.export(M().eval(), (torch.randn(3, 1, 4),)).module()
    (node,) = [n for n in gm.graph.nodes if n.target in (aten.lstm.input, aten.gru.input)]
    reason = recurrent_refusal(node)
    assert reason is not None and why in reason
    rewrite_for_annotation(gm, lambda n: True)
    assert node in gm.graph.nodes  # left as it is: to_edge's decomposition stays on the CPU


def test_an_lstm_with_projections_is_left_whole() -> None:
    class M(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.rnn = nn.LSTM(4, 8, proj_size=3)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.rnn(x)[0]  # type: ignore[no-any-return]

    gm = torch.export.export(M().eval(), (torch.randn(3, 1, 4),)).module()
    rewrite_for_annotation(gm, lambda n: True)
    assert any(n.target is aten.lstm.input for n in gm.graph.nodes)


@pytest.mark.slow
@pytest.mark.parametrize(("cls", "args"), VARIANTS)
def test_variants_are_delegated_whole_within_one_lsb(cls: type[nn.Module], args: tuple[object, ...]) -> None:
    m = cls(*args).eval()
    xs = _inputs(m)
    calib = [xs] + [_inputs(m, seed=s) for s in range(1, 5)]
    low = lower(m, xs, calib=calib)
    assert low.cpu() == [] and len(low.payloads) == 1, [(d.op, d.reason) for d in low.cpu()]
    assert set(low.opcodes()) <= {"QUANTIZE", "DEQUANTIZE", "FULLY_CONNECTED", "ADD", "MUL", "LUT", "SLICE",
                                  "RESHAPE", "CONCAT"}
    check_numerics(low)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["gru", "lstm"])
def test_trained_classifier_deploys_in_one_partition_with_little_planned_memory(kind: str) -> None:
    """The issue's targets for the deployed (batch 1) program: one partition, no CPU operator,
    ExecuTorch's planned memory at most 4 KB (it holds the float input and logits only)."""
    import executorch_espnn as ee
    from devkit.digits import MODELS, load_digits_split, train

    torch.set_num_threads(1)
    data = load_digits_split()
    (make, steps), = [(mk, st) for name, mk, st, _, _ in MODELS if name == f"{kind}_rows"]
    m = train(make, data, steps)
    low = ee.lower(m, (data.x_test[:1],), [(x[None],) for x in data.x_train[:128]], target="esp32s3",
                   strict=True)
    r = low.report
    assert len(r.partitions) == 1 and r.cpu_ops == []
    assert r.planned_bytes <= 4096, r.planned_bytes
    print(f"{kind}: planned {r.planned_bytes} B, arena {r.arena_bytes} B, engine state {r.state_bytes} B, "
          f"weights {r.weights_bytes} B, .pte {r.pte_bytes} B, {len(r.delegated_ops)} delegated ops")
