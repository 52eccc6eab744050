"""Float vs int8 program I/O: ExecuTorch's planned bytes and the RAM EspnnModel allocates.

Each zoo model is lowered twice with the same calibration (``io="float"``, ``io="int8"``,
target esp32s3) and loaded once on this computer in EspnnModel's memory mode
(``executorch_espnn.host.measure``: the pool sizes model_pte.h carries).  "whole RAM" is the sum
of those pools (arena + delegate state + planned + method allocator + temp); the state and the
method allocator are measured with this computer's 64-bit pointers, an upper bound for a 32-bit
chip (the arena and the planned bytes are the same on both).  "+ byte view" adds what a sketch
whose data arrives as int8 bytes pays on top: with float I/O, ``input<int8_t>(0)`` allocates a
view buffer of numel bytes; with int8 I/O it is the program's own storage (0 B).

    .venv/bin/python benchmarks/int8_io.py [--models mobilenet_v2_0.35_96,ds_cnn_kws]
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DEFAULT_MODELS = "mobilenet_v2_0.35_96,ds_cnn_kws"


@dataclass(frozen=True)
class Row:
    model: str
    io: str
    sizes: dict[str, int]  # host.measure(...).header_sizes(): the pools EspnnModel allocates
    byte_view: int  # the int8 view a byte-fed sketch allocates (float I/O only)
    input_access: str

    @property
    def whole(self) -> int:
        return sum(self.sizes.values())


def figures(key: str, calibration_batches: int) -> list[Row]:
    import executorch_espnn as ee
    from devkit.zoo import ZOO
    from executorch_espnn import host

    z = ZOO[key]
    cal = z.calibration_data(calibration_batches)
    rows: list[Row] = []
    for io in ("float", "int8"):
        lm = ee.lower(z.model(), z.example_inputs(), calibration=cal, target="esp32s3", io=io)
        view = 0 if io == "int8" else sum(math.prod(t.shape) for t in lm.inputs)
        rows.append(Row(key, io, host.measure(lm.pte).header_sizes(), view,
                        ", ".join(str(t.access) for t in lm.inputs)))
    return rows


def table(rows: list[Row]) -> str:
    lines = ["| model | I/O | planned B | arena B | state B | method alloc B | temp B | whole RAM B | "
             "+ byte view B | input read |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        s = r.sizes
        lines.append(f"| {r.model} | {r.io} | {s['planned_bytes']:,} | {s['arena_bytes']:,} | {s['state_bytes']:,} | "
                     f"{s['method_allocator_bytes']:,} | {s['temp_allocator_bytes']:,} | {r.whole:,} | "
                     f"{r.whole + r.byte_view:,} | {r.input_access} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default=DEFAULT_MODELS, help=f"zoo keys, comma-separated ({DEFAULT_MODELS})")
    ap.add_argument("--calibration", type=int, default=8, help="calibration batches of the zoo model (8)")
    args = ap.parse_args(argv)
    rows: list[Row] = []
    for key in [k for k in args.models.split(",") if k]:
        rows.extend(figures(key, args.calibration))
    print(table(rows))
    for f, i in zip(rows[::2], rows[1::2], strict=True):
        pf, pi = f.sizes["planned_bytes"], i.sizes["planned_bytes"]
        print(f"{f.model}: int8 I/O plans {pf - pi:,} B less ({pi / pf:.3f}x); whole RAM {f.whole - i.whole:,} B "
              f"less ({i.whole / f.whole:.3f}x), {f.whole + f.byte_view - i.whole:,} B less than float I/O "
              "with an int8 byte view")
    return 0


if __name__ == "__main__":
    sys.exit(main())
