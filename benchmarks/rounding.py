"""Agreement with PyTorch's quantized model where ESP-NN's rounding differs, and what it costs.

    python benchmarks/rounding.py                   every figure (a few minutes: callgrind builds
                                                     the host runner once per model)
    python benchmarks/rounding.py --skip callgrind  the agreement figures only (about a minute)

1. Per operator with a rounding step: the elements of the delegate's output (the bit-exact
   reference, i.e. what the chip computes) that differ from PyTorch's ``convert_pt2e``
   model's, over inputs on the quantization grid (every int8 code equally likely), random
   scales; for averages both with ESP-NN's integer average pool ("espnn") and with the
   engine's float32 kernel AVG_POOL2D_FLOAT ("float"), which the lowering picks where a window
   sum can tie.
2. Models trained on scikit-learn's digits (devkit/digits.py, tests/test_trained_digits.py):
   logits within 1 LSB, the worst difference and flipped predictions, both ways.
3. Host instructions per inference under callgrind (benchmarks/callgrind.py) of the same
   programs both ways: what the float32 kernel costs over ESP-NN's on this machine.  The
   ESP32-S3 runs ESP-NN's average pool as SIMD assembly and float32 additions on its FPU;
   chips without an FPU (ESP32-C3, C6) run them in software: the host figure is not theirs.

The figures go into docs/operators.md, "Rounding: agreement with PyTorch".
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))  # last: the checkout's platform.py must not shadow `platform`

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402


class Fn(nn.Module):
    def __init__(self, fn: Callable[..., torch.Tensor]) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *xs: torch.Tensor) -> torch.Tensor:
        return self.fn(*xs)


@contextlib.contextmanager
def espnn_rounding(on: bool) -> Iterator[None]:
    """Lower every average on ESP-NN's AVG_POOL2D (``on``) instead of choosing per window."""
    import executorch_espnn.ops.pool as pool

    saved = pool.tie_free
    if on:
        pool.tie_free = lambda counts: True  # type: ignore[assignment]
    try:
        yield
    finally:
        pool.tie_free = saved  # type: ignore[assignment]


@dataclass
class Agreement:
    name: str
    variant: str
    ops: str
    differ: int
    total: int
    worst: int


def _compare(low: Any, seeds: range) -> tuple[int, int, int]:
    from executorch_espnn.reference import run_delegate

    differ = total = worst = 0
    s, _ = low.output_qparams()[0]
    for seed in seeds:
        xs = low.grid_inputs(seed)
        got = run_delegate(low.payloads[0], [x.numpy() for x in xs])[0]
        d = np.abs(np.round(got / s) - np.round(low.converted(*xs).numpy() / s))
        differ, total, worst = differ + int((d > 0).sum()), total + d.size, max(worst, int(d.max()))
    return differ, total, worst


OPS: list[tuple[str, Callable[..., torch.Tensor], list[tuple[int, ...]], bool]] = [
    # name, function, input shapes, whether it is an average (measured both ways)
    ("avg_pool2d 2x2", lambda x: F.avg_pool2d(x, 2), [(2, 32, 32, 32)], True),
    ("avg_pool2d 3x3 pad 1, count_include_pad=False", lambda x: F.avg_pool2d(x, 3, 1, 1, count_include_pad=False),
     [(2, 32, 16, 16)], True),
    ("avg_pool2d 3x3/3 (odd divisor)", lambda x: F.avg_pool2d(x, 3), [(2, 32, 24, 24)], True),
    ("adaptive_avg_pool2d 1x1 of 4x4", lambda x: F.adaptive_avg_pool2d(x, 1), [(64, 256, 4, 4)], True),
    ("mean over H, W of 7x7 (odd)", lambda x: x.mean((2, 3)), [(64, 256, 7, 7)], True),
    ("add", lambda a, b: a + b, [(2, 32, 32, 32), (2, 32, 32, 32)], False),
    ("mean over the last dim, own scale (MEAN_HW)", lambda x: x.mean(-1), [(64, 256, 16)], False),
    ("softmax over 10", lambda x: torch.softmax(x, -1), [(8192, 10)], False),
    ("softmax over 100", lambda x: torch.softmax(x, -1), [(2048, 100)], False),
]


def agreement(n_scales: int) -> list[Agreement]:
    from devkit.lowering_helpers import lower

    out: list[Agreement] = []
    for name, fn, shapes, is_average in OPS:
        for variant in (("espnn", "float") if is_average else ("engine",)):
            differ = total = worst = 0
            ops: set[str] = set()
            for seed in range(n_scales):
                g = torch.Generator().manual_seed(seed)
                k = 0.5 + float(torch.rand(1, generator=g))
                ex = tuple(torch.randn(s, generator=g) * (k if i else 1.0) for i, s in enumerate(shapes))
                with espnn_rounding(variant == "espnn"):
                    low = lower(Fn(fn), ex, calib=[ex])
                ops.update(o for o in low.opcodes() if o not in ("QUANTIZE", "DEQUANTIZE", "RESHAPE"))
                d, t, w = _compare(low, range(2))
                differ, total, worst = differ + d, total + t, max(worst, w)
            out.append(Agreement(name, variant, ", ".join(sorted(ops)), differ, total, worst))
    return out


@dataclass
class Trained:
    name: str
    variant: str
    within_1: float
    exact: float
    worst: int
    flipped: int
    n: int
    pte: bytes


def trained() -> list[Trained]:
    from devkit.digits import MODELS, load_digits_split, train
    from devkit.lowering_helpers import lower, quantize_module
    from executorch_espnn.reference import run_delegate

    data = load_digits_split()
    out: list[Trained] = []
    for name, make, steps, float_op, _slow in MODELS:
        m = train(make, data, steps)
        ex = (data.x_test,)
        converted = quantize_module(m, ex, calib=[(data.x_train[:360],)])
        with torch.no_grad():
            want = converted(data.x_test).numpy()
        for variant in (("espnn", "float") if float_op else ("engine",)):
            with espnn_rounding(variant == "espnn"):
                low = lower(m, ex, converted=converted, target="esp32s3")
            got = run_delegate(low.payloads[0], [data.x_test.numpy()])[0]
            (s, _), = low.output_qparams()
            lsb = np.abs(np.round(got / s) - np.round(want / s))
            out.append(Trained(name, variant, float((lsb <= 1).mean()), float((lsb == 0).mean()),
                               int(lsb.max()), int((got.argmax(1) != want.argmax(1)).sum()), len(got), low.pte))
    return out


@dataclass
class Cost:
    name: str
    espnn: int
    float_: int


def costs(models: list[tuple[str, bytes, bytes]], work: Path) -> list[Cost]:
    from benchmarks import callgrind as cg

    if cg.valgrind_version() is None:
        raise cg.CallgrindError("valgrind is not installed (apt-get install valgrind)")
    runner = cg.RunnerBuild(work / "runner-build")
    out = []
    for name, esp_pte, float_pte in models:
        figures = []
        for variant, pte in (("espnn", esp_pte), ("float", float_pte)):
            key = name.replace(" ", "_").replace("/", "_")
            model_dir = cg.render_model(pte, work / key / variant / "model")
            exe = runner.runner_for(model_dir, work / "runner-build.log")
            figures.append(cg.measure(exe, work / key / variant / "callgrind").instructions)
        out.append(Cost(name, figures[0], figures[1]))
    return out


def _layer_models() -> list[tuple[str, bytes, bytes]]:
    from devkit.lowering_helpers import lower

    out = []
    for name, fn, shape in (("avg_pool2d 2x2 of 32x32x32", lambda x: F.avg_pool2d(x, 2), (1, 32, 32, 32)),
                            ("global mean of 8x8x256", lambda x: F.adaptive_avg_pool2d(x, 1), (1, 256, 8, 8))):
        torch.manual_seed(0)
        ex = (torch.randn(shape),)
        with espnn_rounding(True):
            esp = lower(Fn(fn), ex).pte
        out.append((name, esp, lower(Fn(fn), ex).pte))
    return out


def _table(headers: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--skip", action="append", default=[], choices=["callgrind"])
    ap.add_argument("--scales", type=int, default=10, help="random calibrations per operator (10)")
    ap.add_argument("--work", type=Path, default=None, help="build folder (default: a temporary one)")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)

    print("## Agreement with PyTorch's convert_pt2e model, per operator\n")
    rows = [[a.name, a.variant, a.ops, f"{a.differ:,} / {a.total:,}",
             f"{1e6 * a.differ / a.total:,.1f}", str(a.worst)] for a in agreement(args.scales)]
    print(_table(["operator", "rounding", "payload ops", "elements differing", "per million", "worst LSB"],
                 rows) + "\n", flush=True)

    print("## Trained on scikit-learn's digits (360 held-out images)\n")
    runs = trained()
    print(_table(["model", "rounding", "logits within 1 LSB", "exact", "worst LSB", "predictions flipped"],
                 [[t.name, t.variant, f"{100 * t.within_1:.2f} %", f"{100 * t.exact:.2f} %", str(t.worst),
                   f"{t.flipped} / {t.n}"] for t in runs]) + "\n", flush=True)

    if "callgrind" in args.skip:
        return 0
    by = {(t.name, t.variant): t.pte for t in runs}
    models = [*_layer_models(),
              ("digits DS-CNN (batch 360)", by["ds_cnn_avgpool", "espnn"], by["ds_cnn_avgpool", "float"])]
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        print("## Host instructions per inference (callgrind)\n")
        rows = []
        for c in costs(models, work):
            rows.append([c.name, f"{c.espnn:,}", f"{c.float_:,}", f"{c.float_ - c.espnn:+,}",
                         f"{c.float_ / c.espnn:.2f}x"])
        print(_table(["program", "ESP-NN average pool", "float32 kernel", "difference", "ratio"], rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
