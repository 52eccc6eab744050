"""The TFLite Micro firmware of benchmarks/vs_tflm.py, for the emulated Cortex-M7, ESP32-C3 and
ESP32-S3 (the boards and compilers of emulated/mcu_stack.py's stacks).

TFLite Micro comes from the esp-tflite-micro tree named by ``$ESPNN_ESP_TFLITE_MICRO_DIR``
(TFLM with Espressif's ESP-NN kernels for conv, depthwise conv, fully connected, add, mul,
pooling and softmax, and its third_party headers), ESP-NN's ANSI C kernels from
``$ESPNN_ESP_NN_DIR``; both are compiled the way emulated/et_runtime.py compiles the ExecuTorch
tree it is given: the sources the tree's own component list names, with the target's flags,
into static libraries (nothing of the trees is copied).  The ESP-NN kernels are the ones our
firmware of the same stack links (``component.Kernels``: ANSI C on the Cortex-M7, ESP-NN as its
own build selects them for the chip on the ESP32s, its S3 SIMD assembly included), and TFLM's
ESP-NN kernels are compiled with the same sdkconfig macros, so ``esp_nn.h`` dispatches both
frameworks to the same functions.  The application is benchmarks/tflm/tflm_main.cc with the
model, its input and the expected output embedded; its arena is the largest block the board's
heap gives (the table shows what TFLM used of it).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from emulated import build, targets
from emulated.build import Unit
from emulated.component import CXX_THIRD_PARTY, Kernels, includes
from executorch_espnn import rendering

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent / "tflm"
TFLM_ENV = "ESPNN_ESP_TFLITE_MICRO_DIR"
ESP_NN_ENV = "ESPNN_ESP_NN_DIR"
# the largest arena tflm_main.cc asks the heap for (it halves nothing: 1 KiB steps down)
ARENA_MAX = 1 << 20

# the op classes of the component list that esp-tflite-micro's ESP-NN kernels replace
ESP_NN_REPLACED = ("add.cc", "conv.cc", "depthwise_conv.cc", "fully_connected.cc", "mul.cc",
                   "pooling.cc", "softmax.cc")
# TFLM's core, as esp-tflite-micro's CMakeLists lists it (debug_log.cc and the timer are the
# board's: benchmarks/tflm/tflm_board.c)
MICRO_CORE = ("flatbuffer_utils.cc", "memory_helpers.cc", "micro_allocation_info.cc",
              "micro_allocator.cc", "micro_context.cc", "micro_interpreter_context.cc",
              "micro_interpreter_graph.cc", "micro_interpreter.cc", "micro_log.cc",
              "micro_op_resolver.cc", "micro_profiler.cc", "micro_resource_variable.cc",
              "micro_time.cc", "micro_utils.cc", "system_setup.cc",
              "memory_planner/greedy_memory_planner.cc",
              "memory_planner/linear_memory_planner.cc",
              "arena_allocator/non_persistent_arena_buffer_allocator.cc",
              "arena_allocator/persistent_arena_buffer_allocator.cc",
              "arena_allocator/single_arena_buffer_allocator.cc")
LITE_CORE = ("kernels/kernel_util.cc", "core/c/common.cc", "core/api/flatbuffer_conversions.cc",
             "core/api/tensor_utils.cc", "kernels/internal/common.cc",
             "kernels/internal/quantization_util.cc", "kernels/internal/portable_tensor_utils.cc",
             "kernels/internal/tensor_utils.cc", "kernels/internal/tensor_ctypes.cc",
             "kernels/internal/reference/portable_tensor_utils.cc")
MLIR_CORE = ("lite/core/api/error_reporter.cc", "lite/schema/schema_utils.cc")
# clang-22's Xtensa backend stops with "Cannot select ... TargetConstantPool" on some TFLM files at
# any optimisation level but -O0 (a select between float constants turned into a table load:
# ApplySignbitToVector, reduce's EvalMinMaxHelper, svdf's float reference); the ESP32-S3 build
# compiles a file it fails on again with -O0 (_compile_s3) and names them (TflmFirmware.o0).  Of
# the models' ops that leaves MEAN (reduce_common.cc) unoptimised: TFLM's S3 instructions are an
# upper bound by that op (docs/benchmarks.md).
CLANG_XTENSA_CANNOT = "Cannot select"

# TFLite builtin op (the model's) -> MicroMutableOpResolver method
RESOLVER = {
    "ADD": "AddAdd", "AVERAGE_POOL_2D": "AddAveragePool2D", "CONCATENATION": "AddConcatenation",
    "CONV_2D": "AddConv2D", "DEPTHWISE_CONV_2D": "AddDepthwiseConv2D",
    "DEQUANTIZE": "AddDequantize", "FULLY_CONNECTED": "AddFullyConnected",
    "HARD_SWISH": "AddHardSwish", "LOGISTIC": "AddLogistic", "MAX_POOL_2D": "AddMaxPool2D",
    "MEAN": "AddMean", "MUL": "AddMul", "PAD": "AddPad", "QUANTIZE": "AddQuantize",
    "RELU": "AddRelu", "RELU6": "AddRelu6", "RESHAPE": "AddReshape", "SOFTMAX": "AddSoftmax",
}

RUNTIME = "TFLM runtime (interpreter, allocator, flatbuffers)"
KERNELS = "TFLM kernels (registered ops)"
ESP_NN = "esp-nn kernels"
DATA = "model data (.tflite)"
APP = "application + test vector"
BOARD = "board support"


class TflmTreeError(RuntimeError):
    """A named tree is missing or is not what the variable says; the message names the fix."""


@dataclass(frozen=True)
class Trees:
    tflm: Path
    esp_nn: Path


def find_trees() -> Trees | str:
    """The trees from the environment, or why not (a sentence naming the variable)."""
    missing = [v for v in (TFLM_ENV, ESP_NN_ENV) if not os.environ.get(v)]
    if missing:
        return f"{', '.join(missing)} not set"
    t = Trees(Path(os.environ[TFLM_ENV]), Path(os.environ[ESP_NN_ENV]))
    if not (t.tflm / "tensorflow/lite/micro/kernels/esp_nn/conv.cc").is_file():
        raise TflmTreeError(f"{TFLM_ENV}={t.tflm} has no tensorflow/lite/micro/kernels/esp_nn/"
                            "conv.cc: point it at an espressif/esp-tflite-micro checkout")
    if not (t.esp_nn / "include/esp_nn.h").is_file():
        raise TflmTreeError(f"{ESP_NN_ENV}={t.esp_nn} has no include/esp_nn.h: point it at an "
                            "espressif/esp-nn checkout")
    return t


def _tflm_flags(t: Trees, logging: bool, kernels: Kernels | None = None) -> tuple[str, ...]:
    """TFLM's flags; ``kernels``' sdkconfig macros (the chip's ESP-NN dispatch) when given."""
    third = t.tflm / "third_party"
    chip = tuple(d for d in kernels.defines() if not d.startswith("-DESPNN_")) if kernels else ()
    return (*CXX_THIRD_PARTY, "-DESP_NN=1", "-DTF_LITE_STATIC_MEMORY", *chip,
            *(() if logging else ("-DTF_LITE_STRIP_ERROR_STRINGS",)),
            *includes(t.tflm, third / "gemmlowp", third / "flatbuffers/include", third / "ruy",
                      HERE / "include", t.esp_nn / "include", system=True))


def tflm_units(t: Trees, logging: bool, kernels: Kernels | None = None) -> dict[str, list[Unit]]:
    """The TFLM sources by part: the runtime and the kernels (ESP-NN's where it has them)."""
    lite = t.tflm / "tensorflow/lite"
    micro = lite / "micro"
    flags = _tflm_flags(t, logging, kernels)
    kernels = sorted(p for p in (micro / "kernels").glob("*.cc") if p.name not in ESP_NN_REPLACED)
    kernels += sorted((micro / "kernels/esp_nn").glob("*.cc"))
    runtime = [*(micro / f for f in MICRO_CORE), *(lite / f for f in LITE_CORE),
               *((t.tflm / "tensorflow/compiler/mlir") / f for f in MLIR_CORE),
               *sorted((micro / "tflite_bridge").glob("*.cc"))]
    return {RUNTIME: [Unit(p, flags) for p in runtime], KERNELS: [Unit(p, flags) for p in kernels]}


def _compile_s3(target: Any, units: list[Unit], o0: list[Path]) -> list[Path]:
    """compile_units, with each file clang-22's Xtensa backend cannot compile optimised
    compiled again at -O0 (appended to ``o0``)."""
    from emulated.build import CompileError

    units = list(units)
    for _ in range(len(units)):
        try:
            return build.compile_units(target, units)
        except CompileError as exc:
            bad = next((i for i, u in enumerate(units) if str(u.source) in exc.what), None)
            if CLANG_XTENSA_CANNOT not in exc.output or bad is None:
                raise
            o0.append(units[bad].source)
            units[bad] = Unit(units[bad].source, (*units[bad].flags, "-O0"), units[bad].label)
    return build.compile_units(target, units)


@dataclass(frozen=True)
class TflmFirmware:
    elf: Path
    stack: Any  # the emulated.mcu_stack.StackTarget it was built for
    parts: dict[str, tuple[Path, ...]]
    o0: tuple[Path, ...] = ()  # TFLM sources compiled at -O0 (CLANG_XTENSA_CANNOT)

    @property
    def map_file(self) -> Path:
        return self.elf.with_suffix(".map")


def _render(template: str, out: Path, **ctx: object) -> Path:
    text = rendering.environment(HERE).get_template(template).render(**ctx)
    rendering.write_if_changed(out, text)
    return out


def firmware(t: Trees, work: Path, ops: list[str], logging: bool, stack: Any = None,
             kernels: Kernels | None = None) -> TflmFirmware:
    """The TFLM firmware of the model in ``work`` (model.tflite, input.bin, expected.bin) for
    ``stack`` (an emulated.mcu_stack.StackTarget; default the Cortex-M7 under -icount) with
    ``kernels`` (default ESP-NN's ANSI C kernels of ``t.esp_nn``)."""
    from emulated import mcu_stack

    unknown = sorted(set(ops) - set(RESOLVER))
    if unknown:
        raise TflmTreeError(f"no MicroMutableOpResolver method known for {unknown}: add them to "
                            "benchmarks/tflm_firmware.py RESOLVER")
    stack = stack or mcu_stack.icount_stack()
    kernels = kernels or Kernels(t.esp_nn)
    target = stack.target
    ops_h = _render("tflm_ops.h.j2", work / "tflm_ops.h", model=work.name, ops=ops,
                    methods=[RESOLVER[o] for o in ops], arena=ARENA_MAX)
    files = [("model", work / "model.tflite"), ("input", work / "input.bin"),
             ("expected", work / "expected.bin")]
    data = _render("data.S.j2", work / "tflm_data.S", files=[(n, str(p)) for n, p in files])
    app_flags = (*_tflm_flags(t, logging, kernels), *includes(ops_h.parent))
    objs = build.compile_units(target, [
        Unit(HERE / "tflm_main.cc", app_flags),
        Unit(HERE / "tflm_board.c", ("-std=gnu11", *includes(HERE / "include",
                                                              ROOT / "espnn_component/include"))),
        *([Unit(HERE / "tflm_s3_math.c", ("-std=gnu11",))] if kernels.idf_target == "esp32s3" else []),
        *mcu_stack.board_units(stack), Unit(data, inputs=tuple(p for _, p in files))])
    n_app = 3 if kernels.idf_target == "esp32s3" else 2  # main, board glue (and the S3's math)
    tag = f"{kernels.name}_{'log' if logging else 'nolog'}"
    o0: list[Path] = []
    compile_units = ((lambda tg, us: _compile_s3(tg, us, o0)) if kernels.idf_target == "esp32s3"
                     else build.compile_units)
    libs = {part: build.archive(target, compile_units(target, units),
                                f"tflm_{re.sub(r'[^a-z]+', '_', part.lower())[:24]}_{tag}")
            for part, units in {**tflm_units(t, logging, kernels), ESP_NN: kernels.units()}.items()}
    elf = build.link(target, [*objs, *libs.values()], f"tflm_{work.name}_{tag}")
    return TflmFirmware(elf, stack, {**{p: (lib,) for p, lib in libs.items()},
                                     DATA: (objs[-1],), APP: tuple(objs[:n_app]),
                                     BOARD: tuple(objs[n_app:-1])}, tuple(o0))


def run(fw: TflmFirmware, timeout: float = 600.0) -> dict[str, int | str]:
    """Run the firmware on its emulator (instructions counted: QEMU -icount); its verdict,
    instructions per Invoke() and the arena it used."""
    r = targets.run(fw.stack.target, fw.elf, timeout)
    out: dict[str, int | str] = {"output": r.output}
    for line in r.output.splitlines():
        m = re.match(r"TFLM (INSN|ARENA_USED|ARENA) (\d+)$", line.strip())
        if m:
            out[{"INSN": "instructions"}.get(m.group(1), m.group(1).lower())] = int(m.group(2))
        if line.startswith("TFLM VERDICT "):
            out["verdict"] = line.strip()
    return out
