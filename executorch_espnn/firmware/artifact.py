"""The model-artifact step: lower the model, describe the .pte, render the generated files.

`build_artifacts(job)` is the one entry point.  The builder runs it in a child process (`python
-m executorch_espnn.firmware --job job.json`, __main__.py) so that torch is imported there,
never in SCons itself.  Writes only into job.out: model.pte, report.json, report.txt,
report.html and selected_operators.yaml (the lowering's, as `python -m executorch_espnn build`
writes them; none for a ready .pte), selftest.npz (with custom_executorch_selftest),
espnn_model/ (the generated model_pte.h, model_pte_data.S and the CMakeLists.txt that makes them
an ESP-IDF component), model.img (custom_executorch_storage = partition) and model_info.json
(the returned `ModelInfo`, what the builder prints and checks).

Only the standard library at the top: a ready .pte needs neither torch nor the lowering, and a
missing package must be reported (`MissingPackages`) before anything imports it.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from . import render
from .job import ArtifactJob
from .model_info import ModelInfo, PartitionInfo, PteMeta, Sizes, Versions
from .options import ini_name

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

SELFTEST_FILE = "selftest.npz"  # executorch_espnn.cli.SELFTEST_FILE (not imported: a .pte needs no torch)
INFO_FILE = "model_info.json"


class StepFailure(Exception):
    """One line for the user; the builder prints it and stops the build."""


class MissingPackages(StepFailure):
    """A Python package the job needs is not installed; str() gives the pip command."""


def missing_packages(kind: str) -> list[str]:
    return [m for m in NEEDED_FOR[kind] if importlib.util.find_spec(m) is None]


def install_command(missing: list[str]) -> str:
    reqs = " ".join(f'"{REQUIREMENTS[m]}"' for m in missing)
    return f'"{sys.executable}" -m pip install {reqs}'


def progress(msg: str) -> None:
    print(f"executorch: {msg}", flush=True)


def build_artifacts(job: ArtifactJob) -> ModelInfo:
    """Every file of the module doc for `job`; the ModelInfo written as model_info.json.
    Raises MissingPackages or StepFailure (one line each)."""
    missing = missing_packages(job.kind)
    if missing:
        raise MissingPackages(
            f"PlatformIO's Python lacks {', '.join(missing)}, needed for "
            f"{job.model_option}; install with: {install_command(missing)}"
        )
    out = job.out
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    what = "embedding" if job.kind == "pte" else "lowering"
    progress(f"{what} {job.model.name} for {job.target} (strict: {'yes' if job.strict else 'no'})")
    lower(job)
    info = describe(out)
    selftest = load_selftest(out) if job.kind != "pte" else None
    info.selftest = render.selftest_summary(selftest)
    info.name = job.name
    if job.is_partition:
        info.storage = write_image(out, info, job.target, job.partition_size)
    render.write_all(info, out, selftest, job.name, load_profile(out) if job.profile else None)
    info.write(out / INFO_FILE)
    progress(f"done in {time.monotonic() - t0:.1f} s -> {out}")
    return info


def lower_argv(job: ArtifactJob) -> list[str]:
    """The ``executorch_espnn build`` command line of a job (options at their defaults left out)."""
    out = job.out
    argv = ["build", str(job.model), "--out", str(out), "--target", job.target]
    if job.strict:
        argv.append("--strict")
    if job.calibration:
        argv += ["--calibration", str(job.calibration)]
    if job.validation:
        argv += ["--validation", str(job.validation)]
    if job.selftest:
        argv += ["--selftest", str(job.selftest)]
    if job.io != "float":
        argv += ["--io", job.io]
    if job.optimize != "speed":
        argv += ["--optimize", job.optimize]
    if job.input_layout != "nchw":
        argv += ["--input-layout", job.input_layout]
    if job.profile:
        argv.append("--profile")
    if not job.io_arena:
        argv.append("--no-io-arena")
    return argv


def lower(job: ArtifactJob) -> None:
    """Produce out/model.pte (+ report.json, report.txt, report.html, selected_operators.yaml)."""
    out = job.out
    if job.kind == "pte":
        shutil.copyfile(job.model, out / "model.pte")
        return
    from .. import cli  # the very code path of `python -m executorch_espnn build`
    from ..errors import EspNNError, OptionValueError

    argv = lower_argv(job)
    try:
        rc = cli.run(argv)
    except OptionValueError as exc:  # one line naming the platformio.ini option
        name = ini_name(exc.option)
        raise StepFailure(exc.spelled(f"{name} = ") if name else str(exc)) from exc
    except EspNNError as exc:
        msg = str(exc).strip() or type(exc).__name__
        sys.stderr.write(f"error: {msg}\n")
        rc = 1
    except SystemExit as exc:  # argparse or an explicit sys.exit in the CLI
        rc = exc.code if isinstance(exc.code, int) else 1
    if rc:
        raise StepFailure(
            f"{job.model_option} = {job.model.name}: lowering failed (the reason is above); "
            "fix the model or set custom_executorch_strict = no"
            if job.strict
            else f"{job.model_option} = {job.model.name}: lowering failed (the reason is above); fix the model"
        )
    if not (out / "model.pte").is_file():
        raise StepFailure(f"lowering {job.model.name} wrote no model.pte into {out}")


def versions() -> Versions:
    import executorch.version

    from ..payload import format as fmt
    from ..version import __version__ as pkg

    et = str(executorch.version.__version__).split("+", 1)[0]  # "1.5.1+cpu" -> "1.5.1"
    major, minor = int(fmt.FORMAT_MAJOR), int(fmt.FORMAT_MINOR)
    return Versions(executorch=et, package=str(pkg), format_major=str(major), format_minor=str(minor))


def _needs_package(what: str, exc: ImportError) -> StepFailure:
    return StepFailure(
        f"{what} needs the executorch_espnn package ({exc}); install "
        f'it with: "{sys.executable}" -m pip install executorch-espnn'
    )


def describe(out: Path) -> ModelInfo:
    try:
        from . import pte_meta  # reads the program with executorch_espnn.pte
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
    info = render.model_info(meta, report, versions(), measure_pools(pte, meta))
    info.accuracy = accuracy_lines(report)
    info.ram = ram_bill(report, info.sizes)
    return info


def ram_bill(report: dict[str, Any], sizes: Sizes) -> dict[str, Any] | None:
    """report.json's RAM bill completed with the measured pools (None for a ready .pte,
    which has no report)."""
    ram = report.get("ram")
    if not isinstance(ram, dict):
        return None
    from ..report.ram import with_measured

    return with_measured(ram, {**sizes.pools(), "pointer_bytes": sizes.pointer_bytes,
                               "weights_bytes": sizes.weights_bytes})


def io_description(pte: bytes) -> dict[str, Any]:
    """A ready .pte's inputs/outputs as the lowering report describes them (an int8 program
    tensor's own scale and zero point come from the delegate that reads or writes it), for the
    header; {} when the program cannot be described."""
    from ..errors import EspNNError
    from ..report import build_report

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
    from ..report.text import accuracy_summary

    return accuracy_summary(acc).splitlines()


def load_profile(out: Path) -> dict[str, Any]:
    """The layer table the lowering wrote (profile.json, cli.PROFILE_FILE) for model_pte.h."""
    from ..cli import PROFILE_FILE

    table: dict[str, Any] = json.loads((out / PROFILE_FILE).read_text(encoding="utf-8"))
    return table


def load_selftest(out: Path) -> dict[str, Any] | None:
    """The self-test table's template context, from the selftest.npz the lowering wrote."""
    path = out / SELFTEST_FILE
    if not path.is_file():
        return None
    from ..selftest import SelfTest

    context: dict[str, Any] = SelfTest.load(path).to_context()
    return context


def measure_pools(pte: bytes, meta: PteMeta) -> dict[str, int]:
    """The header's exact pool sizes: the program loaded once in EspnnModel's own memory
    mode on this computer (executorch_espnn.host.measure), so begin() never guesses."""
    try:
        from .. import host
        from ..errors import EspNNError
    except ImportError as exc:
        raise _needs_package("measuring the model's memory", exc) from exc
    progress(
        "measuring the memory pools (the program loaded once on this computer; the first time "
        "builds executorch_espnn's host library, about a minute) ..."
    )
    try:
        measured = host.measure(pte, method=meta.method)
        sizes: dict[str, int] = {**measured.header_sizes(), "pointer_bytes": measured.pointer_bytes}
    except EspNNError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise StepFailure(f"measuring the model's memory pools failed: {first}") from exc
    return sizes


def write_image(out: Path, info: ModelInfo, target: str, partition_size: int) -> PartitionInfo:
    """custom_executorch_storage = partition: out/model.img (executorch_espnn.model_image) and
    what the header and the builder say about the partition."""
    from .. import model_image as mi

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
    return PartitionInfo(
        label=mi.DEFAULT_LABEL,
        subtype=mi.DATA_SUBTYPE,
        size=size,
        image_bytes=len(data),
        signature=image.signature,
        signature_sha256=mi.signature_sha256(image.signature),
        host_image_path=str((out / mi.HOST_PARTITION_FILE).resolve()),
    )
