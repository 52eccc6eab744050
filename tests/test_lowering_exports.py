"""lower() traces the model once: quantize() takes the program of the export stage as it is
(a second torch.export of the same model was ~1/3 of the quantize stage on MobileNetV2), and a
program exported in training mode is still quantized in eval mode."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import executorch_espnn as ee
from executorch_espnn.quantizer.workflow import export_model, quantize


class _Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(8, 16)
        self.bn = torch.nn.BatchNorm1d(16)
        self.drop = torch.nn.Dropout(0.5)
        self.fc2 = torch.nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.drop(torch.relu(self.bn(self.fc1(x)))))


def _net() -> _Net:
    torch.manual_seed(0)
    net = _Net()
    with torch.no_grad():  # statistics unlike a fresh batch norm's, so train/eval differ
        net.bn.running_mean.uniform_(-1, 1)
        net.bn.running_var.uniform_(0.5, 2)
    return net.eval()


def _data(n: int) -> list[tuple[torch.Tensor]]:
    g = torch.Generator().manual_seed(1)
    return [(torch.randn(2, 8, generator=g),) for _ in range(n)]


def test_lower_calls_torch_export_once_per_program(monkeypatch: pytest.MonkeyPatch) -> None:
    real = torch.export.export
    traced: list[str] = []

    def counting(mod: Any, *args: Any, **kwargs: Any) -> Any:
        traced.append(type(mod).__name__)
        return real(mod, *args, **kwargs)

    monkeypatch.setattr(torch.export, "export", counting)
    (x,) = _data(1)[0]
    lm = ee.lower(_net(), (x,), _data(4))
    # the float model, then the quantized graph: never the float model a second time
    assert traced == ["_Net", "GraphModule"], traced
    assert lm.report.delegated_ops


def test_quantizing_the_exported_program_equals_quantizing_the_module() -> None:
    net = _net()
    ex = _data(1)[0]
    from_module = quantize(net, ex, _data(4))
    from_program = quantize(export_model(net, ex), ex, _data(4), exported_in_eval_mode=True)
    for (x,) in _data(3):
        torch.testing.assert_close(from_program.graph_module(x), from_module.graph_module(x), rtol=0, atol=0)


def test_program_exported_in_training_mode_is_quantized_in_eval_mode() -> None:
    net = _net()
    ex = _data(1)[0]
    want = quantize(net, ex, _data(4))
    net.train()
    train_program = torch.export.export(net, ex)  # dropout and batch statistics in the graph
    got = quantize(train_program, ex, _data(4))
    for (x,) in _data(3):
        torch.testing.assert_close(got.graph_module(x), want.graph_module(x), rtol=0, atol=0)
