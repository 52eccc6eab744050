"""The model folder of an idf.py project (espnn_component/cmake/idf_project.cmake): the same model
step and kernel step as `pio run`, for a build that PlatformIO does not drive.

    .venv/bin/python scripts/espnn_idf_model.py MODEL --target esp32s3 --out DIR
                     [--calibration data.npz] [--strict]

Writes DIR/model.pte, DIR/report.txt/.json, DIR/espnn_model/ (the ESP-IDF component of
model_pte.h and the embedded .pte) and DIR/kernels/ (the model's CPU kernels, their registration
and kernels.cmake); reruns only what changed.  Then `idf.py -DESPNN_MODEL_DIR=DIR ...`.
Exits 1 with one `Error: ...` line when the model or an option is wrong.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def use_this_package() -> None:
    """Import the executorch_espnn of this checkout (nothing when this is an installed package's
    copy): builder/espnn_pio/checkout.py, loaded by its location."""
    spec = importlib.util.spec_from_file_location(
        "espnn_checkout", ROOT / "builder" / "espnn_pio" / "checkout.py")
    assert spec is not None and spec.loader is not None
    checkout = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(checkout)
    checkout.use_checkout_package(ROOT)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path, help="model.py, model.pt2 or a ready model.pte")
    parser.add_argument("--target", required=True,
                        help="the chip of `idf.py set-target` (esp32, esp32s3, ...)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--calibration", type=Path)
    parser.add_argument("--strict", action="store_true")
    args = parser.parse_args(argv)
    use_this_package()
    from executorch_espnn.firmware import kernels, options, step, summary
    from executorch_espnn.runtime_sources import LIST_NAME

    given = {options.MODEL: str(args.model.resolve()), options.TARGET: args.target,
             options.STRICT: "yes" if args.strict else "no"}
    if args.calibration:
        given[options.CALIBRATION] = str(args.calibration.resolve())
    out = args.out.resolve()
    try:
        opts = options.parse(given.get, list(given), Path.cwd(), "")
        assert opts is not None
        paths = step.StepPaths(out)
        ran = step.run(opts, paths, sys.executable, ROOT)
        info = step.load_info(paths)
        kernels.run(out, ROOT / "espnn_component" / "cmake" / LIST_NAME, sys.executable, ROOT)
    except (options.OptionError, step.StepError, kernels.KernelStepError) as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    if ran:  # (no RAM line: the chip's RAM is ESP-IDF's to check, at the link)
        for line in summary.summary_lines(info, None):
            if not line.strip().startswith("RAM:"):
                print(line)
    print(f"model folder: {out} (idf.py -DESPNN_MODEL_DIR={out} ...)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
