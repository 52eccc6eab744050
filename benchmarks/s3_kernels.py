"""Instructions of ESP-NN's ESP32-S3 SIMD kernels against its ANSI kernels, on the same emulated
ESP32-S3 (Espressif's QEMU, ``-icount shift=0,sleep=off``): the tables of docs/benchmarks.md ("ESP-NN's
S3 kernels on the emulated ESP32-S3").

    ESPNN_XTENSA_S3_GNU_CONFIG=<esp32s3 plugin .so> ESPNN_ESP_NN_DIR=<esp-nn> \\
    ESPNN_QEMU_ESP_DIR=<qemu bin> python benchmarks/s3_kernels.py [--zoo NAME ...]

One firmware per kernel set (emulated/esp32s3.py: the engine with ESP-NN's S3 sources, built
with and without CONFIG_NN_OPTIMIZED) runs the same single-op payloads, sized like layers of the
zoo's models, through the engine; each line is the guest instructions of one ``espnn_invoke``
(the engine's own per-op work included, the same in both columns), read from CCOUNT (25
instructions a tick under -icount shift=0,sleep=off, so +-25).  Each output is also compared with the
reference executor, so a speed-up is only reported for a bit-exact result.  ``--zoo`` adds
whole delegates of zoo models lowered for the esp32s3 (instructions per inference).
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))

from devkit import payload_factory as pf  # noqa: E402
from devkit.payload_factory import Case  # noqa: E402
from devkit.scratch_helpers import retarget  # noqa: E402
from emulated import esp32s3, golden  # noqa: E402
from executorch_espnn.payload.format import Opcode, Target  # noqa: E402

_LINE = re.compile(r"^case (\S+): ok \((\d+) runs, \d+ bytes, (\d+) insns/invoke\)$", re.M)
DEFAULT_ZOO = ("ds_cnn_kws", "resnet8")


# BATCH_MATMUL shapes (M, K, N) x 2 batches, each with both operands affine (ESP-NN's s16 path),
# b's zero point 0 (its s8 path with an input offset) and both 0 (its s8 path, no offsets): what
# the quantizer's symmetric operands are chosen by (docs/operators.md "Symmetric matmul operands")
MATMUL_SHAPES = ((64, 32, 64), (16, 64, 64), (8, 128, 32))
# (what, b symmetric, a symmetric)
_MATMUL_ZERO_POINTS = (("both affine: s16", False, False), ("b zero point 0: s8 + input offset", True, False),
                       ("both zero points 0: s8", True, True))


def _matmul_cases() -> list[tuple[str, Case]]:
    return [(f"matmul {m}x{k} @ {k}x{n} x2, {what}",
             pf.batch_matmul_case(f"matmul_{m}x{k}x{n}_{i}", a_shape=(2, m, k), b_shape=(2, k, n),
                                  b_symmetric=bs, a_symmetric=a_s))
            for m, k, n in MATMUL_SHAPES for i, (what, bs, a_s) in enumerate(_MATMUL_ZERO_POINTS)]


def layer_cases() -> list[tuple[str, Case]]:
    """(what it is, case): one per ESP-NN kernel the engine calls, at layer sizes of the zoo."""
    return [
        ("conv 1x1, 12x12, 64 -> 64 (mult8 1x1 asm)",
         pf.conv_case("conv1x1_12x12_64", cin=64, h=12, w=12, cout=64, k=(1, 1))),
        ("conv 3x3 pad 1, 16x16, 16 -> 16 (aligned-filter asm)",
         pf.conv_case("conv3x3_16x16_16", cin=16, h=16, w=16, cout=16, k=(3, 3),
                      pad=(1, 1, 1, 1))),
        ("conv 3x3 s2 pad 1, 32x32, 3 -> 16 (im2col)",
         pf.conv_case("conv3x3s2_32x32_3", cin=3, h=32, w=32, cout=16, k=(3, 3), stride=(2, 2),
                      pad=(1, 1, 1, 1))),
        ("depthwise 3x3 pad 1, 24x24, 32 ch (s8 padded asm)",
         pf.conv_case("dw3x3_24x24_32", cin=32, h=24, w=24, k=(3, 3), pad=(1, 1, 1, 1),
                      depthwise_mult=1)),
        ("depthwise 3x3 s2 pad 1, 24x24, 32 ch",
         pf.conv_case("dw3x3s2_24x24_32", cin=32, h=24, w=24, k=(3, 3), stride=(2, 2),
                      pad=(1, 1, 1, 1), depthwise_mult=1)),
        ("fully connected 512 -> 32",
         pf.fc_case("fc_512_32", in_shape=(1, 512), n_out=32)),
        ("fully connected 64 -> 12",
         pf.fc_case("fc_64_12", in_shape=(1, 64), n_out=12)),
        ("add 1024 elements", pf.binary_case("add_1024", Opcode.ADD, (1, 8, 8, 16), (1, 8, 8, 16))),
        ("mul 1024 elements", pf.binary_case("mul_1024", Opcode.MUL, (1, 8, 8, 16), (1, 8, 8, 16))),
        ("max pool 2x2 s2, 16x16, 32 ch",
         pf.pool_case("maxpool_16x16_32", avg=False, c=32, h=16, w=16, k=(2, 2), stride=(2, 2))),
        ("avg pool 2x2 s2, 16x16, 32 ch",
         pf.pool_case("avgpool_16x16_32", avg=True, c=32, h=16, w=16, k=(2, 2), stride=(2, 2))),
        ("softmax 4 rows of 256", pf.softmax_case("softmax_4x256", shape=(4, 256))),
    ]


def _run(cases: list[golden.GoldenCase], kernels: str, name: str, in_place: bool,
         work: Path) -> dict[str, int]:
    gen = work / f"{name}_{kernels}.c"
    pool = esp32s3.in_place_pool_bytes(cases) if in_place else None
    gen.write_text(golden.render(cases, name, pool))
    elf = esp32s3.golden_firmware(gen, kernels, name=name,
                                  defines=("GOLDEN_IN_PLACE_ONLY",) if in_place else ())
    r = esp32s3.run(elf, timeout=3600)
    if "EMU VERDICT PASS" not in r.output:
        raise SystemExit(f"{name} ({kernels}) did not pass:\n{r.output[-3000:]}")
    return {m.group(1): int(m.group(3)) for m in _LINE.finditer(r.output)}


def _table(head: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---:" if i else "---" for i in range(len(head))) + "|"]
    return "\n".join([*lines, *("| " + " | ".join(r) + " |" for r in rows)])


def _rows(labels: list[tuple[str, str]], s3: dict[str, int], ansi: dict[str, int]) -> list[list[str]]:
    return [[label, f"{ansi[n]:,}", f"{s3[n]:,}", f"{ansi[n] / s3[n]:.1f}x"] for label, n in labels]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--zoo", nargs="*", default=list(DEFAULT_ZOO),
                    help=f"zoo models, whole delegates (default {' '.join(DEFAULT_ZOO)})")
    args = ap.parse_args(argv)
    esp32s3.require()
    head = ["", "ANSI kernels (insns)", "S3 kernels (insns)", "S3 speed-up"]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        layers = layer_cases()
        cases = [golden.make_case(c.name, retarget(c.payload, Target.ESP32S3), c.inputs)
                 for _, c in layers]
        runs = {k: _run(cases, k, "s3_layers", False, work) for k in esp32s3.KERNEL_SETS}
        print("## One op per invoke, same payload and inputs (bit-exact in both)\n")
        print(_table(["op", *head[1:]], _rows([(label, c.name) for label, c in layers],
                                              runs[esp32s3.KERNELS_S3],
                                              runs[esp32s3.KERNELS_ANSI])) + "\n", flush=True)
        # the matmuls in a firmware of their own (with the layers they overflow its DRAM)
        mm = [(label, golden.make_case(c.name, retarget(c.payload, Target.ESP32S3), c.inputs))
              for label, c in _matmul_cases()]
        got = _run([c for _, c in mm], esp32s3.KERNELS_S3, "s3_matmuls", False, work)
        print("## BATCH_MATMUL by zero points, S3 kernels (bit-exact in each)\n")
        print(_table(["matmul", "S3 kernels (insns)"], [[label, f"{got[c.name]:,}"] for label, c in mm]) + "\n",
              flush=True)
        if args.zoo:
            labels, s3, ansi = [], {}, {}
            for name in args.zoo:
                zc = esp32s3.zoo_cases(name)
                s3.update(_run(zc, esp32s3.KERNELS_S3, f"zoo_{name}", True, work))
                ansi.update(_run(zc, esp32s3.KERNELS_ANSI, f"zoo_{name}", True, work))
                labels += [(f"{name} delegate {c.name.rsplit('.', 1)[1]}", c.name) for c in zc]
            print("## Zoo models lowered for the esp32s3: instructions per inference (delegate)\n")
            print(_table(["model", *head[1:]], _rows(labels, s3, ansi)) + "\n", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
