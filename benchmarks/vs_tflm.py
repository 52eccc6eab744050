"""Our firmware against TensorFlow Lite Micro with ESP-NN, the same architecture on the same
emulated MCU: instructions per inference, flash by part and RAM, and the ratios.

For each architecture (the zoo's DS-CNN KWS 49x10 and MobileNetV2-0.35 at 96x96) and target (``--target``: the Cortex-M7, the
ESP32-C3, the ESP32-S3) it builds

1. our firmware: emulated/mcu_stack.py's stack for that target (ExecuTorch's runtime from its
   sources, the component, the engine linking only the model's op families, ESP-NN: its ANSI C
   kernels on the Cortex-M7, ESP-NN as its own build selects sources for the chip on the ESP32s,
   the S3's SIMD assembly included), the model lowered from the zoo for that chip; and
2. a TFLM firmware (benchmarks/tflm_firmware.py) with the same compiler, flags, board and
   ESP-NN kernels: TFLite Micro from esp-tflite-micro with its ESP-NN kernels and reference
   kernels elsewhere, running the TFLite twin of benchmarks/tflm_compare.py (Keras layers of
   the same plan, converted with int8 I/O), with only the model's ops registered;

runs both (the Cortex-M7 under ``qemu-system-arm -M mps2-an500 -icount shift=0,sleep=off``, the
ESP32s on Espressif's QEMU with the same -icount, emulated/esp_qemu.py), checks that each
produces its model's outputs (ours: the Python reference's, bit for bit; TFLM's: what
tflite-micro's Python interpreter gives on this computer for the same input), and prints a
markdown table per target.  Instructions are what each board's counter gives, the same counter
for both sides: the SysTick (40 instructions a tick) on the Cortex-M7, ``minstret`` (exact) on
the C3, CCOUNT (25 instructions a tick) on the S3.  A model that does not fit a chip's memory
(the S3 firmware runs from its ~400 KiB of SRAM: code, model and data) is reported as such.  Both are built as firmware is (-Os, gc-sections) with logging as each
framework has it by default; ``--no-logging`` builds ours with ET_LOG_ENABLED=0 (what
CONFIG_ESPNN_ET_LOG_LEVEL_NONE gives) and TFLM with TF_LITE_STRIP_ERROR_STRINGS.

    EXECUTORCH_SOURCE_DIR=<tree> FLATBUFFERS_SOURCE_DIR=<tree> ESPNN_ESP_NN_DIR=<esp-nn> \\
    ESPNN_ESP_TFLITE_MICRO_DIR=<esp-tflite-micro> python benchmarks/vs_tflm.py \\
        [--model KEY ...] [--target cortex-m7|esp32c3|esp32s3 ...]

The ESP32 targets also need ``$ESPNN_QEMU_ESP_DIR`` (and the S3 ``$ESPNN_XTENSA_S3_GNU_CONFIG``,
emulated/esp32s3.py).

The TFLite side needs TensorFlow and tflite-micro, in a venv of their own (``--tflm-python``,
default as benchmarks/tflm_compare.py).  Without a tree or that venv it says what is missing
and exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

MODELS = ("ds_cnn_kws", "mobilenet_v2_0.35_96")
TARGETS = ("cortex-m7", "esp32c3", "esp32s3")
# GNU size of each target's binutils (the S3's ELF is linked by the lx106 binutils)
SIZE_TOOLS = {"cortex-m7": "arm-none-eabi-size", "esp32c3": "riscv64-unknown-elf-size",
              "esp32s3": "xtensa-lx106-elf-size"}


# --- the TFLite side's data (runs in the TF venv) -----------------------------------------------


def _twin_main(key: str, out: Path) -> int:
    """model.tflite, input.bin, expected.bin (tflite-micro's Python interpreter) and twin.json
    (the model's ops) for ``key``, in ``out``."""
    import numpy as np
    import tensorflow as tf
    from tflite_micro.python.tflite_micro import runtime

    from benchmarks import tflm_compare

    data = tflm_compare.tflite_int8(key)
    out.mkdir(parents=True, exist_ok=True)
    (out / "model.tflite").write_bytes(data)
    ops = sorted({d["op_name"] for d in tf.lite.Interpreter(model_content=data)._get_ops_details()})
    interp = runtime.Interpreter.from_bytes(data, arena_size=8 << 20)
    d = interp.get_input_details(0)
    x = np.random.default_rng(1).integers(-128, 128, size=d["shape"], dtype=np.int8)
    interp.set_input(x, 0)
    interp.invoke()
    y = interp.get_output(0)
    (out / "input.bin").write_bytes(x.tobytes())
    (out / "expected.bin").write_bytes(np.ascontiguousarray(y).astype(np.int8).tobytes())
    (out / "twin.json").write_text(json.dumps({"ops": ops, "tflite_bytes": len(data)}))
    return 0


def make_twin(python: str, key: str, out: Path) -> dict[str, Any]:
    if not (out / "twin.json").is_file():
        r = subprocess.run([python, __file__, "--twin", key, str(out)], capture_output=True,
                           text=True, check=False, timeout=1800,
                           env={**os.environ, "PYTHONPATH": str(ROOT)})
        if r.returncode:
            raise RuntimeError(f"the TFLite twin of {key} failed:\n{r.stderr[-3000:]}")
    info: dict[str, Any] = json.loads((out / "twin.json").read_text())
    return info


# --- both firmwares (the project's venv) ----------------------------------------------------------


@dataclass
class Side:
    verdict: str
    instructions: int
    flash: dict[str, int]  # part -> text + read-only data bytes
    flash_total: int
    static_ram: int
    pools: int  # arena / allocator bytes the framework takes at run time
    notes: dict[str, Any] = field(default_factory=dict)


class DoesNotFit(RuntimeError):
    """A firmware's code, model and data do not fit the chip's memory (the linker's or the
    board's own words in the message)."""


def _elf_flash_ram(elf: Path, target: str) -> tuple[int, int]:
    from benchmarks.mcu_sizes import elf_totals

    t = elf_totals(elf, SIZE_TOOLS[target])
    # .data's initial values are stored in flash too
    return t["flash_code_and_rodata"] + t["data"], t["data"] + t["bss"]


def _fits(what: str, exc: Exception) -> None:
    """Re-raise a link that overflows the chip's memory as DoesNotFit."""
    text = str(exc)
    if "overflowed by" in text or "will not fit in region" in text:
        line = next((ln for ln in text.splitlines() if "overflowed by" in ln), "")
        raise DoesNotFit(f"{what} does not fit: {line.split(': ', 1)[-1].strip()}") from exc


def tflm_side(trees: Any, work: Path, twin: dict[str, Any], logging: bool, stack: Any,
              kernels: Any) -> Side:
    from benchmarks import tflm_firmware as tf
    from benchmarks.mcu_sizes import part_sizes
    from emulated.build import CompileError

    try:
        fw = tf.firmware(trees, work, list(twin["ops"]), logging, stack, kernels)
    except CompileError as exc:
        _fits(f"the TFLM firmware of {work.name}", exc)
        raise
    r = tf.run(fw)
    if not str(r.get("verdict", "")).startswith("TFLM VERDICT PASS"):
        if "no heap for an arena" in str(r["output"]) or "Failed to resize buffer" in str(r["output"]):
            raise DoesNotFit(f"the TFLM firmware of {work.name} does not fit: its arena "
                             f"({r.get('arena', 0)} B of heap) is too small")
        raise RuntimeError(f"the TFLM firmware of {work.name} did not pass:\n{str(r['output'])[-3000:]}")
    sizes = part_sizes(fw.map_file, fw.parts)
    flash, ram = _elf_flash_ram(fw.elf, stack.name)
    return Side(str(r["verdict"]), int(r["instructions"]), {k: v.flash for k, v in sizes.items()},
                flash, ram, int(r["arena_used"]),
                {"ops": twin["ops"], "tflm_at_O0": [str(f.relative_to(trees.tflm)) for f in fw.o0]})


def our_side(key: str, logging: bool, stack: Any, kernels: Any) -> Side:
    from benchmarks.mcu_sizes import part_sizes
    from emulated import et_runtime, mcu_stack
    from emulated.build import CompileError

    tree = et_runtime.prepare()
    # int8 program I/O (io="int8") as the TFLite twin has it, so neither side converts floats at
    # its boundary; no self-test cases (opt-in, selftest=N; TFLM has none), so neither their
    # vectors nor EspnnModel::self_test() are in the firmware
    model = replace(mcu_stack.int8_io_model(key, n_cases=1, target=stack.lower_for), selftest=None)
    try:
        p = mcu_stack.prepare_model(model, tree, timeout=900, stack=stack)
        run = mcu_stack.run_app(p, kernels, tree, logging=logging, timeout=900)
    except CompileError as exc:
        _fits(f"our firmware of {key}", exc)
        raise
    if not run.passed:
        raise RuntimeError(f"our firmware of {key} did not pass:\n{run.output[-3000:]}")
    sizes = part_sizes(run.firmware.map_file, run.firmware.parts)
    flash, ram = _elf_flash_ram(run.firmware.elf, stack.name)
    insn = run.instructions()
    pools = run.memory().get("policy_bytes", 0)
    return Side(run.verdict or "", int(sorted(insn)[len(insn) // 2]) if insn else 0,
                {k: v.flash for k, v in sizes.items()}, flash, ram, pools)


def stack_for(target: str) -> tuple[Any, Any]:
    """The mcu_stack stack and the ESP-NN kernels both firmwares of ``target`` use."""
    from emulated import component, mcu_stack

    stack = {"cortex-m7": mcu_stack.icount_stack(), "esp32c3": mcu_stack.ESP32C3,
             "esp32s3": mcu_stack.ESP32S3}[target]
    esp_nn = Path(os.environ["ESPNN_ESP_NN_DIR"])
    return stack, component.Kernels(esp_nn, stack.idf_target, stack.esp_nn_without)


def _kb(n: int) -> str:
    return f"{n / 1024:.1f} KB"


def _framework(side: Side) -> int:
    """The firmware's flash less the model and the application with its test vectors (the
    parts' sum, which the linker's string merging makes a little larger than the ELF's)."""
    return sum(v for k, v in side.flash.items() if not k.startswith(("model data", "application")))


def table(rows: dict[str, tuple[Side, Side]]) -> str:
    keys = list(rows)
    lines = ["| | " + " | ".join(keys) + " |", "|---|" + "---|" * len(keys)]

    def row(title: str, cells: list[str]) -> None:
        lines.append(f"| {title} | " + " | ".join(cells) + " |")

    row("instructions per inference, ours / TFLM",
        [f"{o.instructions / 1e6:.2f} M / {t.instructions / 1e6:.2f} M" for o, t in rows.values()])
    row("**instructions ratio**", [f"**{o.instructions / t.instructions:.2f}x**" for o, t in rows.values()])
    row("flash (ELF text + rodata + data), ours / TFLM",
        [f"{_kb(o.flash_total)} / {_kb(t.flash_total)}" for o, t in rows.values()])
    row("**flash ratio**", [f"**{o.flash_total / t.flash_total:.2f}x**" for o, t in rows.values()])
    row("flash without the model and the test vectors, ours / TFLM",
        [f"{_kb(_framework(o))} / {_kb(_framework(t))}" for o, t in rows.values()])
    row("**framework flash ratio**", [f"**{_framework(o) / _framework(t):.2f}x**" for o, t in rows.values()])
    parts = sorted({p for o, t in rows.values() for p in (*o.flash, *t.flash)})
    for part in parts:
        row(f"flash: {part}", [(_kb(o.flash[part]) if part in o.flash else "")
                               + (" / " if part in o.flash and part in t.flash else "")
                               + (_kb(t.flash[part]) if part in t.flash else "") for o, t in rows.values()])
    row("static RAM, ours / TFLM (TFLM's arena array left out)",
        [f"{_kb(o.static_ram)} / {_kb(t.static_ram)}" for o, t in rows.values()])
    row("run-time RAM: ours held by the policy / TFLM's arena used",
        [f"{_kb(o.pools)} / {_kb(t.pools)}" for o, t in rows.values()])
    row("**RAM ratio** (static + run time)",
        [f"**{(o.static_ram + o.pools) / (t.static_ram + t.pools):.2f}x**" for o, t in rows.values()])
    row("verdicts", [f"{o.verdict.split(' cases')[0]}; {t.verdict}" for o, t in rows.values()])
    return "\n".join(lines) + "\n"


def target_missing(target: str) -> str:
    """Why ``target`` cannot be run here ("" when it can): the ESP32s' emulator and tools."""
    if target == "cortex-m7":
        return ""
    from emulated import esp32s3, esp_qemu

    try:
        esp_qemu.require(esp_qemu.CHIPS[target])
    except esp_qemu.QemuEspMissing as exc:
        return str(exc)
    gaps = esp32s3.missing() if target == "esp32s3" else []
    return "; ".join(gaps)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", action="append", choices=MODELS)
    ap.add_argument("--target", action="append", choices=TARGETS,
                    help="repeatable; default: the Cortex-M7")
    ap.add_argument("--tflm-python", default=None)
    ap.add_argument("--no-logging", action="store_true",
                    help="ours with ET_LOG_ENABLED=0, TFLM with TF_LITE_STRIP_ERROR_STRINGS")
    ap.add_argument("--markdown", type=Path)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--twin", nargs=2, metavar=("KEY", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.twin:
        return _twin_main(args.twin[0], Path(args.twin[1]))

    from benchmarks import tflm_compare, tflm_firmware
    from executorch_espnn import runtime_sources
    from executorch_espnn.errors import RuntimeSourcesError

    python = args.tflm_python or tflm_compare.DEFAULT_TFLM_PYTHON
    why = tflm_compare.tflm_available(python)
    trees = tflm_firmware.find_trees()
    try:
        runtime_sources.find_trees()
    except RuntimeSourcesError as exc:  # its message names the variables
        why = why or str(exc)
    if why or isinstance(trees, str):
        print(f"vs_tflm: not measured: {why or trees}")
        return 0
    from emulated import targets

    work_root = targets.cache_dir() / "vs_tflm"
    text = ""
    results: dict[str, dict[str, Any]] = {}
    for target in args.target or ["cortex-m7"]:
        gap = target_missing(target)
        if gap:
            text += f"### {target}\n\nnot measured: {gap}\n\n"
            continue
        stack, kernels = stack_for(target)
        rows: dict[str, tuple[Side, Side]] = {}
        unfit: dict[str, str] = {}
        for key in args.model or MODELS:
            twin = make_twin(python, key, work_root / key)
            try:
                theirs = tflm_side(trees, work_root / key, twin, not args.no_logging, stack, kernels)
                ours = our_side(key, not args.no_logging, stack, kernels)
            except DoesNotFit as exc:
                unfit[key] = str(exc)
                print(f"{target} {key}: {exc}", file=sys.stderr, flush=True)
                continue
            rows[key] = (ours, theirs)
            print(f"{target} {key}: ours {ours.verdict}; TFLM {theirs.verdict}", file=sys.stderr,
                  flush=True)
        text += f"### {target} (ESP-NN: {kernels.name}, {'logging on' if not args.no_logging else 'logging off'})\n\n"
        text += (table(rows) if rows else "")
        o0 = sorted({f for _, t in rows.values() for f in t.notes.get("tflm_at_O0", [])})
        if o0:
            text += f"\nTFLM files compiled at -O0 (clang-22's Xtensa backend fails on them optimised): {', '.join(o0)}\n"
        text += "".join(f"\n{key}: {why}\n" for key, why in unfit.items()) + "\n"
        results[target] = {**{k: [o.__dict__, t.__dict__] for k, (o, t) in rows.items()},
                           **{k: v for k, v in unfit.items()}}
    print(text)
    if args.markdown:
        args.markdown.write_text(text)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
