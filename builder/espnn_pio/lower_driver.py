"""The model step's subprocess: lower the model, describe the .pte, render the generated files.

Run by the builder as `$PYTHONEXE lower_driver.py --model ... --out $BUILD_DIR/executorch ...`
so that torch is imported in a child process, never in SCons itself.  Writes only into --out:
model.pte, report.json, report.txt, report.html and selected_operators.yaml (the lowering's, as
`python -m executorch_espnn build` writes them; none for a ready .pte), selftest.npz (with
custom_executorch_selftest), espnn_model/ (the generated model_pte.h, model_pte_data.S and the
CMakeLists.txt that makes them an ESP-IDF component) and model_info.json (what the builder
prints and checks).

Exit codes: 0 ok; 2 the model or the lowering failed (stderr's last line says why);
3 a Python package is missing from PlatformIO's Python (the line gives the pip command).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from espnn_pio import checkout, render  # noqa: E402

# lowering options the CLI names as flags, as platformio.ini names them
INI_OPTIONS = {
    "selftest": "custom_executorch_selftest",
    "validation": "custom_executorch_validation",
    "calibration": "custom_executorch_calibration",
    "io": "custom_executorch_io",
}

# module -> the requirement to install when it is missing (pins as in pyproject.toml)
REQUIREMENTS = {
    "torch": "torch==2.13.0",
    "executorch": "executorch==1.5.1",
    "torchao": "torchao>=0.18,<0.19",
    "numpy": "numpy>=1.26",
    "jinja2": "jinja2>=3.1",
}
NEEDED_FOR = {
    "py": list(REQUIREMENTS),
    "pt2": list(REQUIREMENTS),
    "pte": ["executorch", "numpy", "jinja2"],
}

SELFTEST_FILE = "selftest.npz"  # executorch_espnn.cli.SELFTEST_FILE (not imported: a .pte needs no package)
EXIT_FAILED = 2
EXIT_MISSING = 3


class StepFailure(Exception):
    """One line for the user; the builder prints it and stops the build."""


def missing_packages(kind: str) -> list[str]:
    return [m for m in NEEDED_FOR[kind] if importlib.util.find_spec(m) is None]


def install_command(missing: list[str]) -> str:
    reqs = " ".join(f'"{REQUIREMENTS[m]}"' for m in missing)
    return f'"{sys.executable}" -m pip install {reqs}'


def progress(msg: str) -> None:
    print(f"executorch: {msg}", flush=True)


def lower(args: argparse.Namespace, out: Path) -> None:
    """Produce out/model.pte (+ report.json, report.txt, report.html, selected_operators.yaml)."""
    if args.kind == "pte":
        shutil.copyfile(args.model, out / "model.pte")
        return
    if importlib.util.find_spec("executorch_espnn") is None:
        raise StepFailure(
            "the executorch_espnn package is not importable from PlatformIO's Python "
            f'({sys.executable}); install it with: "{sys.executable}" -m pip install executorch-espnn'
        )
    from executorch_espnn import cli  # the very code path of `python -m executorch_espnn build`
    from executorch_espnn.errors import EspNNError, OptionValueError

    argv = ["build", str(args.model), "--out", str(out), "--target", args.target]
    if args.strict:
        argv.append("--strict")
    if args.calibration:
        argv += ["--calibration", str(args.calibration)]
    if args.validation:
        argv += ["--validation", str(args.validation)]
    if args.selftest:
        argv += ["--selftest", str(args.selftest)]
    if args.io != "float":
        argv += ["--io", args.io]
    try:
        rc = cli.run(argv)
    except OptionValueError as exc:  # one line naming the platformio.ini option
        name = INI_OPTIONS.get(exc.option)
        raise StepFailure(exc.spelled(f"{name} = ") if name else str(exc)) from exc
    except EspNNError as exc:
        msg = str(exc).strip() or type(exc).__name__
        sys.stderr.write(f"error: {msg}\n")
        rc = 1
    except SystemExit as exc:  # argparse or an explicit sys.exit in the CLI
        rc = exc.code if isinstance(exc.code, int) else 1
    if rc:
        raise StepFailure(
            f"{args.model_option} = {args.model.name}: lowering failed (the reason is above); "
            "fix the model or set custom_executorch_strict = no"
            if args.strict
            else f"{args.model_option} = {args.model.name}: lowering failed (the reason is above); fix the model"
        )
    if not (out / "model.pte").is_file():
        raise StepFailure(f"lowering {args.model.name} wrote no model.pte into {out}")


def versions() -> dict[str, str]:
    import executorch.version

    from executorch_espnn.payload import format as fmt
    from executorch_espnn.version import __version__ as pkg

    et = str(executorch.version.__version__).split("+", 1)[0]  # "1.5.1+cpu" -> "1.5.1"
    major, minor = int(fmt.FORMAT_MAJOR), int(fmt.FORMAT_MINOR)
    return {"executorch": et, "package": str(pkg), "format_major": str(major), "format_minor": str(minor)}


def _needs_package(what: str, exc: ImportError) -> StepFailure:
    return StepFailure(
        f"{what} needs the executorch_espnn package ({exc}); install "
        f'it with: "{sys.executable}" -m pip install executorch-espnn'
    )


def describe(out: Path) -> dict[str, Any]:
    try:
        from espnn_pio import pte_meta  # reads the program with executorch_espnn.pte
    except ImportError as exc:
        raise _needs_package("reading the .pte", exc) from exc

    pte = (out / "model.pte").read_bytes()
    try:
        meta = pte_meta.read(pte)
    except Exception as exc:  # a corrupt or foreign file given as a ready .pte
        raise StepFailure(f"model.pte is not a usable ExecuTorch program: {exc}") from exc
    report_path = out / "report.json"
    report: dict[str, Any] = (
        json.loads(report_path.read_text(encoding="utf8")) if report_path.is_file() else io_description(pte)
    )
    info = render.model_info(meta, report, versions(), measure_pools(pte, meta.method))
    info["accuracy"] = accuracy_lines(report)
    info["ram"] = ram_bill(report, info["sizes"])
    return info


def ram_bill(report: dict[str, Any], sizes: dict[str, int]) -> dict[str, Any] | None:
    """report.json's RAM bill completed with the measured pools (None for a ready .pte,
    which has no report)."""
    ram = report.get("ram")
    if not isinstance(ram, dict):
        return None
    from executorch_espnn.report.ram import with_measured

    return with_measured(ram, sizes)


def io_description(pte: bytes) -> dict[str, Any]:
    """A ready .pte's inputs/outputs as the lowering report describes them (an int8 program
    tensor's own scale and zero point come from the delegate that reads or writes it), for the
    header; {} when the program cannot be described."""
    from executorch_espnn.errors import EspNNError
    from executorch_espnn.report import build_report

    try:
        full = build_report(pte).to_dict()
    except (EspNNError, ValueError):
        return {}
    return {side: full[side] for side in ("inputs", "outputs")}


def accuracy_lines(report: dict[str, Any]) -> list[str]:
    """The accuracy on the validation data, one line per output, for the build's summary."""
    acc = report.get("accuracy")
    if not acc:
        return []
    from executorch_espnn.report.text import accuracy_summary

    return accuracy_summary(acc).splitlines()


def load_selftest(out: Path) -> dict[str, Any] | None:
    """The self-test table's template context, from the selftest.npz the lowering wrote."""
    path = out / SELFTEST_FILE
    if not path.is_file():
        return None
    from executorch_espnn.selftest import SelfTest

    context: dict[str, Any] = SelfTest.load(path).to_context()
    return context


def measure_pools(pte: bytes, method: str) -> dict[str, int]:
    """The header's exact pool sizes: the program loaded once in EspnnModel's own memory
    mode on this computer (executorch_espnn.host.measure), so begin() never guesses."""
    try:
        from executorch_espnn import host
        from executorch_espnn.errors import EspNNError
    except ImportError as exc:
        raise _needs_package("measuring the model's memory", exc) from exc
    progress(
        "measuring the memory pools (the program loaded once on this computer; the first time "
        "builds executorch_espnn's host library, about a minute) ..."
    )
    try:
        measured = host.measure(pte, method=method)
        sizes: dict[str, int] = {**measured.header_sizes(), "pointer_bytes": measured.pointer_bytes}
    except EspNNError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise StepFailure(f"measuring the model's memory pools failed: {first}") from exc
    return sizes


def write_image(out: Path, info: dict[str, Any], target: str, partition_size: int) -> dict[str, Any]:
    """custom_executorch_storage = partition: out/model.img (executorch_espnn.model_image) and
    what the header and the builder say about the partition."""
    from executorch_espnn import model_image as mi

    pte = (out / "model.pte").read_bytes()
    try:
        image = mi.ModelImage.from_info(pte, info, target)
        data = image.to_bytes()
    except mi.ModelImageError as exc:
        raise StepFailure(f"writing the model image: {exc}") from exc
    size = partition_size or mi.partition_size(len(data), mi.DEFAULT_HEADROOM_PERCENT)
    if len(data) > size:
        raise StepFailure(
            f"custom_executorch_partition_size = {size}: the model image needs {len(data)} bytes; "
            f"give at least {mi.partition_size(len(data), 0)} or remove the option (image + "
            f"{mi.DEFAULT_HEADROOM_PERCENT} %)"
        )
    path = out / "model.img"
    if not path.is_file() or path.read_bytes() != data:
        path.write_bytes(data)
    return {
        "label": mi.DEFAULT_LABEL,
        "subtype": mi.DATA_SUBTYPE,
        "size": size,
        "image_bytes": len(data),
        "signature": image.signature,
        "signature_sha256": mi.signature_sha256(image.signature),
        "host_image_path": str((out / mi.HOST_PARTITION_FILE).resolve()),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--model", type=Path, required=True)
    p.add_argument("--kind", choices=("py", "pt2", "pte"), required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--target", required=True)
    p.add_argument("--strict", action="store_true")
    p.add_argument("--calibration", type=Path)
    p.add_argument("--validation", type=Path)
    p.add_argument("--selftest", type=int, default=0)
    p.add_argument("--io", default="float")
    p.add_argument("--model-option", default="custom_executorch_model")
    p.add_argument("--name", default="", help="a named model's generated files (several models)")
    p.add_argument("--package-root", type=Path, help="a checkout whose executorch_espnn to use")
    p.add_argument("--storage", choices=("embedded", "partition"), default="embedded")
    p.add_argument("--partition-size", type=int, default=0, help="bytes; 0: the image + headroom")
    args = p.parse_args(argv)
    if args.package_root is not None:
        checkout.use_checkout_package(args.package_root)

    missing = missing_packages(args.kind)
    if missing:
        sys.stderr.write(
            f"Error: PlatformIO's Python lacks {', '.join(missing)}, needed for "
            f"{args.model_option}; install with: {install_command(missing)}\n"
        )
        return EXIT_MISSING
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    what = "embedding" if args.kind == "pte" else "lowering"
    progress(f"{what} {args.model.name} for {args.target} (strict: {'yes' if args.strict else 'no'})")
    try:
        lower(args, out)
        info = describe(out)
        selftest = load_selftest(out) if args.kind != "pte" else None
        info["selftest"] = render.selftest_summary(selftest)
        info["name"] = args.name
        if args.storage == "partition":
            info["storage"] = write_image(out, info, args.target, args.partition_size)
        render.write_all(info, out, selftest, args.name)
    except StepFailure as exc:
        sys.stderr.write(f"Error: {exc}\n")
        return EXIT_FAILED
    (out / "model_info.json").write_text(json.dumps(info, indent=1), encoding="utf8")
    progress(f"done in {time.monotonic() - t0:.1f} s -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
