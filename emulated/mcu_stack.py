"""The whole firmware stack on an emulated 32-bit MCU: ExecuTorch's runtime compiled from a
source tree (``emulated/et_runtime.py``), the component (engine + ESP-NN kernels, adapter,
EspnnModel, the memory policy's C-library-heap world, the bare-metal PAL), the model's selected
CPU kernels with their generated registration, and the model files the builder renders, running
a ``.pte`` through ``EspnnModel`` exactly as a sketch does (with ``self_test()`` on the cases
the header embeds) and comparing every output byte with ``executorch_espnn.host.run`` on the same
inputs.  Two MCUs (``STACKS``):

- ``cortex-m7``: ``qemu-system-arm -M mps2-an500``, models lowered for the esp32s3, the kernels
  the host ESP-NN twin and (``$ESPNN_ESP_NN_DIR``) ESP-NN's ANSI C kernels;
- ``esp32c3``: the chip's memory map booted by its ROM on Espressif's QEMU
  (``$ESPNN_QEMU_ESP_DIR``, emulated/esp_qemu.py), models lowered for the esp32c3, the kernels
  the twin and (``$ESPNN_ESP_NN_DIR``) ESP-NN exactly as its own build selects them for the C3
  (its generic optimised C); instructions per invoke() from ``EMU INSN`` lines.

    python -m emulated.mcu_stack [--target cortex-m7|esp32c3] [--model NAME ...] [--esp-nn DIR]

Needs ``$EXECUTORCH_SOURCE_DIR`` and ``$FLATBUFFERS_SOURCE_DIR``
(``executorch_espnn.runtime_sources.how_to_set()``).

Per model:
1. ``executorch_espnn.selective`` writes the registration of its CPU operators; their kernels
   come from the tree (``runtime_sources.kernel_sources``), the registration is linked from a
   static library with ``-u executorch_espnn_register_kernels`` (docs/component.md);
2. a measuring firmware (``stack/measure_main.cpp`` + ``runtime/espnn_host_api.cpp``, the
   measurement ``host.measure`` makes) prints the pools as the 32-bit target needs them;
3. ``model_pte.h`` is rendered with those figures by the builder's renderer
   (``devkit.model_files.render_model``), the inputs and ``host.run``'s outputs into
   ``model_vectors.h``;
4. the application firmware (``stack/model_main.cpp``) runs them and prints
   ``EMU VERDICT PASS target=<mcu> model=<name> kernels=<kernels> cases=N failed=0 ...``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import pickle
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import numpy as np

from emulated import build, component, esp32s3, et_runtime, golden, targets
from emulated.build import Unit
from emulated.component import C_STRICT, CXX_STRICT, Kernels, includes
from emulated.targets import COMPONENT, EMU, ROOT
from executorch_espnn import rendering

CORTEX_M = EMU / "cortex_m"
STACK_APP = EMU / "stack"
TEMPLATES = EMU / "templates"
ESP_NN_ENV = "ESPNN_ESP_NN_DIR"  # as tests/test_engine.py reads it
EXAMPLES = tuple(sorted((ROOT / "examples").glob("*/model/*.py")))
# CPU islands between two delegates; GRU and LSTM unrolled into one delegate (issue 25)
ZOO_MODELS = ("island_net", "cumsum_net", "gru_rows", "lstm_rows")
# lowered with io="int8": int8 program input and output, the delegate reading/writing the
# program's own storage (the keyword spotter's input is read in place)
INT8_IO_MODELS = {"ds_cnn_int8io": "ds_cnn_kws"}
REGISTER_SYMBOL = "executorch_espnn_register_kernels"
SELFTEST_CASES = 4  # embedded in model_pte.h: EspnnModel::self_test() on the target


@dataclass(frozen=True)
class StackTarget:
    """An emulated MCU the whole stack runs on."""

    target: targets.Target
    board: tuple[Path, ...]  # board support: the PAL's ticks, and what else the target needs
    lower_for: str  # the chip the models are lowered for (its scratch rules)
    idf_target: str | None  # ESP-NN's own build for this chip; None: its ANSI kernels
    app_defines: tuple[str, ...] = ()
    esp_nn_without: tuple[str, ...] = ()  # sdkconfig macros its compiler cannot take (Kernels)

    @property
    def name(self) -> str:
        return self.target.name


STACKS: dict[str, StackTarget] = {s.name: s for s in (
    StackTarget(targets.CORTEX_M7, (CORTEX_M / "board.c",), "esp32s3", None),
    # the C3 firmware brings its own start-up, console and trap report (targets.ESP32C3's runtime),
    # what libsupc++ and libatomic would give, and its board support
    StackTarget(targets.ESP32C3, (*targets.ESP32C3.runtime, *(targets.ESP32C3_DIR / f for f in (
        "board.c", "cxx_support.cpp", "atomics.c"))), "esp32c3", "esp32c3",
                ('-DEMU_TARGET_NAME="esp32c3"', "-DEMU_COUNTS_INSTRUCTIONS")),
)}
CORTEX_M7 = STACKS["cortex-m7"]
ESP32C3 = STACKS["esp32c3"]


def icount_stack() -> StackTarget:
    """The Cortex-M7 stack under QEMU -icount shift=0,sleep=off, counting each inference's
    instructions from the SysTick (cortex_m/icount.c; benchmarks/vs_tflm.py reads TFLM's the
    same way)."""
    m7 = targets.CORTEX_M7
    # the same name: the same objects and caches, only QEMU's command differs
    target = replace(m7, qemu=(m7.qemu[0], "-icount", "shift=0,sleep=off", *m7.qemu[1:]))
    return StackTarget(target, (CORTEX_M / "board.c", CORTEX_M / "icount.c"), "esp32s3", None,
                       ("-DEMU_COUNTS_INSTRUCTIONS",))
# The ESP32-S3 (emulated/esp32s3.py STACK: clang-22 + the S3 gas, the windowed-ABI C library,
# binary64 helpers and CCOUNT ticks of emulated/xtensa_s3/, the C3's libsupc++ stand-in); not
# in STACKS: its ~400 KiB of unmapped SRAM holds the keyword spotter, not every model
# (tests/hardening/test_esp32s3.py runs it).
ESP32S3 = StackTarget(esp32s3.STACK, (*esp32s3.STACK.runtime, targets.ESP32C3_DIR / "cxx_support.cpp"),
                      "esp32s3", "esp32s3", ('-DEMU_TARGET_NAME="esp32s3"', "-DEMU_COUNTS_INSTRUCTIONS"),
                      esp32s3.CLANG_ESP_NN_WITHOUT)


@dataclass(frozen=True)
class StackModel:
    name: str
    pte: bytes
    cases: tuple[tuple[np.ndarray, ...], ...]  # inputs, in the program's dtypes
    selftest: dict[str, Any] | None = None  # SelfTest.to_context(): model_pte.h's self-test table


@dataclass(frozen=True)
class Firmware:
    elf: Path
    parts: dict[str, tuple[Path, ...]]  # part name -> archives/objects linked into it

    @property
    def map_file(self) -> Path:
        return self.elf.with_suffix(".map")


@dataclass
class StackRun:
    model: str
    kernels: str
    operators: tuple[str, ...]
    sizes32: Any  # host.PteSizes measured on the target
    sizes_host: Any  # host.PteSizes measured on this computer
    firmware: Firmware
    returncode: int | None = None
    output: str = ""
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def verdict(self) -> str | None:
        lines = [ln for ln in self.output.splitlines() if ln.startswith("EMU VERDICT ")]
        return lines[-1] if lines else None

    @property
    def passed(self) -> bool:
        v = self.verdict
        return self.returncode == 0 and v is not None and v.startswith("EMU VERDICT PASS ")

    def memory(self) -> dict[str, int]:
        """The EMU MEMORY line the firmware prints after begin()."""
        m = re.search(r"^EMU MEMORY (.*)$", self.output, re.M)
        return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m[1])} if m else {}

    def instructions(self) -> list[int]:
        """Instructions of each case's invoke(), from the EMU INSN lines (boards that count)."""
        from emulated.esp_qemu import instruction_counts

        counts = instruction_counts(self.output)
        return [counts[k] for k in sorted((k for k in counts if k.startswith("invoke.")),
                                          key=lambda k: int(k.split(".", 1)[1]))]

    @property
    def selftest(self) -> str | None:
        """The self_test() line, when the header embeds cases."""
        m = re.search(r"^selftest: .*$", self.output, re.M)
        return m[0] if m else None


# --- models -----------------------------------------------------------------------------------


def _numpy(x: Any) -> np.ndarray:
    return np.ascontiguousarray(x.detach().numpy() if hasattr(x, "detach") else np.asarray(x))


def _selftest(low: Any) -> dict[str, Any] | None:
    return low.selftest.to_context() if low.selftest is not None else None


def example_model(path: Path, n_cases: int = 3, target: str = "esp32s3") -> StackModel:
    """An example's model file lowered as the builder lowers it (with a self-test of
    SELFTEST_CASES samples); cases: its example inputs and the first calibration batches."""
    import executorch_espnn as ee
    from executorch_espnn.modelfile import load_model_file

    src = load_model_file(path)
    assert src.model is not None and src.example_inputs is not None
    low = ee.lower(src.model, src.example_inputs, calibration=src.calibration, target=target,
                   selftest=SELFTEST_CASES)
    batches = [src.example_inputs, *(src.calibration or [])][:n_cases]
    return StackModel(path.stem, bytes(low.pte), tuple(tuple(_numpy(x) for x in b) for b in batches),
                      _selftest(low))


def zoo_model(name: str, n_cases: int = 3, target: str = "esp32s3") -> StackModel:
    import executorch_espnn as ee
    from devkit.zoo import ZOO

    z = ZOO[name]
    batches = [z.example_inputs(), *z.test_inputs(n_cases - 1)]
    low = ee.lower(z.model(), z.example_inputs(), calibration=z.calibration_data(8), target=target,
                   selftest=SELFTEST_CASES)
    return StackModel(name, bytes(low.pte), tuple(tuple(_numpy(x) for x in b) for b in batches),
                      _selftest(low))


def int8_io_model(name: str, n_cases: int = 3, target: str = "esp32s3") -> StackModel:
    """A zoo model (by an INT8_IO_MODELS name or its own) lowered with int8 program I/O; its
    cases are the float test inputs quantized with the program input's own scale and zero point
    (what a sketch writes to input<int8_t>())."""
    import executorch_espnn as ee
    from devkit.zoo import ZOO

    z = ZOO[INT8_IO_MODELS.get(name, name)]
    batches = [z.example_inputs(), *z.test_inputs(n_cases - 1)]
    low = ee.lower(z.model(), z.example_inputs(), calibration=z.calibration_data(8), target=target,
                   io="int8", selftest=SELFTEST_CASES)

    def q(x: Any, i: int) -> np.ndarray:
        t = low.inputs[i]
        assert t.dtype == "int8" and t.scale is not None and t.zero_point is not None
        v = np.rint(_numpy(x).astype(np.float64) / t.scale) + t.zero_point
        return np.clip(v, -128, 127).astype(np.int8)

    return StackModel(name, bytes(low.pte), tuple(tuple(q(x, i) for i, x in enumerate(b)) for b in batches),
                      _selftest(low))


def model_names() -> list[str]:
    """Each example's model, then the zoo's CPU-island and recurrent models, then the int8-I/O ones."""
    return [*(p.stem for p in EXAMPLES), *ZOO_MODELS, *INT8_IO_MODELS]


def load_model(name: str, stack: StackTarget = CORTEX_M7) -> StackModel:
    """A model lowered for ``stack``'s chip, from the cache when nothing it depends on changed."""
    example = next((p for p in EXAMPLES if p.stem == name), None)
    if example is not None:
        return _cached(name, stack.lower_for, example,
                       lambda: example_model(example, target=stack.lower_for))
    if name in ZOO_MODELS:
        return _cached(name, stack.lower_for, ROOT / "devkit" / "zoo.py",
                       lambda: zoo_model(name, target=stack.lower_for))
    if name in INT8_IO_MODELS:
        return _cached(name, stack.lower_for, ROOT / "devkit" / "zoo.py",
                       lambda: int8_io_model(name, target=stack.lower_for))
    raise ValueError(f"unknown model {name!r}; choose from {', '.join(model_names())}")


def _cached(name: str, target: str, source: Path, lower: Callable[[], StackModel]) -> StackModel:
    """Lowering is the slow step (a minute for the person detector): keep its result under the
    cache, keyed by the model's source, the lowering package's sources and the versions of
    torch and executorch."""
    import torch
    from executorch.version import __version__ as et_version

    h = hashlib.sha256(repr((name, target, SELFTEST_CASES, torch.__version__, et_version)).encode())
    for f in sorted([source, *(ROOT / "executorch_espnn").rglob("*.py"),
                     *(ROOT / "devkit").rglob("*.py")]):
        h.update(f.name.encode())
        h.update(f.read_bytes())
    path = targets.cache_dir() / "stack-models" / f"{name}-{target}-{h.hexdigest()[:16]}.pickle"
    if path.is_file():
        with path.open("rb") as fh:
            cached: StackModel = pickle.load(fh)
        return cached
    model = lower()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    with tmp.open("wb") as fh:
        pickle.dump(model, fh)
    os.replace(tmp, path)  # concurrent sessions: a whole file or none
    return model


# --- generated files --------------------------------------------------------------------------


def _render(template: str, out: Path, **ctx: Any) -> Path:
    env = rendering.environment(TEMPLATES)
    env.filters["c_bytes"] = golden.c_bytes
    text = env.get_template(template).render(**ctx)
    out.parent.mkdir(parents=True, exist_ok=True)
    rendering.write_if_changed(out, text)
    return out


def write_vectors(model: StackModel, kernels: str, out: Path) -> Path:
    """model_vectors.h: the inputs and what host.run returns for them."""
    from executorch_espnn import host

    cases = []
    for inputs in model.cases:
        outputs = host.run(model.pte, list(inputs))
        cases.append({"inputs": [x.tobytes() for x in inputs],
                      "outputs": [np.ascontiguousarray(y).tobytes() for y in outputs]})
    return _render("model_vectors.h.j2", out, model=model.name, kernels=kernels, cases=cases,
                   n_inputs=len(model.cases[0]), n_outputs=len(cases[0]["outputs"]))


def render_header(pte: bytes, out: Path, sizes: Any = None) -> Path:
    """model_pte.h and model_pte_data.S by the builder's renderer; returns their folder."""
    from devkit.model_files import render_model

    return render_model(pte, out, sizes=sizes)


def registration(pte_path: Path, out: Path) -> tuple[tuple[str, ...], Path, int]:
    """(CPU operators, RegisterCodegenUnboxedKernels.cpp, registered kernel count)."""
    from executorch_espnn import selective

    files = selective.generate(pte_path, out)
    ops = tuple(selective.selected_operators(files[0]))
    return ops, files[1], len(selective.registered_kernels(files[1]))


# --- building ---------------------------------------------------------------------------------


def _version() -> str:
    return component.wheel_executorch_version()


def _with(units: Sequence[Unit], extra: Sequence[str]) -> list[Unit]:
    return [Unit(u.source, (*u.flags, *extra), u.label, u.inputs) for u in units]


# builder/espnn_pio/runtime_build.py LOG_DEFINES[0]: CONFIG_ESPNN_ET_LOG_LEVEL_NONE
LOG_OFF = ("-DET_LOG_ENABLED=0",)
# What every build of a firmware whose models are all embedded gives the engine (src/registry.c)
ENGINE_OPS_FROM_MODELS = "-DESPNN_ENGINE_OPS_FROM_MODELS=1"


def component_parts(tree: et_runtime.ExecutorchTree, kernels: Kernels,
                    stack: StackTarget = CORTEX_M7, extra: Sequence[str] = ()) -> dict[str, Path]:
    """The component as three static libraries: engine, ESP-NN kernels, and the adapter with
    EspnnModel, the memory policy and the bare-metal PAL; ``extra`` flags go to every unit of
    the engine and the adapter (``-DESPNN_PROFILE=1``: the profiler)."""
    hdr = tree.header_flags()
    adapter = component.adapter_units(hdr, component.baremetal_defines(_version()), pal="baremetal")
    groups = {
        # the model is embedded: the engine links only the op families its payloads use
        "engine": _with(component.engine_units(kernels), (*extra, ENGINE_OPS_FROM_MODELS)),
        "esp-nn kernels": kernels.units(),
        "adapter + memory policy + PAL": [*_with(adapter, extra), *component.memory_units("host")],
    }
    t = stack.target
    return {part: build.archive(t, build.compile_units(t, units),
                                f"espnn_{re.sub(r'[^a-z0-9]+', '_', part)}_{kernels.name}")
            for part, units in groups.items()}


def _app_flags(tree: et_runtime.ExecutorchTree, stack: StackTarget, *dirs: Path) -> tuple[str, ...]:
    return (*CXX_STRICT, *component.defines(*component.ADAPTER_DEFINES),
            *component.baremetal_defines(_version()), *stack.app_defines,
            *includes(*dirs, COMPONENT / "include", *component.paths("ESPNN_ENGINE_INCLUDE_DIRS"),
                      COMPONENT / "adapter", COMPONENT / "runtime"),
            *tree.header_flags())


def board_units(stack: StackTarget) -> list[Unit]:
    return [Unit(src, (*(CXX_STRICT if src.suffix == ".cpp" else C_STRICT),
                       *includes(COMPONENT / "include", EMU / "include"))) for src in stack.board]


def firmware(tree: et_runtime.ExecutorchTree, kernels: Kernels, app: Sequence[Unit],
             model_dir: Path, operators: Sequence[str], registration_cpp: Path,
             n_kernels: int, name: str, *, keep_registration: bool = True,
             stack: StackTarget = CORTEX_M7, extra: Sequence[str] = (),
             logging: bool = True) -> Firmware:
    """``logging`` False: ExecuTorch's runtime and kernels and the component built with
    ET_LOG_ENABLED=0, as CONFIG_ESPNN_ET_LOG_LEVEL_NONE builds them (their log strings leave
    the firmware)."""
    t = stack.target
    log = () if logging else LOG_OFF
    extra = (*extra, *log)
    data = model_dir / "model_pte_data.S"
    pte = model_dir.parent / "model.pte"
    board = board_units(stack)
    objs = build.compile_units(t, [*app, *board, Unit(data, inputs=(pte,))])
    reg = build.archive(t, build.compile_units(t, [Unit(
        registration_cpp, (*CXX_STRICT, *includes(registration_cpp.parent), *tree.header_flags()))]),
        "espnn_registration")
    kernels_lib = et_runtime.kernels_library(tree, t, operators, log)
    runtime_lib = et_runtime.runtime_library(tree, t, n_kernels, log)
    parts = component_parts(tree, kernels, stack, extra)
    # The PAL and the registration sit in static libraries nothing references: -u keeps them
    # (the runtime's et_pal_* references are weak and never pull an archive member).
    keep = [*component.lists()["ESPNN_PAL_SYMBOLS"], *([REGISTER_SYMBOL] if keep_registration else [])]
    libs = [reg, kernels_lib, runtime_lib, *parts.values()]
    elf = build.link(t, [*objs, *libs], name, [f"-Wl,-u,{s}" for s in keep])
    n_app = len(app)
    return Firmware(elf, {
        "ExecuTorch runtime": (runtime_lib,),
        "selected kernels + registration": (kernels_lib, reg),
        **{part: (lib,) for part, lib in parts.items()},
        "model data": (objs[-1],),
        "application + test vectors": tuple(objs[:n_app]),
        "board support": tuple(objs[n_app:-1]),
    })


def _sizes_from(output: str) -> Any:
    from executorch_espnn.host import PteSizes

    m = re.search(r"^EMU SIZES (planned_bytes=.*)$", output, re.M)
    if m is None:
        raise RuntimeError(f"the measuring firmware printed no sizes:\n{output[-3000:]}")
    values = dict(re.findall(r"(\w+)=(\d+)", m[1]))
    return PteSizes(**{f.name: int(values[f.name]) for f in fields(PteSizes)})


def work_dir(model: StackModel, stack: StackTarget = CORTEX_M7) -> Path:
    digest = hashlib.sha256(model.pte).hexdigest()[:12]
    d = targets.cache_dir() / "stack" / stack.name / f"{model.name}-{digest}"
    d.mkdir(parents=True, exist_ok=True)
    return d


@dataclass(frozen=True)
class Prepared:
    """A model ready for its application firmware: registration and both measurements."""

    model: StackModel
    work: Path
    operators: tuple[str, ...]
    registration_cpp: Path
    n_kernels: int
    sizes_host: Any  # host.PteSizes, this computer (64-bit)
    sizes32: Any  # host.PteSizes, measured on the emulated target
    stack: StackTarget = CORTEX_M7


def prepare_model(model: StackModel, tree: et_runtime.ExecutorchTree,
                  timeout: float = 300.0, stack: StackTarget = CORTEX_M7) -> Prepared:
    """Steps 1 and 2 of the module doc: the registration, and the pools measured on the target
    (the ESP-NN kernels do not change what the payload needs: the host twin measures)."""
    from executorch_espnn import host

    work = work_dir(model, stack)
    pte_path = work / "model.pte"
    pte_path.write_bytes(model.pte)
    ops, reg_cpp, n_kernels = registration(pte_path, work / "registration")
    host_dir = render_header(model.pte, work / "host")
    measure_app = [Unit(STACK_APP / "measure_main.cpp", _app_flags(tree, stack, host_dir)),
                   Unit(COMPONENT / "runtime" / "espnn_host_api.cpp", _app_flags(tree, stack))]
    meter = firmware(tree, Kernels(), measure_app, host_dir, ops, reg_cpp, n_kernels,
                     f"measure-{model.name}", stack=stack)
    measured = targets.run(stack.target, meter.elf, timeout=timeout)
    if measured.returncode != 0:
        raise RuntimeError(f"the measuring firmware of {model.name} failed "
                           f"(exit {measured.returncode}):\n{measured.output[-3000:]}")
    return Prepared(model, work, ops, reg_cpp, n_kernels, host.measure(model.pte),
                    _sizes_from(measured.output), stack)


def run_app(p: Prepared, kernels: Kernels, tree: et_runtime.ExecutorchTree, *,
            timeout: float = 300.0, edit: dict[str, Any] | None = None,
            keep_registration: bool = True, profile: dict[str, Any] | None = None,
            logging: bool = True) -> StackRun:
    """Steps 3 and 4: the header with the target's sizes (``edit`` overrides fields, as
    ``render_model`` takes them), the vectors, the application firmware and its run.  A failing
    run does not raise: the StackRun says what happened.  ``profile`` (a layer table,
    ``ProfileTable.to_dict()``): a profiling firmware (the component built with ESPNN_PROFILE,
    the table in the header) that prints EspnnModel::profile() after the last case."""
    t0 = time.monotonic()
    tag = "target" if not edit else "edit-" + hashlib.sha256(repr(sorted(edit.items())).encode()).hexdigest()[:8]
    if profile is not None:
        tag += "-profile"
    if not logging:
        tag += "-nolog"
    extra = ("-DESPNN_PROFILE=1",) if profile is not None else ()
    target_dir = render_model_dir(p, p.work / tag, edit, profile)
    vectors = write_vectors(p.model, kernels.name, p.work / "vectors" / kernels.name / "model_vectors.h")
    app = [Unit(STACK_APP / "model_main.cpp", (*_app_flags(tree, p.stack, target_dir, vectors.parent), *extra))]
    fw = firmware(tree, kernels, app, target_dir, p.operators, p.registration_cpp, p.n_kernels,
                  f"model-{p.model.name}-{kernels.name}-{tag}"
                  + ("" if keep_registration else "-no-u"), keep_registration=keep_registration,
                  stack=p.stack, extra=extra, logging=logging)
    t1 = time.monotonic()
    r = targets.run(p.stack.target, fw.elf, timeout=timeout)
    return StackRun(p.model.name, kernels.name, p.operators, p.sizes32, p.sizes_host, fw,
                    r.returncode, r.output, {"build": t1 - t0, "run": time.monotonic() - t1})


def render_model_dir(p: Prepared, out: Path, edit: dict[str, Any] | None = None,
                     profile: dict[str, Any] | None = None) -> Path:
    from devkit.model_files import render_model

    return render_model(p.model.pte, out, sizes=p.sizes32, edit=edit, selftest=p.model.selftest,
                        profile=profile)


def run_model(model: StackModel, kernels: Kernels, tree: et_runtime.ExecutorchTree | None = None,
              timeout: float = 300.0, stack: StackTarget = CORTEX_M7) -> StackRun:
    """All four steps for one model and one set of kernels."""
    tree = tree or et_runtime.prepare()
    return run_app(prepare_model(model, tree, timeout, stack), kernels, tree, timeout=timeout)


def kernel_variants(esp_nn_dir: Path | None = None, stack: StackTarget = CORTEX_M7) -> list[Kernels]:
    """The host ESP-NN twin, and when an ESP-NN checkout is named, ESP-NN as the stack's chip
    builds it (its ANSI C kernels where the stack names no chip)."""
    env = esp_nn_dir or (Path(os.environ[ESP_NN_ENV]) if os.environ.get(ESP_NN_ENV) else None)
    return [Kernels(), *([Kernels(env, stack.idf_target, stack.esp_nn_without)] if env else [])]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m emulated.mcu_stack",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--target", choices=list(STACKS), default=CORTEX_M7.name)
    ap.add_argument("--model", action="append", choices=model_names(),
                    help="one model (repeatable); default: all")
    ap.add_argument("--esp-nn", type=Path, help=f"an ESP-NN checkout (default ${ESP_NN_ENV})")
    ap.add_argument("--timeout", type=float, default=300.0)
    args = ap.parse_args(argv)
    from executorch_espnn.errors import RuntimeSourcesError

    try:
        tree = et_runtime.prepare()
    except RuntimeSourcesError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    stack = STACKS[args.target]
    ok = True
    for name in args.model or model_names():
        prepared = prepare_model(load_model(name, stack), tree, args.timeout, stack)
        for kernels in kernel_variants(args.esp_nn, stack):
            run = run_app(prepared, kernels, tree, timeout=args.timeout)
            sys.stdout.write(run.output)
            print(f"== {name} / {kernels.name}: exit {run.returncode}, build "
                  f"{run.timings['build']:.1f} s, run {run.timings['run']:.1f} s, "
                  f"{'PASS' if run.passed else 'FAIL'}")
            ok = ok and run.passed
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
