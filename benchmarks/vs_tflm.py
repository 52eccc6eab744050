"""Our firmware against TensorFlow Lite Micro with ESP-NN, the same architecture on the emulated
Cortex-M7: instructions per inference, flash by part and RAM, and the ratios.

For each architecture (the zoo's DS-CNN KWS 49x10 and MobileNetV2-0.35 at 96x96) it builds

1. our firmware: emulated/mcu_stack.py's (ExecuTorch's runtime from its sources, the component,
   the engine linking only the model's op families, ESP-NN's ANSI C kernels), the model lowered
   from the zoo; and
2. a TFLM firmware (benchmarks/tflm_firmware.py): TFLite Micro from esp-tflite-micro with its
   ESP-NN kernels (ANSI C: the same ESP-NN sources) and reference kernels elsewhere, running
   the TFLite twin of benchmarks/tflm_compare.py (Keras layers of the same plan, converted
   with int8 I/O), with only the model's ops registered;

runs both under ``qemu-system-arm -M mps2-an500 -icount shift=0,sleep=off``, checks that each
produces its model's outputs (ours: the Python reference's, bit for bit; TFLM's: what
tflite-micro's Python interpreter gives on this computer for the same input), and prints a
markdown table.  Both are built as firmware is (-Os, gc-sections) with logging as each
framework has it by default; ``--no-logging`` builds ours with ET_LOG_ENABLED=0 (what
CONFIG_ESPNN_ET_LOG_LEVEL_NONE gives) and TFLM with TF_LITE_STRIP_ERROR_STRINGS.

    EXECUTORCH_SOURCE_DIR=<tree> FLATBUFFERS_SOURCE_DIR=<tree> ESPNN_ESP_NN_DIR=<esp-nn> \\
    ESPNN_ESP_TFLITE_MICRO_DIR=<esp-tflite-micro> python benchmarks/vs_tflm.py [--model KEY ...]

The TFLite side needs TensorFlow and tflite-micro, in a venv of their own (``--tflm-python``,
default as benchmarks/tflm_compare.py).  Without a tree or that venv it says what is missing
and exits 0.  Instructions: QEMU -icount runs one instruction per virtual nanosecond and the
SysTick counts 25 MHz, so each tick is 40 instructions (resolution ±40).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

MODELS = ("ds_cnn_kws", "mobilenet_v2_0.35_96")
TFLM_ARENA = 512 * 1024  # given to TFLM; the table shows what it used


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


def _elf_flash_ram(elf: Path) -> tuple[int, int]:
    from benchmarks.mcu_sizes import elf_totals

    t = elf_totals(elf)
    # .data's initial values are stored in flash too
    return t["flash_code_and_rodata"] + t["data"], t["data"] + t["bss"]


def tflm_side(trees: Any, work: Path, twin: dict[str, Any], logging: bool) -> Side:
    from benchmarks import tflm_firmware as tf
    from benchmarks.mcu_sizes import part_sizes

    fw = tf.firmware(trees, work, list(twin["ops"]), TFLM_ARENA, logging)
    r = tf.run(fw)
    if not str(r.get("verdict", "")).startswith("TFLM VERDICT PASS"):
        raise RuntimeError(f"the TFLM firmware of {work.name} did not pass:\n{str(r['output'])[-3000:]}")
    sizes = part_sizes(fw.map_file, fw.parts)
    flash, ram = _elf_flash_ram(fw.elf)
    return Side(str(r["verdict"]), int(r["instructions"]), {k: v.flash for k, v in sizes.items()},
                flash, ram - TFLM_ARENA, int(r["arena_used"]), {"ops": twin["ops"]})


def our_side(key: str, esp_nn: Path, logging: bool) -> Side:
    from benchmarks.mcu_sizes import part_sizes
    from emulated import component, et_runtime, mcu_stack

    stack = mcu_stack.icount_stack()
    tree = et_runtime.prepare()
    p = mcu_stack.prepare_model(mcu_stack.zoo_model(key, n_cases=1), tree, stack=stack)
    kernels = component.Kernels(esp_nn, stack.idf_target, stack.esp_nn_without)
    run = mcu_stack.run_app(p, kernels, tree, logging=logging)
    if not run.passed:
        raise RuntimeError(f"our firmware of {key} did not pass:\n{run.output[-3000:]}")
    sizes = part_sizes(run.firmware.map_file, run.firmware.parts)
    flash, ram = _elf_flash_ram(run.firmware.elf)
    insn = run.instructions()
    pools = run.memory().get("policy_bytes", 0)
    return Side(run.verdict or "", int(sorted(insn)[len(insn) // 2]) if insn else 0,
                {k: v.flash for k, v in sizes.items()}, flash, ram, pools)


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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", action="append", choices=MODELS)
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
    rows: dict[str, tuple[Side, Side]] = {}
    for key in args.model or MODELS:
        work = work_root / key
        twin = make_twin(python, key, work)
        theirs = tflm_side(trees, work, twin, not args.no_logging)
        ours = our_side(key, trees.esp_nn, not args.no_logging)
        rows[key] = (ours, theirs)
        print(f"{key}: ours {ours.verdict}; TFLM {theirs.verdict}", file=sys.stderr, flush=True)
    text = table(rows)
    print(text)
    if args.markdown:
        args.markdown.write_text(text)
    if args.json:
        args.json.write_text(json.dumps({k: [o.__dict__, t.__dict__] for k, (o, t) in rows.items()}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
