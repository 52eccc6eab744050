"""Command line: ``python -m executorch_espnn`` (or ``executorch-espnn``)
``build|inspect|init|cmake-prefix|profile|platform``.

    build MODEL --out DIR [--target esp32s3] [--strict] [--calibration data.npz]
          [--validation val.npz] [--selftest N] [--io float|int8] [--optimize speed|ram] [--profile]
          [--no-io-arena] [--input-layout nchw|nhwc]
        lowers a .py/.pt2 model (or takes a ready .pte) and writes DIR/model.pte,
        DIR/report.json, DIR/report.txt, DIR/report.html (the same report as one self-contained
        page) and DIR/selected_operators.yaml (and, with --selftest N, DIR/selftest.npz: N inputs
        and their expected outputs; with --validation, the reports' accuracy section)
    inspect FILE.pte [--json]
        prints the report of a ready .pte
    init DIR [--board esp32-s3-devkitc-1] [--framework arduino|espidf]
        writes a PlatformIO project that runs at once (pio run -e host -t exec)
    cmake-prefix
        prints what CMAKE_PREFIX_PATH needs for find_package(executorch_espnn CONFIG) (and
        the executorch wheel's folder, for find_package(executorch CONFIG))
    profile LOG --report DIR|report.html
        reads the profile lines EspnnModel::profile() printed (a saved serial log), checks them
        against the build's report, prints them as a table and adds each layer's time to
        report.html
    platform path | platform install
        prints where the PlatformIO platform is / installs it so `platform = executorch-espnn`
        resolves

Every error this package raises on purpose ends the command with exit code 1 and one
``error: …`` message on stderr (the traceback only with ``--verbose``); an option with a
value that cannot work names the option as given (``--selftest 10: …``).  ``build`` writes
nothing outside its output directory, ``init`` nothing outside DIR, ``platform install`` only
what PlatformIO installs.
"""

from __future__ import annotations

import argparse
import json
import sys
import traceback
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from .errors import EspNNError, PteError, StrictModeError
from .version import __version__

OUTPUT_FILES = ("model.pte", "report.json", "report.txt", "report.html", "selected_operators.yaml")
SELFTEST_FILE = "selftest.npz"  # written with --selftest N
PROFILE_FILE = "profile.json"  # written with --profile: the layer table model_pte.h embeds


def _parser() -> argparse.ArgumentParser:
    from .lowering import TARGETS  # cheap: no torch import

    ap = argparse.ArgumentParser(
        prog="python -m executorch_espnn",
        description="Lower PyTorch models to ExecuTorch programs with ESP-NN delegates for ESP32.",
    )
    ap.add_argument("--version", action="version", version=f"executorch-espnn {__version__}")
    sub = ap.add_subparsers(dest="command", required=True,
                            metavar="{build,inspect,init,cmake-prefix,profile,platform}")

    b = sub.add_parser("build", help="lower a model and write model.pte plus its report",
                       description="Lower MODEL (.py defining model()/example_inputs(), .pt2 from "
                                   "torch.export.save, or a ready .pte) and write "
                                   + ", ".join(OUTPUT_FILES) + " into --out.")
    b.add_argument("model", type=Path, help="model.py, model.pt2 or model.pte")
    b.add_argument("--out", type=Path, required=True, help="output directory (created if needed)")
    b.add_argument("--target", default=None,
                   help=f"chip the payload is built for: {', '.join(TARGETS)} (default esp32s3)")
    b.add_argument("--strict", action="store_true",
                   help="fail if any operator would stay on the CPU")
    b.add_argument("--calibration", type=Path, default=None,
                   help="calibration batches as .npz: arrays input0, input1, ... of shape "
                        "(n_batches, *example_input.shape)")
    b.add_argument("--validation", type=Path, default=None,
                   help="held-out samples as .npz: arrays input0, input1, ... of shape "
                        "(n_samples, *example_input.shape), optionally labels (n_samples,)")
    b.add_argument("--selftest", type=_count, default=0, metavar="N",
                   help="embed N inputs with their expected outputs for EspnnModel::self_test() "
                        "(from --validation, else the calibration data, else random); "
                        f"writes {SELFTEST_FILE}")
    b.add_argument("--io", default="float", metavar="float|int8",
                   help="the program's inputs and outputs: float32 (default) or the int8 values of "
                        "the delegate's quantized side (4x smaller planned memory; scale and zero "
                        "point in the report and model_pte.h)")
    b.add_argument("--optimize", default="speed", metavar="speed|ram",
                   help="speed (default): the chip's fastest ESP-NN kernels; ram: ESP-NN's ANSI kernel "
                        "wherever a fast kernel's scratch sets the arena's peak (the report lists them)")
    b.add_argument("--profile", action="store_true",
                   help="a profiling build: write the layer table EspnnModel::profile() prints against "
                        f"({PROFILE_FILE}, report.json's profile)")
    b.add_argument("--no-io-arena", dest="io_arena", action="store_false",
                   help="keep the program's inputs and outputs in ExecuTorch's planned memory instead of "
                        "the delegate arena (for models sharing one arena, or loaded from a partition)")
    b.add_argument("--input-layout", dest="input_layout", default="nchw", metavar="nchw|nhwc",
                   help="nchw (default): 4-D inputs as the model takes them; nhwc: the program takes them "
                        "channels-last, [N, H, W, C] (camera RGB bytes), read by the first convolution "
                        "with no transposing copy (calibration/validation data stay NCHW)")
    b.add_argument("--verbose", action="store_true", help="show tracebacks on errors")
    b.add_argument("--quiet", action="store_true", help="print only errors")

    i = sub.add_parser("inspect", help="print the report of a ready .pte")
    i.add_argument("pte", type=Path, help="a .pte containing EspNNDelegateBackend delegates")
    i.add_argument("--json", action="store_true", help="print the report as JSON")
    i.add_argument("--verbose", action="store_true", help="show tracebacks on errors")

    from .scaffold import DEFAULT_BOARD, FRAMEWORKS

    n = sub.add_parser("init", help="write a PlatformIO project that runs at once",
                       description="Write a project into DIR: platformio.ini (host and board "
                                   "envs), model/model.py, src/, test/.  Existing files are "
                                   "never overwritten.")
    n.add_argument("dir", type=Path, help="the project folder (new or empty)")
    n.add_argument("--board", default=DEFAULT_BOARD, help=f"the board env (default {DEFAULT_BOARD})")
    n.add_argument("--framework", default="arduino", choices=FRAMEWORKS,
                   help="arduino (setup()/loop() sketch) or espidf (app_main); default arduino")
    n.add_argument("--verbose", action="store_true", help="show tracebacks on errors")

    c = sub.add_parser("cmake-prefix", help="print CMAKE_PREFIX_PATH for find_package(executorch_espnn)")
    c.add_argument("--verbose", action="store_true", help="show tracebacks on errors")

    f = sub.add_parser("profile", help="merge a profile log from the target into report.html",
                       description="Read the espnn-profile lines EspnnModel::profile() printed (saved from "
                                   "the serial monitor), check them against the build's report, print the "
                                   "per-layer table and add each layer's time and share to report.html.")
    f.add_argument("log", type=Path, help="the saved serial output")
    f.add_argument("--report", type=Path, required=True,
                   help="the build's report: its report.html, the folder `build --out` wrote, or the "
                        "PlatformIO build folder (.pio/build/<env>)")
    f.add_argument("--verbose", action="store_true", help="show tracebacks on errors")

    p = sub.add_parser("platform", help="where the PlatformIO platform is, or install it")
    p.add_argument("action", choices=("path", "install"))
    p.add_argument("--verbose", action="store_true", help="show tracebacks on errors")
    return ap


def _count(text: str) -> int | str:
    """--selftest's value: an int when it is one; lower() then checks the range, and any other
    text reaches it unchanged so that every bad value gets the same message."""
    try:
        return int(text.strip())
    except ValueError:
        return text


def _write_outputs(out: Path, pte: bytes, report_json: str, report_txt: str, report_html: str) -> list[Path]:
    from .lowering import write_selected_operators

    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in (("report.json", report_json), ("report.txt", report_txt), ("report.html", report_html)):
        (out / name).write_text(text, encoding="utf-8")
        written.append(out / name)
    (out / "model.pte").write_bytes(pte)
    written.insert(0, out / "model.pte")
    written.append(write_selected_operators(pte, out / "selected_operators.yaml"))
    return written


def _strict_check(report_cpu: Sequence[tuple[str, str]], source: Path) -> None:
    if report_cpu:
        lines = "\n".join(f"  {op}: {why}" for op, why in report_cpu)
        raise StrictModeError(
            f"--strict: {len(report_cpu)} operator(s) of {source} run on the CPU:\n{lines}"
        )


def _build(args: argparse.Namespace, out: TextIO) -> int:
    from .lowering import check_target
    from .program_io import check_io
    from .selftest import check_count

    target = check_target(args.target or "esp32s3")  # fail fast, before importing torch
    check_count(args.selftest)
    io = check_io(args.io)
    from .kernel_choice import check_optimize

    optimize = check_optimize(args.optimize)
    from .input_layout import check_input_layout

    input_layout = check_input_layout(args.input_layout)

    def say(msg: str) -> None:
        if not args.quiet:
            print(msg, file=out, flush=True)

    from .modelfile import load_model_file

    say(f"loading {args.model}")
    src = load_model_file(args.model, args.calibration, args.validation)
    if src.kind == "pte" and args.selftest != 0:
        from .errors import OptionValueError

        raise OptionValueError(
            "selftest", args.selftest, f"{args.model.name} is an already lowered .pte",
            "the expected outputs need the model: pass the .py or .pt2 model to embed a self-test",
        )
    if src.kind == "pte" and io != "float":
        from .errors import OptionValueError

        raise OptionValueError(
            "io", args.io, f"{args.model.name} is an already lowered .pte, whose I/O is fixed",
            "pass the .py or .pt2 model to lower it with int8 I/O",
        )
    if src.kind == "pte" and optimize != "speed":
        from .errors import OptionValueError

        raise OptionValueError(
            "optimize", args.optimize, f"{args.model.name} is an already lowered .pte, whose kernels are fixed",
            "pass the .py or .pt2 model to lower it with --optimize ram",
        )
    if src.kind == "pte":
        from .report import build_report

        assert src.pte is not None
        say("[1/1] report of a ready .pte (no lowering)")
        report = build_report(src.pte, target=target if args.target else None)
        if input_layout != "nchw" and not any(t.layout == "NHWC" for t in report.inputs):
            from .errors import OptionValueError

            # a .pte lowered channels-last records it (ProgramInfo.nhwc_inputs), so asking for
            # the layout it has changes nothing; another cannot be had without lowering again
            raise OptionValueError(
                "input_layout", args.input_layout,
                f"{args.model.name} is an already lowered .pte that takes its inputs NCHW (it records no "
                "channels-last input), and a .pte's input layout is fixed",
                "pass the .py or .pt2 model to lower it with --input-layout nhwc",
            )
        if args.target:
            wrong = [p for p in report.partitions if p.target not in (target, "generic")]
            if wrong:
                raise PteError(
                    f"{args.model} was built for {wrong[0].target}, not {target}; "
                    f"lower the model again with --target {target}"
                )
        if args.strict:
            _strict_check([(e.operator, e.reason) for e in report.cpu_ops], args.model)
        pte = src.pte
        selftest = None
        if args.profile:
            from .errors import OptionValueError

            raise OptionValueError(
                "profile", "yes", f"{args.model.name} is an already lowered .pte, which carries no layer names",
                "pass the .py or .pt2 model to profile it",
            )
        table = None
    else:
        from .lowering import lower

        assert src.model is not None
        lowered = lower(src.model, src.example_inputs, src.calibration, target=target,
                        strict=args.strict, progress=say, selftest=args.selftest,
                        validation=src.validation, io=io, optimize=optimize, profile=args.profile,
                        io_arena=args.io_arena, input_layout=input_layout)
        report, pte, selftest, table = lowered.report, lowered.pte, lowered.selftest, lowered.profile
    written = _write_outputs(args.out, pte, json.dumps(report.to_dict(), indent=2) + "\n", str(report),
                             report.html())
    selftest_path = args.out / SELFTEST_FILE
    if selftest is not None:
        written.append(selftest.save(selftest_path))
    else:
        selftest_path.unlink(missing_ok=True)  # a stale one would be embedded by the build
    profile_path = args.out / PROFILE_FILE
    if table is not None:
        profile_path.write_text(json.dumps(table.to_dict(), indent=1) + "\n", encoding="utf-8")
        written.append(profile_path)
    else:
        profile_path.unlink(missing_ok=True)  # a stale one would be embedded by the build
    if not args.quiet:
        say("")
        say(report.summary())
        if report.accuracy is not None:
            from .report.text import accuracy_summary

            say(accuracy_summary(report.accuracy.to_dict()))
        for w in report.warnings:
            say(f"warning: {w}")
        say("wrote " + ", ".join(str(p) for p in written))
    return 0


def _inspect(args: argparse.Namespace, out: TextIO) -> int:
    from .modelfile import load_model_file
    from .report import build_report

    src = load_model_file(args.pte)
    if src.kind != "pte":
        raise PteError(f"inspect reads a ready .pte; {args.pte} is a .{src.kind}: use `build` to lower it")
    assert src.pte is not None
    report = build_report(src.pte)
    print(json.dumps(report.to_dict(), indent=2) if args.json else str(report), file=out, end="\n" if args.json else "")
    return 0


def run(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """The CLI without its error handling: errors raise (``EspNNError``); for front ends
    that word errors themselves (the PlatformIO model step names its own options)."""
    return _dispatch(_parser().parse_args(argv), out or sys.stdout)


def _dispatch(args: argparse.Namespace, out: TextIO) -> int:
    with warnings.catch_warnings():
        if not args.verbose:  # torch/executorch deprecation chatter is not the user's concern
            warnings.simplefilter("ignore", DeprecationWarning)
            warnings.simplefilter("ignore", FutureWarning)
        if args.command == "build":
            return _build(args, out)
        if args.command == "init":
            return _init(args, out)
        if args.command == "cmake-prefix":
            return _cmake_prefix(out)
        if args.command == "platform":
            return _platform(args, out)
        if args.command == "profile":
            return _profile(args, out)
        return _inspect(args, out)


def _init(args: argparse.Namespace, out: TextIO) -> int:
    from .scaffold import init

    project = init(args.dir, board=args.board, framework=args.framework)
    for path in project.files:
        print(f"wrote {path}", file=out)
    print(f"next: executorch-espnn platform install (once), then cd {args.dir} && "
          "pio run -e host -t exec", file=out)
    return 0


def _cmake_prefix(out: TextIO) -> int:
    from . import resources
    from .host.build import executorch_dir

    print(f"{resources.cmake_prefix_path()};{executorch_dir()}", file=out)
    return 0


def _profile(args: argparse.Namespace, out: TextIO) -> int:
    from .report import html
    from .report.profile import (
        ProfileLogError,
        check_against,
        parse_log,
        report_json_path,
        text_table,
    )

    try:
        text = args.log.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise ProfileLogError(f"{args.log}: cannot read the log ({exc.strerror})") from exc
    report_json = report_json_path(args.report)
    report = json.loads(report_json.read_text(encoding="utf-8"))
    profile = parse_log(text, str(args.log))
    check_against(profile, report, str(args.log))
    page = report_json.with_name("report.html")
    page.write_text(html.report_html(report, profile.to_dict()), encoding="utf-8")
    print(text_table(profile), file=out)
    print(f"wrote {page}", file=out)
    return 0


def _platform(args: argparse.Namespace, out: TextIO) -> int:
    from . import platform_install, resources

    if args.action == "path":
        print(resources.platform_dir(), file=out)
        return 0
    platform_install.install()
    print(f"installed the {platform_install.NAME} platform from {resources.platform_dir()}; "
          f"platformio.ini can say: platform = {platform_install.NAME}", file=out)
    return 0


def main(argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run the CLI; returns the exit code (0 success, 1 an error explained on stderr)."""
    from .errors import OptionValueError

    stdout = out or sys.stdout
    stderr = err or sys.stderr
    args = _parser().parse_args(argv)
    try:
        return _dispatch(args, stdout)
    except EspNNError as exc:
        if args.verbose:
            traceback.print_exc(file=stderr)
        msg = str(exc).strip() or type(exc).__name__
        if isinstance(exc, OptionValueError):
            msg = exc.spelled(f"--{exc.option.replace('_', '-')} ")
        print(f"error: {msg}", file=stderr, flush=True)
        return 1
    except KeyboardInterrupt:
        print("error: interrupted", file=stderr)
        return 130
