"""The instruction cost of the RAM-first kernels (``optimize="ram"``), per layer, measured on the
emulated ESP32-S3, written into the cost cache the lowering report reads
(executorch_espnn/kernel_cost.py), and printed as a table.

    ESPNN_XTENSA_S3_GNU_CONFIG=<esp32s3 plugin .so> ESPNN_ESP_NN_DIR=<esp-nn> \\
    ESPNN_QEMU_ESP_DIR=<qemu bin> python -m benchmarks.ram_first_cost [--models ds_cnn_kws ...]

Why not on the host: the fast kernels are ESP-NN's S3 assembly; the host runs ESP-NN's C for
both choices, so host instruction counts (callgrind, benchmarks/callgrind.py) are equal by
construction and say nothing about the cost.  So each model is lowered for the esp32s3 with
``optimize="speed"`` and ``"ram"`` (int8 I/O); every op ``ram`` moved to the ANSI kernel is cut
out of both payloads as a payload of its own (devkit/single_op.py: the speed one keeps its
scratch, so the engine calls the SIMD kernel; the ram one has none, so it calls the ANSI kernel),
and both run in one S3 firmware per layer (emulated/esp32s3.py, KERNELS_S3, in place only)
through the golden harness: guest instructions per ``espnn_invoke`` from CCOUNT (+-25), each
output checked against the reference executor.  Each pair is recorded under the op's geometry
hash (target, opcode, geometry parameters, operand dims: kernel_cost.cost_key), so any model with
a layer of that geometry gets the figure in its report; ``--ship`` also merges them into the
package's own table (executorch_espnn/kernel_costs.json), which serves every user.
"""

from __future__ import annotations

import argparse
import datetime
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))

DEFAULT_MODELS = ("ds_cnn_kws",)


@dataclass(frozen=True)
class LayerPair:
    """One moved layer: its cost-cache key and its two single-op golden cases."""

    model: str
    op: int
    layer: str
    key: str
    fast: object  # emulated.golden.GoldenCase (the speed payload's op: SIMD kernel, with scratch)
    ansi: object  # the ram payload's op: ESP-NN's ANSI kernel, no scratch


def layer_pairs(name: str, seed: int = 0) -> list[LayerPair]:
    """The moved layers of zoo model ``name`` as single-op golden cases (host work only)."""
    import executorch_espnn as ee
    from devkit.single_op import random_inputs, single_op_payload
    from devkit.zoo import ZOO
    from emulated import golden
    from executorch_espnn.kernel_cost import cost_key
    from executorch_espnn.payload import decode
    from executorch_espnn.pte import delegate_payloads

    z = ZOO[name]
    cal = z.calibration_data(2)
    speed, ram = (ee.lower(z.model(), z.example_inputs(), calibration=cal, target="esp32s3", io="int8",
                           optimize=o) for o in ("speed", "ram"))
    out = []
    for part, (fast_data, lean_data) in enumerate(zip(delegate_payloads(speed.pte), delegate_payloads(ram.pte),
                                                      strict=True)):
        fast, lean = decode(fast_data), decode(lean_data)
        for a in ram.report.partitions[part].ansi_ops:
            one_fast, one_ansi = single_op_payload(fast, a.op), single_op_payload(lean, a.op)
            xs = random_inputs(one_fast, seed + a.op)
            tag = f"{name}.p{part}.op{a.op}"
            out.append(LayerPair(name, a.op, f"{a.layer} {a.shape}", cost_key(lean, a.op),
                                 golden.make_case(f"{tag}.fast", one_fast, xs),
                                 golden.make_case(f"{tag}.ansi", one_ansi, xs)))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", nargs="*", default=list(DEFAULT_MODELS), help="zoo models")
    ap.add_argument("--ship", action="store_true",
                    help="also merge the figures into the package's kernel_costs.json")
    args = ap.parse_args(argv)
    from benchmarks.s3_kernels import _run, _table
    from emulated import esp32s3
    from emulated.build import CompileError
    from executorch_espnn.kernel_cost import SHIPPED, KernelCost, record, ship

    esp32s3.require()
    pairs = [p for name in args.models for p in layer_pairs(name)]
    if not pairs:
        print("no layer moves to the ANSI kernel with optimize=ram in these models")
        return 0
    # one firmware per layer pair, each case run in place only (no payload copies): a model's
    # layers with their inputs and golden outputs together overflow the S3's data RAM (DS-CNN's
    # eight by ~480 KB)
    counts: dict[str, int] = {}
    too_big: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:

        def measured_in(cases: list[object], name: str) -> bool:
            """Run ``cases`` in one firmware; False when it overflows the S3's SRAM."""
            try:
                counts.update(_run(cases, esp32s3.KERNELS_S3, name, True, Path(tmp)))  # type: ignore[arg-type]
            except CompileError as e:
                if "overflowed" not in e.output:
                    raise
                return False
            return True

        for i, p in enumerate(pairs):
            # both kernels in one firmware, else (too big for the S3's SRAM together) each in
            # its own: with core 1 parked a count does not depend on the firmware's layout
            if not (measured_in([p.fast, p.ansi], f"ram_first_{i}")
                    or all(measured_in([c], f"ram_first_{i}_{j}") for j, c in enumerate((p.fast, p.ansi)))):
                too_big.append(f"{p.model} op {p.op} ({p.layer})")
    pairs = [p for p in pairs if p.fast.name in counts and p.ansi.name in counts]  # type: ignore[attr-defined]
    source = (f"emulated esp32s3 (Espressif QEMU -icount), ESP-NN {_esp_nn_version(esp32s3.esp_nn_dir())}, "
              f"benchmarks/ram_first_cost.py, {datetime.date.today().isoformat()}")
    rows = []
    measured: dict[str, tuple[KernelCost, str]] = {}
    for p in pairs:
        fast, ansi = counts[p.fast.name], counts[p.ansi.name]  # type: ignore[attr-defined]
        cost = KernelCost(fast, ansi, source)
        record(p.key, cost)
        measured.setdefault(p.key, (cost, f"{p.layer} ({p.model} op {p.op})"))
        rows.append([f"{p.model} op {p.op}", p.layer, f"{fast:,}", f"{ansi:,}", f"{ansi / fast:.1f}x"])
    print(_table(["layer", "shape", "S3 SIMD (insns)", "ANSI (insns)", "cost"], rows))
    print(f"\nrecorded {len(pairs)} figure(s) in the cost cache ({source})")
    if too_big:
        print("not measured, the layer's firmware overflows the S3's internal SRAM: " + "; ".join(too_big))
    if args.ship:
        print(f"{SHIPPED} holds {ship(measured)} geometries")
    return 0


def _esp_nn_version(tree: Path) -> str:
    """ESP-NN's version from its idf_component.yml (a tree exported from the repository has no
    git metadata), or 'of unknown version'."""
    try:
        for line in (tree / "idf_component.yml").read_text(encoding="utf-8").splitlines():
            if line.startswith("version:"):
                return line.split(":", 1)[1].strip().strip('"')
    except OSError:
        pass
    return "of unknown version"


if __name__ == "__main__":
    sys.exit(main())
