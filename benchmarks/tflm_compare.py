"""Our whole RAM against TensorFlow Lite Micro's smallest arena, on the same architectures.

For each architecture (the zoo's DS-CNN, the zoo's MobileNetV2-0.35 at 96x96, three 3x3
convolutions with 256 channels on a 12x12 map) this builds the TFLite twin: a Keras model of
the same layers (random weights: the figures are about memory, not accuracy), converted with
TensorFlow's converter at int8 input and output with a representative dataset of random
inputs.  It then finds the smallest arena with which tflite-micro's Python interpreter
(reference kernels) still allocates the tensors and invokes the model, by bisection (each
trial in a fresh process: a too-small arena can abort the interpreter), and prints it beside
our whole RAM for esp32 and esp32s3 (what ``EspnnModel::begin()`` allocates, measured as
benchmarks/ram_bill.py does) and the ratio; the target is 0.75 or less on every row.

TensorFlow and tflite-micro do not install beside the project's torch, so they live in a venv
of their own; this script runs in the project's venv and calls that one for the TFLM side:

    python3.11 -m venv /work/venv-tflm
    /work/venv-tflm/bin/pip install "tensorflow-cpu==2.21.*" tflite-micro numpy
    .venv/bin/python benchmarks/tflm_compare.py                  # --tflm-python /work/venv-tflm/bin/python
    .venv/bin/python benchmarks/tflm_compare.py --io int8        # our side lowered with io="int8"

Without that venv (or without TensorFlow or tflite-micro in it) the script says so and exits 0.
``--io`` is passed to ``lower`` as ``io=`` (without it: the lowering's default, float I/O today).
``--json`` writes both sides' figures.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TFLM_PYTHON = os.environ.get("EXECUTORCH_ESPNN_TFLM_PYTHON", "/work/venv-tflm/bin/python")
TARGETS = ("esp32", "esp32s3")
RATIO_TARGET = 0.75


@dataclass(frozen=True)
class Twin:
    key: str  # also the ram_bill.py model key of our side
    title: str
    shape: tuple[int, ...]  # NHWC input of the Keras twin (ours takes the NCHW transpose)


TWINS = (
    Twin("ds_cnn_kws", "DS-CNN KWS 49x10", (1, 49, 10, 1)),
    Twin("mobilenet_v2_0.35_96", "MobileNetV2-0.35 96x96", (1, 96, 96, 3)),
    Twin("stack3x3_256_12", "3x3 conv stack 256ch 12x12", (1, 12, 12, 256)),
)


# --- the TFLM side (runs in the TFLM venv) ------------------------------------------------------


def keras_twin(key: str) -> Any:
    """The Keras model of the architecture ``key`` (the same layers as ours, NHWC)."""
    import tensorflow as tf

    layers = tf.keras.layers
    shape = next(t.shape for t in TWINS if t.key == key)
    inp = tf.keras.Input(shape[1:], batch_size=1)
    if key == "ds_cnn_kws":  # devkit/zoo.py DSCNN: 10x4/2 stem with PyTorch's padding (5, 1)
        x = layers.ZeroPadding2D(((5, 5), (1, 1)))(inp)
        x = layers.ReLU()(layers.BatchNormalization()(layers.Conv2D(64, (10, 4), 2, use_bias=False)(x)))
        for _ in range(4):
            x = layers.ReLU()(layers.BatchNormalization()(
                layers.DepthwiseConv2D(3, padding="same", use_bias=False)(x)))
            x = layers.ReLU()(layers.BatchNormalization()(layers.Conv2D(64, 1, use_bias=False)(x)))
        x = layers.GlobalAveragePooling2D()(layers.Dropout(0.4)(x))
        return tf.keras.Model(inp, layers.Dense(12)(x))
    if key == "mobilenet_v2_0.35_96":  # Keras' own MobileNetV2 (the same layer plan as the zoo's)
        return tf.keras.applications.MobileNetV2(input_tensor=inp, alpha=0.35, weights=None, classes=1000,
                                                 classifier_activation=None)
    if key == "stack3x3_256_12":  # benchmarks/ram_bill.py stack3x3
        x = inp
        for _ in range(3):
            x = layers.Conv2D(256, 3, padding="same", activation="relu")(x)
        return tf.keras.Model(inp, x)
    raise KeyError(key)


def tflite_int8(key: str) -> bytes:
    """The twin converted with TensorFlow's converter, int8 everywhere including its I/O."""
    import numpy as np
    import tensorflow as tf

    tf.keras.utils.set_random_seed(0)
    model = keras_twin(key)
    shape = next(t.shape for t in TWINS if t.key == key)
    rng = np.random.default_rng(0)

    def representative() -> Any:
        for _ in range(8):
            yield [rng.standard_normal(shape).astype(np.float32)]

    conv = tf.lite.TFLiteConverter.from_keras_model(model)
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    conv.representative_dataset = representative
    conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    conv.inference_input_type = tf.int8
    conv.inference_output_type = tf.int8
    return bytes(conv.convert())


def probe(model_path: str, arena: int) -> bool:
    """Whether tflite-micro allocates and invokes the model with ``arena`` bytes (in a child
    process: too small an arena can abort the interpreter rather than raise)."""
    run = subprocess.run([sys.executable, __file__, "--probe", model_path, str(arena)], capture_output=True,
                         text=True, check=False, timeout=600)
    return run.returncode == 0 and run.stdout.strip().endswith("invoked")


def _probe_main(model_path: str, arena: int) -> int:
    import numpy as np
    from tflite_micro.python.tflite_micro import runtime

    interp = runtime.Interpreter.from_bytes(Path(model_path).read_bytes(), arena_size=arena)
    d = interp.get_input_details(0)
    interp.set_input(np.zeros(d["shape"], dtype=d["dtype"]), 0)
    interp.invoke()
    print("invoked")
    return 0


def smallest_arena(model_path: str) -> int:
    """The smallest arena size (bytes) that allocates and invokes, by doubling then bisection."""
    lo, hi = 0, 4096
    while not probe(model_path, hi):
        lo, hi = hi, hi * 2
        if hi > 1 << 28:
            raise RuntimeError(f"{model_path}: no arena up to 256 MiB allocates")
    while hi - lo > 1:  # invariant: lo fails, hi works
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if probe(model_path, mid) else (mid, hi)
    return hi


def tflm_side(keys: list[str]) -> dict[str, Any]:
    import tensorflow as tf
    import tflite_micro

    out: dict[str, Any] = {"tensorflow": tf.__version__,
                           "tflite_micro": getattr(tflite_micro, "__version__", "unknown"), "models": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for key in keys:
            data = tflite_int8(key)
            path = str(Path(tmp) / f"{key}.tflite")
            Path(path).write_bytes(data)
            out["models"][key] = {"tflite_bytes": len(data), "arena_bytes": smallest_arena(path)}
            print(f"  TFLM {key}: arena {out['models'][key]['arena_bytes']:,} B", file=sys.stderr, flush=True)
    return out


# --- our side (runs in the project's venv) and the table ----------------------------------------


def tflm_available(python: str) -> str:
    """"" when ``python`` has TensorFlow and tflite-micro, else why not."""
    if not Path(python).is_file():
        return f"{python} does not exist"
    run = subprocess.run([python, "-c", "import tensorflow, tflite_micro.python.tflite_micro.runtime"],
                         capture_output=True, text=True, check=False)
    if run.returncode:
        return f"{python} cannot import TensorFlow and tflite-micro ({(run.stderr.strip().splitlines() or [''])[-1]})"
    return ""


def our_side(keys: list[str], io: str | None) -> dict[str, dict[str, int]]:
    from benchmarks import ram_bill

    models = {m.key: m for m in ram_bill._models()}
    out: dict[str, dict[str, int]] = {}
    for key in keys:
        out[key] = {}
        for target in TARGETS:
            model, ex, calib = models[key].make()
            out[key][target] = int(ram_bill.bill(model, ex, calib, target, io)["total_bytes"])
            print(f"  ours {key} {target}: {out[key][target]:,} B", file=sys.stderr, flush=True)
    return out


def table(tflm: dict[str, Any], ours: dict[str, dict[str, int]]) -> str:
    lines = ["| architecture | TFLM arena | ours esp32 | ratio | ours esp32s3 | ratio | ≤ 0.75x |",
             "|---|---|---|---|---|---|---|"]
    for t in TWINS:
        if t.key not in ours:
            continue
        arena = tflm["models"][t.key]["arena_bytes"]
        r32, rs3 = ours[t.key]["esp32"] / arena, ours[t.key]["esp32s3"] / arena
        met = "yes" if max(r32, rs3) <= RATIO_TARGET else "no"
        lines.append(f"| {t.title} | {arena:,} | {ours[t.key]['esp32']:,} | {r32:.2f}x | "
                     f"{ours[t.key]['esp32s3']:,} | {rs3:.2f}x | {met} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="", help="comma-separated keys: " + ", ".join(t.key for t in TWINS))
    ap.add_argument("--io", choices=("float", "int8"), default=None, help="our lowering's io= (default: its own)")
    ap.add_argument("--tflm-python", default=DEFAULT_TFLM_PYTHON, help="the Python of the TFLM venv")
    ap.add_argument("--json", type=Path, default=None, help="write both sides' figures here")
    ap.add_argument("--tflm-side", type=Path, default=None, help=argparse.SUPPRESS)  # worker: write TFLM JSON
    ap.add_argument("--probe", nargs=2, default=None, help=argparse.SUPPRESS)  # worker: one arena trial
    args = ap.parse_args(argv)
    if args.probe:
        return _probe_main(args.probe[0], int(args.probe[1]))
    keys = [k for k in args.models.split(",") if k] or [t.key for t in TWINS]
    unknown = sorted(set(keys) - {t.key for t in TWINS})
    if unknown:
        print(f"error: unknown model(s) {unknown}; known: {[t.key for t in TWINS]}", file=sys.stderr)
        return 2
    if args.tflm_side:
        args.tflm_side.write_text(json.dumps(tflm_side(keys)))
        return 0
    why = tflm_available(args.tflm_python)
    if why:
        print(f"benchmarks/tflm_compare.py: skipped: {why}; TensorFlow and tflite-micro go in their own venv, "
              "see the top of benchmarks/tflm_compare.py for the commands")
        return 0
    if str(ROOT) not in sys.path:
        sys.path.append(str(ROOT))  # last: the checkout's platform.py must not shadow `platform`
    with tempfile.TemporaryDirectory() as tmp:
        side = Path(tmp) / "tflm.json"
        run = subprocess.run([args.tflm_python, __file__, "--tflm-side", str(side), "--models", ",".join(keys)],
                             check=False, stdout=subprocess.DEVNULL)
        if run.returncode or not side.is_file():
            print(f"error: the TFLM side failed (exit {run.returncode}); its messages are above", file=sys.stderr)
            return 1
        tflm = json.loads(side.read_text())
    import torch

    torch.set_num_threads(1)
    ours = our_side(keys, args.io)
    print(f"TFLM: tensorflow {tflm['tensorflow']}, tflite-micro {tflm['tflite_micro']} (reference kernels), "
          f"int8 I/O; ours: io={args.io or 'default'}")
    print(table(tflm, ours))
    if args.json:
        args.json.write_text(json.dumps({"io": args.io, "tflm": tflm, "ours": ours}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
