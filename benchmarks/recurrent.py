"""GRU and LSTM classifiers trained on scikit-learn's digits (each image's 8 rows as 8 steps):
accuracy (float, PT2E, the delegate's bit-exact result), logits against ``convert_pt2e``, and the
deployed (batch 1) program's partitions, CPU operators and memory, side by side.

    python benchmarks/recurrent.py [--markdown out.md]

The figures of docs/operators.md's "Recurrent layers" table.  Instruction counts against
ExecuTorch's CPU kernels come from ``benchmarks/run.py --models gru_rows,lstm_rows`` (the zoo's
models of the same shape).  Takes about 10 minutes (to_edge of the unrolled steps dominates).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))


@dataclass(frozen=True)
class Figures:
    name: str
    float_acc: float
    pt2e_acc: float
    espnn_acc: float
    within_1: float
    exact: float
    flipped: int
    partitions: int
    cpu_ops: int
    delegated_ops: int
    payload_ops: int
    planned: int
    arena: int
    state: int | None
    weights: int
    pte: int


def measure(name: str) -> Figures:
    import numpy as np
    import torch

    import executorch_espnn as ee
    from devkit.digits import MODELS, load_digits_split, train
    from devkit.lowering_helpers import lower, quantize_module
    from executorch_espnn.reference import run_delegate

    torch.set_num_threads(1)
    data = load_digits_split()
    (make, steps), = [(mk, st) for n, mk, st, _, _ in MODELS if n == name]
    m = train(make, data, steps)
    x, y = data.x_test, data.y_test.numpy()
    with torch.no_grad():
        float_acc = float((m(x).argmax(1).numpy() == y).mean())
    converted = quantize_module(m, (x,), calib=[(data.x_train[:360],)])
    with torch.no_grad():
        want = converted(x).numpy()
    low = lower(m, (x,), converted=converted, target="esp32s3")
    got = run_delegate(low.payloads[0], [x.numpy()])[0]
    (s, _), = low.output_qparams()
    lsb = np.abs(np.round(got / s) - np.round(want / s))
    deployed = ee.lower(m, (x[:1],), [(t[None],) for t in data.x_train[:128]], target="esp32s3")
    r = deployed.report
    return Figures(
        name, float_acc, float((want.argmax(1) == y).mean()), float((got.argmax(1) == y).mean()),
        float((lsb <= 1).mean()), float((lsb == 0).mean()), int((got.argmax(1) != want.argmax(1)).sum()),
        len(r.partitions), len(r.cpu_ops), len(r.delegated_ops),
        sum(len(p.ops) for p in r.partitions), r.planned_bytes, r.arena_bytes, r.state_bytes, r.weights_bytes,
        r.pte_bytes)


def table(rows: list[Figures]) -> str:
    head = ["model", "float acc", "PT2E acc", "ESP-NN acc", "logits within 1 LSB", "exact", "flipped",
            "partitions", "CPU ops", "payload ops", "planned", "arena", "engine state", "weights", ".pte"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for f in rows:
        cells = [f.name, f"{100 * f.float_acc:.2f} %", f"{100 * f.pt2e_acc:.2f} %", f"{100 * f.espnn_acc:.2f} %",
                 f"{100 * f.within_1:.2f} %", f"{100 * f.exact:.2f} %", f"{f.flipped} / 360", str(f.partitions),
                 str(f.cpu_ops), str(f.payload_ops), f"{f.planned:,} B", f"{f.arena:,} B",
                 "-" if f.state is None else f"{f.state:,} B", f"{f.weights:,} B", f"{f.pte:,} B"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="gru_rows,lstm_rows")
    ap.add_argument("--markdown", type=Path)
    args = ap.parse_args(argv)
    rows = [measure(n) for n in args.models.split(",")]
    text = table(rows)
    print(text)
    if args.markdown:
        args.markdown.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
