"""The whole RAM bill of each model against its lower bound, for esp32 and esp32s3.

Per model and target: the whole RAM ``EspnnModel::begin()`` allocates (arena + ExecuTorch
planned + delegate state + method allocator + temp allocator, the generated header's figures,
measured by loading the program with ``executorch_espnn.host.measure``), the lower bound
computed from the payloads without the arena planner (the peak of live int8 activations
including the running kernel's scratch, executorch_espnn/payload_peak.py, plus the program I/O,
executorch_espnn/report/ram.py), their ratio, the arena over its own part of the bound, and
which op and tensors set the peak.
docs/memory.md explains the figures; docs/benchmarks.md has the table.

    .venv/bin/python benchmarks/ram_bill.py                      # zoo + the 3x3 stack
    .venv/bin/python benchmarks/ram_bill.py --models ds_cnn_kws,stack3x3_256_12 --targets esp32
    .venv/bin/python benchmarks/ram_bill.py --io int8 --targets esp32,esp32s3,esp32s3:ram   # + RAM-first kernels
    .venv/bin/python benchmarks/ram_bill.py --io int8 --no-io-arena   # I/O in ExecuTorch's planned memory
    EXECUTORCH_ESPNN_SKIP_VERSION_CHECK=1 /work/venv-arch/bin/python benchmarks/ram_bill.py \\
        --checkout /path/to/checkout                             # + torchvision's ResNet-18 and LR-ASPP

torchvision's models come from benchmarks/architectures.py (its side venv; without torchvision
they are skipped with a message).  ``--io int8`` passes ``io="int8"`` to ``lower`` (int8
program I/O, once that option exists); without it the lowering's default is used.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TARGETS = ("esp32", "esp32s3")


@dataclass(frozen=True)
class RamModel:
    key: str
    title: str
    make: Callable[[], Any]  # () -> (nn.Module, example inputs, calibration batches)
    source: str = "zoo"  # "zoo", "here", or an architectures.py source ("torchvision")


def _zoo(key: str) -> Callable[[], Any]:
    def make() -> Any:
        from devkit.zoo import ZOO

        z = ZOO[key]
        return z.model(), z.example_inputs(), z.calibration_data(4)
    return make


def stack3x3(channels: int = 256, size: int = 12, depth: int = 3) -> Any:
    """Three 3x3 convolutions with ``channels`` channels on a ``size`` x ``size`` map (padding 1,
    ReLU): the layer shape whose reserved ESP32-S3 scratch is 18x its activations."""
    from torch import nn

    layers: list[nn.Module] = []
    for _ in range(depth):
        layers += [nn.Conv2d(channels, channels, 3, padding=1), nn.ReLU()]
    return nn.Sequential(*layers)


def _random_batches(shape: tuple[int, ...], n: int) -> list[tuple[Any, ...]]:
    import torch

    g = torch.Generator().manual_seed(0)
    return [(torch.randn(shape, generator=g),) for _ in range(n)]


def _stack() -> Any:
    import torch

    torch.manual_seed(0)
    batches = _random_batches((1, 256, 12, 12), 5)
    return stack3x3().eval(), batches[0], batches[1:]


def _arch(key: str) -> Callable[[], Any]:
    def make() -> Any:
        import torch

        from benchmarks.architectures import ARCHS

        arch = next(a for a in ARCHS if a.key == key)
        torch.manual_seed(0)
        batches = _random_batches(arch.shape, 5)
        return arch.make().eval(), batches[0], batches[1:]
    return make


def _models() -> list[RamModel]:
    from benchmarks.models import MODELS

    zoo = [RamModel(m.key, m.title, _zoo(m.key)) for m in MODELS]
    return [
        *zoo,
        # two delegates around a CPU operator: one arena for both (docs/memory.md)
        RamModel("island_net", "Island net (2 partitions)", _zoo("island_net"), "here"),
        RamModel("stack3x3_256_12", "3x3 conv stack 256ch 12x12", _stack, "here"),
        RamModel("resnet18", "ResNet-18 96x96 (torchvision)", _arch("resnet18"), "torchvision"),
        RamModel("lraspp", "LR-ASPP MobileNetV3-Large 128x128 (torchvision)", _arch("lraspp"), "torchvision"),
    ]


@dataclass
class Row:
    key: str
    title: str
    target: str
    whole_bytes: int = 0
    bound_bytes: int = 0
    ratio: float = 0.0
    arena_bytes: int = 0
    arena_ratio: float | None = None
    planned_bytes: int = 0
    state_bytes: int = 0
    method_allocator_bytes: int = 0
    temp_allocator_bytes: int = 0
    io_view_bytes: int = 0
    activation_bytes: int = 0
    scratch_bytes: int = 0
    io_bytes: int = 0
    setter: str = ""
    seconds: float = 0.0
    error: str = ""


def bill(model: Any, example: tuple[Any, ...], calibration: list[tuple[Any, ...]], target: str,
         io: str | None = None, optimize: str = "speed", io_arena: bool = True) -> dict[str, Any]:
    """Lower for ``target`` and return the measured RAM bill (report.json's ``ram`` completed
    with ``host.measure``'s pools)."""
    import executorch_espnn as ee
    from executorch_espnn import host
    from executorch_espnn.report.ram import with_measured

    kwargs: dict[str, Any] = {} if io is None else {"io": io}
    lm = ee.lower(model, example, calibration=calibration, target=target, optimize=optimize, io_arena=io_arena,
                  **kwargs)
    ram = lm.report.to_dict()["ram"]
    return with_measured(ram, host.measure(lm.pte).header_sizes())


def measure(m: RamModel, target: str, io: str | None, io_arena: bool = True) -> Row:
    """``target`` is a chip, or ``chip:ram`` for ``lower(..., optimize="ram")``."""
    row = Row(m.key, m.title, target)
    t0 = time.perf_counter()
    chip, _, optimize = target.partition(":")
    try:
        model, ex, calib = m.make()
        b = bill(model, ex, calib, chip, io, optimize or "speed", io_arena)
        bd = b["bound"]
        row.whole_bytes, row.bound_bytes, row.ratio = b["total_bytes"], bd["bytes"], b["ratio"]
        row.arena_bytes, row.arena_ratio = b["arena_bytes"], b["arena_ratio"]
        row.planned_bytes, row.state_bytes = b["planned_bytes"], b["state_bytes"]
        row.method_allocator_bytes, row.temp_allocator_bytes = b["method_allocator_bytes"], b["temp_allocator_bytes"]
        row.io_view_bytes = b["io_view_bytes"]
        row.activation_bytes, row.scratch_bytes, row.io_bytes = bd["activation_bytes"], bd["scratch_bytes"], bd["io_bytes"]
        row.setter = bd["setter"]
    except Exception as exc:  # one model failing must not stop the others
        row.error = f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:200]}"
    row.seconds = time.perf_counter() - t0
    return row


def _x(v: float | None) -> str:
    return "—" if v is None else f"{v:.2f}x"


def table(rows: list[Row]) -> str:
    lines = ["| model | target | whole RAM | bound | whole / bound | arena | arena / (act + scratch) | "
             "planned | state + method + temp | peak set by |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r.error:
            lines.append(f"| {r.title} | {r.target} | failed: {r.error} | | | | | | | |")
            continue
        other = r.state_bytes + r.method_allocator_bytes + r.temp_allocator_bytes
        lines.append(f"| {r.title} | {r.target} | {r.whole_bytes:,} | {r.bound_bytes:,} | {_x(r.ratio)} | "
                     f"{r.arena_bytes:,} | {_x(r.arena_ratio)} | {r.planned_bytes:,} | {other:,} | {r.setter} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="", help="comma-separated keys (default: all available)")
    ap.add_argument("--targets", default=",".join(TARGETS),
                    help="comma-separated chips; chip:ram lowers with optimize=\"ram\" (e.g. esp32s3:ram)")
    ap.add_argument("--io", choices=("float", "int8"), default=None, help="the lowering's io= (default: its own)")
    ap.add_argument("--no-io-arena", dest="io_arena", action="store_false",
                    help="lower with io_arena=False: the program's I/O in ExecuTorch's planned memory (the "
                         "layout before the I/O moved into the arena)")
    ap.add_argument("--checkout", type=Path, default=None, help="use the executorch_espnn of this checkout")
    ap.add_argument("--json", type=Path, default=None, help="write the rows here")
    args = ap.parse_args(argv)
    checkout = (args.checkout or ROOT).resolve()
    sys.path.append(str(checkout))  # last: its platform.py must not shadow the standard library's
    if str(ROOT) not in sys.path:
        sys.path.append(str(ROOT))
    models = _models()
    wanted = [k for k in args.models.split(",") if k]
    unknown = sorted(set(wanted) - {m.key for m in models})
    if unknown:
        print(f"error: unknown model(s) {unknown}; known: {[m.key for m in models]}", file=sys.stderr)
        return 2
    chosen = [m for m in models if not wanted or m.key in wanted]
    from benchmarks.architectures import VENV_HINT, _unavailable

    for src in sorted({m.source for m in chosen} - {"zoo", "here"}):
        why = _unavailable(src)
        if why:
            print(f"benchmarks/ram_bill.py: skipping the {src} models: {why}; {VENV_HINT}")
            chosen = [m for m in chosen if m.source != src]
    import torch

    torch.set_num_threads(1)
    rows = []
    for m in chosen:
        for target in [t for t in args.targets.split(",") if t]:
            print(f"  {m.title} for {target} ...", end="", flush=True)
            r = measure(m, target, args.io, args.io_arena)
            print(f" {r.error or f'{r.whole_bytes:,} B, bound {r.bound_bytes:,} B'} ({r.seconds:.0f} s)", flush=True)
            rows.append(r)
    print()
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps({"io": args.io, "rows": [asdict(r) for r in rows]}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
