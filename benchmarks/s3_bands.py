"""What running an S3 depthwise layer in bands costs in instructions, measured side by side on the
emulated ESP32-S3, and the scratch it saves.

    ESPNN_XTENSA_S3_GNU_CONFIG=<esp32s3 plugin .so> ESPNN_ESP_NN_DIR=<esp-nn> \\
    ESPNN_QEMU_ESP_DIR=<qemu bin> python -m benchmarks.s3_bands [--models ds_cnn_kws ...]

Each model is lowered for the esp32s3 with the default ``optimize="speed"`` (int8 I/O); every
depthwise layer the lowering runs in bands (kernel_choice.choose_bands, docs/engine.md "Depthwise
bands") is cut out as a payload of its own (devkit/single_op.py) twice: as lowered (its band's
scratch, so the engine runs ESP-NN's S3 kernel band by band) and with the whole map's scratch (the
same kernel called once). Both run in one S3 firmware (emulated/esp32s3.py, KERNELS_S3, in place
only) through the golden harness, which checks each output against the reference executor and
prints guest instructions per ``espnn_invoke`` from CCOUNT.  Without the three variables the
script names the missing ones and exits 0; the host half (``layer_pairs``) is tested in
tests/test_kernel_choice.py.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))

DEFAULT_MODELS = ("ds_cnn_kws",)


@dataclass(frozen=True)
class BandPair:
    """One banded layer: rows per band, both scratch sizes, and its two single-op golden cases."""

    model: str
    op: int
    layer: str
    rows: int
    band_scratch: int
    whole_scratch: int
    banded: object  # emulated.golden.GoldenCase: the op as lowered, in bands
    whole: object  # the same op with the whole map's scratch: one kernel call


def layer_pairs(name: str, seed: int = 0) -> list[BandPair]:
    """The banded layers of zoo model ``name`` as single-op golden cases (host work only)."""
    import executorch_espnn as ee
    from devkit.single_op import random_inputs, single_op_payload
    from devkit.zoo import ZOO
    from emulated import golden
    from executorch_espnn.payload import decode, encode
    from executorch_espnn.payload_peak import kernel_scratch
    from executorch_espnn.planner import plan_payload
    from executorch_espnn.pte import delegate_payloads

    z = ZOO[name]
    lm = ee.lower(z.model(), z.example_inputs(), calibration=z.calibration_data(2), target="esp32s3",
                  io="int8", optimize="speed")
    out = []
    for part, data in enumerate(delegate_payloads(lm.pte)):
        p = decode(data)
        for b in lm.report.partitions[part].banded_ops:
            bands = single_op_payload(p, b.op)
            whole = decode(bands)
            band_scratch = whole.ops[0].scratch_size
            whole.ops[0].scratch_size = kernel_scratch(whole, 0)
            plan_payload(whole)  # the arena grows to the whole map's scratch
            xs = random_inputs(bands, seed + b.op)
            tag = f"{name}.p{part}.op{b.op}"
            out.append(BandPair(name, b.op, f"{b.layer} {b.shape}", b.rows, band_scratch,
                                whole.ops[0].scratch_size,
                                golden.make_case(f"{tag}.bands", bands, xs),
                                golden.make_case(f"{tag}.whole", encode(whole), xs)))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", nargs="*", default=list(DEFAULT_MODELS), help="zoo models")
    args = ap.parse_args(argv)
    from benchmarks.s3_kernels import _run, _table
    from emulated import esp32s3

    if esp32s3.missing():
        print("needs the emulated ESP32-S3: set " + ", ".join(esp32s3.missing()))
        return 0
    pairs = [p for name in args.models for p in layer_pairs(name)]
    if not pairs:
        print("no depthwise layer runs in bands in these models (optimize=speed)")
        return 0
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, p in enumerate(pairs):
            counts = _run([p.whole, p.banded], esp32s3.KERNELS_S3, f"s3_bands_{i}", True, Path(tmp))  # type: ignore[list-item]
            whole, banded = counts[p.whole.name], counts[p.banded.name]  # type: ignore[attr-defined]
            rows.append([f"{p.model} op {p.op}", p.layer, str(p.rows), f"{p.whole_scratch:,}",
                         f"{p.band_scratch:,}", f"{whole:,}", f"{banded:,}", f"{banded / whole:.2f}x"])
    print(_table(["layer", "shape", "rows per band", "whole-map scratch (B)", "band scratch (B)",
                  "whole map (insns)", "bands (insns)", "cost"], rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
