"""Build and run the golden suite on the emulated targets.

    python -m emulated [--target rv32imac|lx106|host32|host64|esp32c3|all] [--mobilenet] [--timeout S] [--keep DIR]

``all`` is the targets CI runs; ``esp32c3`` needs Espressif's QEMU (``$ESPNN_QEMU_ESP_DIR``).

Prints each run's console output; exits non-zero unless every run printed a passing verdict
and exited 0.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from emulated import golden, targets


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m emulated", description=__doc__.splitlines()[0])
    chosen_from = {**targets.TARGETS, targets.ESP32C3.name: targets.ESP32C3}
    ap.add_argument("--target", default="all", choices=[*chosen_from, "all"])
    ap.add_argument("--mobilenet", action="store_true",
                    help="add the MobileNetV2-0.35/96 payload (large: slower build and run)")
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--keep", type=Path, help="write the generated C file here")
    args = ap.parse_args(argv)
    cases = golden.factory_cases(mobilenet=args.mobilenet)
    source = golden.render(cases, "devkit/payload_factory.py all_cases(seed=0)")
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        gen = (args.keep or Path(tmp)) / "golden_cases.c"
        gen.parent.mkdir(parents=True, exist_ok=True)
        gen.write_text(source)
        chosen = targets.TARGETS.values() if args.target == "all" else [chosen_from[args.target]]
        for t in chosen:
            t0 = time.monotonic()
            elf = targets.build_golden(t, gen)
            t1 = time.monotonic()
            r = targets.run(t, elf, timeout=args.timeout)
            t2 = time.monotonic()
            sys.stdout.write(r.output)
            verdict = r.verdict()
            passed = r.returncode == 0 and verdict is not None and verdict.startswith("EMU VERDICT PASS")
            print(f"== {t.name}: exit {r.returncode}, build {t1 - t0:.1f} s, run {t2 - t1:.1f} s, "
                  f"{'PASS' if passed else 'FAIL'}")
            ok = ok and passed
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
