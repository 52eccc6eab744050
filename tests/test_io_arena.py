"""The program's inputs and outputs in the delegate arena (``lower(..., io_arena=True)``, the
default; executorch_espnn/io_arena.py): which programs qualify, what the payloads and the
program then hold, and that the results do not change."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import executorch_espnn as ee
from executorch_espnn import host
from executorch_espnn.io_arena import program_homes
from executorch_espnn.payload import Storage, decode
from executorch_espnn.payload.format import NO_HOME
from executorch_espnn.pte import delegate_payloads, read_program
from executorch_espnn.report.analysis import arena_timeline


class ConvNet(torch.nn.Module):
    """A float 8x16x16 input the first ops consume, then activations that need its bytes."""

    def __init__(self) -> None:
        super().__init__()
        self.c1 = torch.nn.Conv2d(8, 16, 3, padding=1)
        self.c2 = torch.nn.Conv2d(16, 16, 3, padding=1)
        self.c3 = torch.nn.Conv2d(16, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c3(torch.relu(self.c2(torch.relu(self.c1(x)))))


class CpuReadsInput(torch.nn.Module):
    """The input is read by a CPU operator too, and an output comes from the CPU."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.fc(x), torch.cumsum(x, 1)


def _lower(model: torch.nn.Module, shape: tuple[int, ...], **kw: object) -> ee.LoweredModel:
    torch.manual_seed(0)
    model.eval()
    cal = [(torch.randn(shape),) for _ in range(4)]
    return ee.lower(model, cal[0], calibration=cal, target="esp32", **kw)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def conv_pair() -> tuple[ee.LoweredModel, ee.LoweredModel]:
    torch.manual_seed(1)
    model = ConvNet()  # one set of weights, lowered both ways
    return _lower(model, (1, 8, 16, 16)), _lower(model, (1, 8, 16, 16), io_arena=False)


def test_a_fully_delegated_program_keeps_its_io_in_the_arena(
        conv_pair: tuple[ee.LoweredModel, ee.LoweredModel]) -> None:
    homed, planned = conv_pair
    info, before = read_program(homed.pte), read_program(planned.pte)
    # ExecuTorch plans nothing; before, it planned the float input and output
    assert sum(info.planned_buffers) == 0 == homed.report.planned_bytes
    assert sum(before.planned_buffers) >= (8 * 16 * 16 + 4 * 16 * 16) * 4
    (p,) = [decode(d) for d in delegate_payloads(homed.pte)]
    assert p.io_homes is not None and NO_HOME not in p.io_homes
    (q,) = [decode(d) for d in delegate_payloads(planned.pte)]
    assert q.io_homes is None
    # the arena grows by less than the I/O it now holds
    io = sum(p.tensors[t].nbytes for t in p.inputs + p.outputs)
    assert p.arena_size < q.arena_size + io
    assert program_homes(info) == ([p.io_homes[0]], [p.io_homes[1]])
    assert program_homes(before) == ([None], [None])
    # the whole bill (arena + planned) shrinks
    assert p.arena_size + sum(info.planned_buffers) < q.arena_size + sum(before.planned_buffers)


def test_the_inputs_bytes_are_reused_once_it_is_consumed(
        conv_pair: tuple[ee.LoweredModel, ee.LoweredModel]) -> None:
    """The point of it: an arena tensor written after the input's last reader sits on the input's
    bytes (which is also why a sketch writes its inputs before every invoke)."""
    (p,) = [decode(d) for d in delegate_payloads(conv_pair[0].pte)]
    timeline = arena_timeline(p)
    home = next(t for t in timeline.tensors if t.tensor == p.inputs[0])
    assert home.offset == p.io_homes[0] and home.first == 0  # type: ignore[index]
    reusers = [t for t in timeline.tensors if t.first > home.last and t.offset < home.offset + home.nbytes
               and home.offset < t.offset + t.nbytes]
    assert reusers



def test_an_input_and_an_output_may_share_bytes(conv_pair: tuple[ee.LoweredModel, ee.LoweredModel]) -> None:
    """docs/runtime.md's warning: the input is dead before the output is written, so the planner
    may give both the same bytes (here both at offset 0): input() and output() then alias, and
    writing the next input overwrites the last result."""
    (p,) = [decode(d) for d in delegate_payloads(conv_pair[0].pte)]
    spans = {t.tensor: t for t in arena_timeline(p).tensors}
    x, y = spans[p.inputs[0]], spans[p.outputs[0]]
    assert x.offset < y.offset + y.nbytes and y.offset < x.offset + x.nbytes  # they overlap
    assert x.last < y.first  # and are never live together
    assert program_homes(read_program(conv_pair[0].pte)) == ([x.offset], [y.offset])

def test_results_are_bit_exact_with_the_planned_layout(
        conv_pair: tuple[ee.LoweredModel, ee.LoweredModel]) -> None:
    homed, planned = conv_pair
    for seed in range(3):
        x = np.random.default_rng(seed).standard_normal((1, 8, 16, 16)).astype(np.float32)
        (a,), (b,) = host.run(homed.pte, [x]), host.run(planned.pte, [x])
        np.testing.assert_array_equal(a, b)


def test_a_cpu_operator_at_the_boundary_keeps_executorchs_layout() -> None:
    lm = _lower(CpuReadsInput(), (1, 8))
    info = read_program(lm.pte)
    assert sum(info.planned_buffers) > 0
    assert all(decode(d).io_homes is None for d in delegate_payloads(lm.pte))
    assert program_homes(info) == ([None], [None, None])


@pytest.mark.slow
def test_two_delegates_home_the_first_ones_input_and_the_last_ones_output() -> None:
    """island_net: delegate, CPU operator, delegate.  The program input lives in the first
    delegate's arena plan, the output in the last one's; what crosses the CPU operator stays
    ExecuTorch's."""
    from devkit.lowered_zoo import lowered_zoo

    lm = lowered_zoo("island_net")
    first, last = (decode(d) for d in delegate_payloads(lm.pte))
    assert first.io_homes is not None and last.io_homes is not None
    n_in0, n_in1 = len(first.inputs), len(last.inputs)
    assert NO_HOME not in first.io_homes[:n_in0] and set(first.io_homes[n_in0:]) == {NO_HOME}
    assert set(last.io_homes[:n_in1]) == {NO_HOME} and NO_HOME not in last.io_homes[n_in1:]
    assert all(first.tensors[t].storage == Storage.INPUT for t in first.inputs)
    info = read_program(lm.pte)
    ins, outs = program_homes(info)
    assert None not in ins + outs
    # the CPU operator's tensors are still planned
    assert sum(info.planned_buffers) > 0
