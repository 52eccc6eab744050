"""Write each example's trained weights: examples/*/model/<name>.weights.pt, the state_dict its
model file's train() returns, saved with torch.save (tensors only; model() loads it with
torch.load(..., weights_only=True)).

The examples ship these files as data instead of training at build time because float training
rounds differently on other CPUs (vector widths), even with one thread: a build elsewhere gave
other weights and printed other scores than the README's transcript.  Run this after changing
an example's net or its training, then re-run the demo and update the transcript (README.md):

    .venv/bin/python scripts/train_example_weights.py            # all examples
    .venv/bin/python scripts/train_example_weights.py --check    # retrain, compare, write nothing

Training runs with one thread and deterministic algorithms, so on one machine it writes the
same bytes every time; --check says how far this machine's training is from the shipped files.
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import sys
from pathlib import Path
from types import ModuleType

import torch

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_MODELS = tuple(sorted((ROOT / "examples").glob("*/model/*.py")))


def _load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"example_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def trained_state(path: Path) -> tuple[Path, dict[str, torch.Tensor]]:
    """(where the model file keeps its weights, the state_dict its train() gives)."""
    mod = _load(path)
    weights = getattr(mod, "WEIGHTS", None)
    if not isinstance(weights, Path) or not callable(getattr(mod, "train", None)):
        raise SystemExit(f"{path}: needs WEIGHTS (a Path) and train() to regenerate its weights")
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    net = mod.train()
    state = {k: v.detach().clone().contiguous() for k, v in net.state_dict().items()}
    return weights, state


def serialized(state: dict[str, torch.Tensor]) -> bytes:
    buf = io.BytesIO()
    torch.save(state, buf)
    return buf.getvalue()


def _max_difference(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    if a.keys() != b.keys():
        return float("inf")
    worst = 0.0
    for k, va in a.items():
        vb = b[k]
        if va.shape != vb.shape or va.dtype != vb.dtype:
            return float("inf")
        worst = max(worst, float((va.double() - vb.double()).abs().max()) if va.numel() else 0.0)
    return worst


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true",
                    help="retrain and compare with the shipped files; write nothing")
    ap.add_argument("models", nargs="*", type=Path,
                    help="model files (default: every examples/*/model/*.py)")
    args = ap.parse_args(argv)
    differ = 0
    for path in [p.resolve() for p in args.models] or list(EXAMPLE_MODELS):
        weights, state = trained_state(path)
        rel = weights.relative_to(ROOT) if weights.is_relative_to(ROOT) else weights
        if args.check:
            if not weights.is_file():
                print(f"{rel}: missing")
                differ += 1
                continue
            shipped = torch.load(weights, weights_only=True)
            worst = _max_difference(state, shipped)
            print(f"{rel}: retrained here, max |difference| {worst:.3g}")
            differ += worst != 0.0
            continue
        data = serialized(state)
        weights.write_bytes(data)
        print(f"{rel}: {len(data)} bytes, {sum(v.numel() for v in state.values())} values")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
