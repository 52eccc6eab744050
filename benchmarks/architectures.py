"""Real architectures, lowered for the ESP32-S3: operators delegated / on the CPU, partitions.

The model definitions are no one's here: torchvision's and timm's architectures (random
weights: the figures are about which operators run where, not accuracy) and the MTCNN P/R/O
networks with the trained weights that ship inside the facenet-pytorch wheel.  Each is
lowered with ``executorch_espnn.lower`` (target esp32s3, calibrated on a few random batches)
and the report gives the operators on ESP-NN and on the CPU, the partitions, the delegate
arena and ExecuTorch's planned buffers, and the most frequent CPU reasons.

torchvision cannot be installed beside the project's torch 2.13.0 (its wheel fails to import:
"operator torchvision::nms does not exist"), and timm and facenet-pytorch need it, so this
runs in a side virtual environment outside the checkout, with torch 2.14.1 (which the
executorch 1.5.1 wheel accepts):

    python3.11 -m venv /work/venv-arch
    /work/venv-arch/bin/pip install torch==2.14.1 torchvision==0.29.1   # 5.5 GB (a CUDA build; the CPU is used)
    /work/venv-arch/bin/pip install executorch==1.5.1 --no-deps
    /work/venv-arch/bin/pip install torchao==0.18.0 numpy jinja2 kconfiglib pyyaml cmake \\
        flatbuffers ruamel.yaml sympy tabulate packaging typing-extensions timm
    /work/venv-arch/bin/pip install facenet-pytorch==2.6.0 --no-deps   # its pins predate torch 2.14

    /work/venv-arch/bin/python benchmarks/architectures.py --json after.json
    /work/venv-arch/bin/python benchmarks/architectures.py --checkout /path/to/main --json before.json
    /work/venv-arch/bin/python benchmarks/architectures.py --compare before.json after.json

``--checkout`` lowers with the executorch_espnn of another checkout (e.g. main, for the
"before" figures); ``--models`` picks some (comma-separated keys); ``--compare`` prints the
before/after Markdown table of two ``--json`` files without lowering anything.  Without
a source's package (the project's own venv has none of them) its models are skipped with a
message saying how to create the side venv; with none available the script exits 0.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
VENV_HINT = ("needs torchvision, timm and facenet-pytorch in a side venv (torchvision does not import "
             "beside torch 2.13.0); see the top of benchmarks/architectures.py for the commands")


@dataclass(frozen=True)
class Arch:
    key: str
    title: str
    source: str  # "torchvision", "timm", "facenet-pytorch"
    make: Callable[[], Any]
    shape: tuple[int, ...]  # the example input
    default: bool = True  # in the default (all) run; the others only by --models


def _tv(name: str, **kw: Any) -> Callable[[], Any]:
    def make() -> Any:
        import torchvision

        return getattr(torchvision.models, name)(weights=None, **kw)
    return make


def _lraspp() -> Any:
    import torchvision

    return torchvision.models.segmentation.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None)


def _zoo(name: str) -> Callable[[], Any]:
    def make() -> Any:
        from devkit.zoo import ZOO  # the checkout's zoo

        return ZOO[name].model()
    return make


def _conv_stack() -> Any:
    """Three 3x3 convolutions, 256 channels on a 12x12 map (issue 16's scratch case)."""
    import torch

    layers: list[Any] = []
    for _ in range(3):
        layers += [torch.nn.Conv2d(256, 256, 3, padding=1), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers)


def _timm(name: str, **kw: Any) -> Callable[[], Any]:
    def make() -> Any:
        import timm

        return timm.create_model(name, pretrained=False, **kw)
    return make


def _mtcnn(name: str) -> Callable[[], Any]:
    def make() -> Any:
        from facenet_pytorch.models import mtcnn

        return getattr(mtcnn, name)(pretrained=True)  # the trained weights inside the wheel
    return make


ARCHS = [
    Arch("mobilenet_v2", "MobileNetV2", "torchvision", _tv("mobilenet_v2"), (1, 3, 96, 96)),
    Arch("mobilenet_v3_small", "MobileNetV3-Small", "torchvision", _tv("mobilenet_v3_small"), (1, 3, 96, 96)),
    Arch("mobilenet_v3_large", "MobileNetV3-Large", "torchvision", _tv("mobilenet_v3_large"), (1, 3, 96, 96)),
    Arch("efficientnet_b0", "EfficientNet-B0", "torchvision", _tv("efficientnet_b0"), (1, 3, 96, 96)),
    Arch("mnasnet", "MNASNet 1.0", "torchvision", _tv("mnasnet1_0"), (1, 3, 96, 96)),
    Arch("shufflenet_v2_x0_5", "ShuffleNetV2 x0.5", "torchvision", _tv("shufflenet_v2_x0_5"), (1, 3, 96, 96)),
    Arch("resnet18", "ResNet-18", "torchvision", _tv("resnet18"), (1, 3, 96, 96)),
    Arch("squeezenet", "SqueezeNet 1.1", "torchvision", _tv("squeezenet1_1"), (1, 3, 96, 96)),
    Arch("regnet_x_400mf", "RegNetX-400MF", "torchvision", _tv("regnet_x_400mf"), (1, 3, 96, 96)),
    Arch("lraspp", "LR-ASPP MobileNetV3-Large", "torchvision", _lraspp, (1, 3, 128, 128)),
    Arch("mobilevit_xxs", "MobileViT-XXS", "timm", _timm("mobilevit_xxs"), (1, 3, 128, 128)),
    Arch("efficientvit_b0", "EfficientViT-B0", "timm", _timm("efficientvit_b0"), (1, 3, 128, 128)),
    Arch("efficientvit_m0", "EfficientViT-M0", "timm", _timm("efficientvit_m0", img_size=128), (1, 3, 128, 128)),
    Arch("ghostnet", "GhostNet 1.0", "timm", _timm("ghostnet_100"), (1, 3, 96, 96)),
    Arch("mobilenetv4_small", "MobileNetV4-Conv-Small", "timm", _timm("mobilenetv4_conv_small"), (1, 3, 96, 96)),
    Arch("lcnet", "LCNet 0.5", "timm", _timm("lcnet_050"), (1, 3, 96, 96)),
    Arch("tinynet", "TinyNet-E", "timm", _timm("tinynet_e"), (1, 3, 106, 106)),
    Arch("mtcnn_pnet", "MTCNN P-Net (trained)", "facenet-pytorch", _mtcnn("PNet"), (1, 3, 48, 48)),
    Arch("mtcnn_rnet", "MTCNN R-Net (trained)", "facenet-pytorch", _mtcnn("RNet"), (1, 3, 24, 24)),
    Arch("mtcnn_onet", "MTCNN O-Net (trained)", "facenet-pytorch", _mtcnn("ONet"), (1, 3, 48, 48)),
    # the project's own models (project venv suffices), only when named in --models
    Arch("conv_stack_256_12", "3x conv3x3 256ch @12x12", "torch", _conv_stack, (1, 256, 12, 12), False),
    *(Arch(f"zoo:{n}", f"zoo {n}", "zoo", _zoo(n), shape, False) for n, shape in (
        ("mobilenet_v2_0.35_96", (1, 3, 96, 96)), ("mobilenet_v1_0.25_96_gray", (1, 1, 96, 96)),
        ("ds_cnn_kws", (1, 1, 49, 10)), ("resnet8", (1, 3, 32, 32)), ("dense_autoencoder", (1, 640)),
        ("tiny_vit", (1, 3, 32, 32)), ("cumsum_net", (1, 20, 16)), ("island_net", (1, 3, 32, 32)))),
]


# the module each source's models need
SOURCE_MODULES = {"torchvision": "torchvision", "timm": "timm", "facenet-pytorch": "facenet_pytorch.models.mtcnn",
                  "torch": "torch", "zoo": "devkit.zoo"}


def _unavailable(source: str) -> str:
    """Why the models of ``source`` cannot be built in this venv ("" when they can)."""
    import importlib

    try:
        importlib.import_module(SOURCE_MODULES[source])
    except Exception as exc:  # torchvision beside torch 2.13.0 raises RuntimeError, not ImportError
        return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    return ""


@dataclass
class Result:
    key: str
    title: str
    source: str
    input: str
    delegated: int = 0
    cpu: int = 0
    partitions: int = 0
    arena_bytes: int = 0
    arena_lower_bound: int = 0  # the partitions' peak live activations + running scratch
    scratch_bytes: int = 0  # the largest scratch of one op
    planned_bytes: int = 0
    seconds: float = 0.0
    cpu_reasons: list[str] = field(default_factory=list)  # the most frequent, "N x reason"
    starts: list[str] = field(default_factory=list)  # per partition, why it starts there
    error: str = ""


def _short(reason: str, n: int = 90) -> str:
    return reason if len(reason) <= n else reason[: n - 1] + "…"


def lower_one(arch: Arch, calib_batches: int, target: str = "esp32s3") -> Result:
    import torch

    import executorch_espnn as ee

    res = Result(arch.key, arch.title, arch.source, "x".join(map(str, arch.shape[1:])))
    t0 = time.perf_counter()
    try:
        torch.manual_seed(0)
        m = arch.make().eval()
        g = torch.Generator().manual_seed(0)
        calib = [(torch.randn(arch.shape, generator=g),) for _ in range(calib_batches)]
        lm = ee.lower(m, calib[0], calibration=calib, target=target)
        rep = lm.report
        res.arena_lower_bound = max(p.arena_lower_bound for p in rep.partitions)  # one arena for all
        res.scratch_bytes = max((p.scratch_bytes for p in rep.partitions), default=0)
        res.delegated, res.cpu, res.partitions = len(rep.delegated_ops), len(rep.cpu_ops), len(rep.partitions)
        res.arena_bytes, res.planned_bytes = rep.arena_bytes, rep.planned_bytes
        counts = collections.Counter(f"{e.operator}: {_short(e.reason)}" for e in rep.cpu_ops
                                     if not e.operator.startswith("quantized_decomposed"))
        res.cpu_reasons = [f"{n} x {r}" for r, n in counts.most_common(3)]
        res.starts = [getattr(p, "starts", "") for p in rep.partitions]
    except Exception as exc:  # one model failing must not stop the others
        res.error = f"{type(exc).__name__}: {_short(str(exc).splitlines()[0] if str(exc) else '', 200)}"
        traceback.print_exc(file=sys.stderr)
    res.seconds = time.perf_counter() - t0
    return res


def _kib(n: int) -> str:
    return f"{n / 1024:,.1f}"


def table(results: list[Result]) -> str:
    lines = ["| model | source | input | delegated | CPU | partitions | arena KiB | planned KiB | main CPU reasons |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        if r.error:
            lines.append(f"| {r.title} | {r.source} | {r.input} | failed: {r.error} | | | | | |")
            continue
        reasons = "<br>".join(r.cpu_reasons) or "—"
        lines.append(f"| {r.title} | {r.source} | {r.input} | {r.delegated} | {r.cpu} | {r.partitions} | "
                     f"{_kib(r.arena_bytes)} | {_kib(r.planned_bytes)} | {reasons} |")
    return "\n".join(lines)


def compare(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> str:
    old = {r["key"]: r for r in before}
    lines = ["| model | delegated before → after | CPU before → after | partitions before → after | "
             "arena KiB before → after | planned KiB before → after |",
             "|---|---|---|---|---|---|"]

    def cell(b: dict[str, Any] | None, a: dict[str, Any], k: str, kib: bool = False) -> str:
        def fmt(r: dict[str, Any] | None) -> str:
            if r is None:
                return "—"
            if r["error"]:
                return "failed"
            return _kib(r[k]) if kib else str(r[k])
        return f"{fmt(b)} → {fmt(a)}"

    for a in after:
        b = old.get(a["key"])
        lines.append(f"| {a['title']} | {cell(b, a, 'delegated')} | {cell(b, a, 'cpu')} | "
                     f"{cell(b, a, 'partitions')} | {cell(b, a, 'arena_bytes', True)} | "
                     f"{cell(b, a, 'planned_bytes', True)} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="", help="comma-separated keys (default: all): "
                    + ", ".join(a.key for a in ARCHS))
    ap.add_argument("--checkout", type=Path, default=None,
                    help="lower with the executorch_espnn of this checkout (e.g. main, for 'before')")
    ap.add_argument("--calibration", type=int, default=4, help="random calibration batches (4)")
    ap.add_argument("--target", default="esp32s3", help="the chip to lower for (esp32s3)")
    ap.add_argument("--json", type=Path, default=None, help="write the figures here")
    ap.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"),
                    help="print the before/after table of two --json files and exit")
    args = ap.parse_args(argv)

    if args.compare:
        before, after = (json.loads(p.read_text())["models"] for p in args.compare)
        print(compare(before, after))
        return 0

    checkout = (args.checkout or ROOT).resolve()
    # the checkout last on sys.path: its top-level platform.py must not shadow `platform`
    sys.path.append(str(checkout))
    wanted = [k for k in args.models.split(",") if k]
    unknown = sorted(set(wanted) - {a.key for a in ARCHS})
    if unknown:
        print(f"error: unknown model(s) {unknown}; known: {[a.key for a in ARCHS]}", file=sys.stderr)
        return 2
    chosen = [a for a in ARCHS if (a.default and not wanted) or a.key in wanted]
    missing = {src: why for src in sorted({a.source for a in chosen}) if (why := _unavailable(src))}
    for src, why in missing.items():
        print(f"benchmarks/architectures.py: skipping the {src} models: {why}; {VENV_HINT}")
    chosen = [a for a in chosen if a.source not in missing]
    if not chosen:
        return 0
    import torch

    import executorch_espnn

    torch.set_num_threads(1)
    where = Path(executorch_espnn.__file__).resolve().parent.parent
    if where != checkout:
        print(f"error: executorch_espnn imports from {where}, not {checkout} (is it installed in this venv?)",
              file=sys.stderr)
        return 2
    import subprocess

    rev = subprocess.run(["git", "-C", str(checkout), "log", "-1", "--format=%h %s"], capture_output=True,
                         text=True, check=False).stdout.strip()[:100]
    print(f"executorch_espnn from {checkout} ({rev or 'not a git checkout'}), torch {torch.__version__}, "
          f"target {args.target}", flush=True)
    results = []
    for arch in chosen:
        print(f"  {arch.title} ...", end="", flush=True)
        r = lower_one(arch, args.calibration, args.target)
        print(f" {r.error or f'{r.delegated} delegated, {r.cpu} on the CPU, {r.partitions} partitions'}"
              f" ({r.seconds:.0f} s)", flush=True)
        results.append(r)
    print()
    print(table(results))
    if args.json:
        args.json.write_text(json.dumps({"checkout": str(checkout), "revision": rev, "torch": torch.__version__,
                                         "models": [asdict(r) for r in results]}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
