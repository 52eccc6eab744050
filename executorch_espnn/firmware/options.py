"""The custom_executorch_* options of platformio.ini: read, validated, and typed.

Every problem stops the build with ONE line that names the option and says how to fix it
(`OptionError`).  Validation is cheap on purpose (standard library only, no torch import: a `.py`
model file is only parsed with `ast`), because it runs on every `pio run`, including no-op
builds.  This module is the one home of the options' names and choices: the builder, the
idf.py route, the model-artifact job (job.py) and the lowering's `io` check
(executorch_espnn.program_io) take them from here.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

PREFIX = "custom_executorch_"
MODEL = PREFIX + "model"
CALIBRATION = PREFIX + "calibration"
STRICT = PREFIX + "strict"
TARGET = PREFIX + "target"
SELFTEST = PREFIX + "selftest"
VALIDATION = PREFIX + "validation"
IO = PREFIX + "io"  # the program's inputs/outputs: float (default) or int8
IO_CHOICES = ("float", "int8")  # the first is the default
# RAM-first kernels (executorch_espnn.kernel_choice): speed (default) or ram
OPTIMIZE = PREFIX + "optimize"
OPTIMIZE_CHOICES = ("speed", "ram")  # the first is the default
# The program's 4-D inputs: nchw (default, as the model takes them) or nhwc (channels-last,
# read by the first convolution with no transposing copy: executorch_espnn.input_layout)
INPUT_LAYOUT = PREFIX + "input_layout"
INPUT_LAYOUT_CHOICES = ("nchw", "nhwc")  # the first is the default
# yes: a profiling firmware (CONFIG_ESPNN_ET_PROFILE, the layer table in model_pte.h) whose
# EspnnModel::profile() prints each delegated layer's time; no (default): no counting code at all
PROFILE = PREFIX + "profile"
# Where an ESP build's pinned source trees come from (sources.py reads them).
RUNTIME_DIR = PREFIX + "runtime_dir"  # a pytorch/executorch checkout at the wheel's commit
FLATBUFFERS_DIR = PREFIX + "flatbuffers_dir"  # google/flatbuffers at ExecuTorch's pin
ESPNN_DIR = PREFIX + "espnn_dir"  # an espressif/esp-nn tree in the declared range
SOURCES_URL_BASE = PREFIX + "sources_url_base"  # instead of https://github.com (a mirror)
SOURCE_OPTIONS = (RUNTIME_DIR, FLATBUFFERS_DIR, ESPNN_DIR, SOURCES_URL_BASE)
# Which ExecuTorch runtime a build links: "source" (compiled from the pinned tree: ESP boards
# always, the host board on request) or "wheel" (the executorch wheel's libraries: host only).
RUNTIME = PREFIX + "runtime"
RUNTIME_CHOICES = ("source", "wheel")
# Where the firmware keeps the model: "embedded" in the app image, or "partition", a data
# partition of its own that `pio run -t uploadmodel` writes (docs/model-partition.md).
STORAGE = PREFIX + "storage"
STORAGE_CHOICES = ("embedded", "partition")  # the first is the default
PARTITION_SIZE = PREFIX + "partition_size"  # the model partition's size (default: image + 25 %)
# Several models (`name = path` lines in custom_executorch_model) that never run at the same time
# may share one delegate arena (EspnnSharedArena, ESPNN_SHARED_ARENA_BYTES).
SHARED_ARENA = PREFIX + "shared_arena"
KNOWN = (MODEL, CALIBRATION, STRICT, TARGET, SELFTEST, VALIDATION, IO, OPTIMIZE, INPUT_LAYOUT, RUNTIME, SHARED_ARENA,
         *SOURCE_OPTIONS, STORAGE, PARTITION_SIZE, PROFILE)


def ini_name(lowering_option: str) -> str | None:
    """The platformio.ini option of a lowering option (the CLI's --io is custom_executorch_io),
    None when platformio.ini has none."""
    name = PREFIX + lowering_option
    return name if name in KNOWN else None


# Options that take one value per model with several models (`name = value` lines); the others
# (strict, target, io, optimize, input_layout) apply to every model.  A plain selftest number applies to every model.
PER_MODEL = (CALIBRATION, VALIDATION, SELFTEST)

MODEL_KINDS = ("py", "pt2", "pte")  # a model file's suffix names its kind
MODEL_SUFFIXES = tuple(f".{k}" for k in MODEL_KINDS)
# The chips ESP-NN serves, each a target of the lowering (executorch_espnn's Target: its scratch
# sizes follow the chip's kernels); the board's MCU picks the default, the host board lowers
# for esp32s3 as before.
TARGETS = ("esp32", "esp32s2", "esp32s3", "esp32c3", "esp32c6", "esp32p4")
MCU_TO_TARGET = {**{t: t for t in TARGETS}, "host": "esp32s3"}

_TRUE = ("yes", "true", "1", "on")
_FALSE = ("no", "false", "0", "off")


class OptionError(Exception):
    """A custom_executorch_* option is wrong; str() is the one line the build prints."""


@dataclass(frozen=True)
class ModelOptions:
    model: Path  # absolute
    kind: str  # "py", "pt2" or "pte"
    calibration: Path | None
    strict: bool
    target: str
    target_from_board: bool
    selftest: int = 0  # samples embedded for EspnnModel::self_test()
    validation: Path | None = None  # absolute
    io: str = "float"  # one of IO_CHOICES
    name: str = ""  # "" for the one unnamed model (model_pte.h), else model_<name>_pte.h
    optimize: str = "speed"  # one of OPTIMIZE_CHOICES
    profile: bool = False  # custom_executorch_profile
    input_layout: str = "nchw"  # one of INPUT_LAYOUT_CHOICES

    def cache_fields(self) -> dict[str, str]:
        """The option values that change the lowering's output (paths are hashed as content)."""
        fields = {"kind": self.kind, "strict": str(self.strict), "target": self.target,
                  "selftest": str(self.selftest), "io": self.io}
        if self.optimize != "speed":  # the default keeps the cache keys of earlier builds
            fields["optimize"] = self.optimize
        if self.input_layout != INPUT_LAYOUT_CHOICES[0]:  # (absent by default, like optimize)
            fields["input_layout"] = self.input_layout
        if self.profile:  # (absent when off: an unprofiled build keeps its cache key)
            fields["profile"] = "yes"
        if self.name:  # the generated symbols carry it
            fields["name"] = self.name
        return fields


def _parse_bool(name: str, raw: str) -> bool:
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise OptionError(f"{name} = {raw}: unknown value; use `{name} = yes` or `{name} = no`")


def _defined_functions(path: Path) -> set[str]:
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except SyntaxError as exc:
        raise OptionError(
            f"{MODEL} = {path.name}: Python syntax error at line {exc.lineno}: {exc.msg}; "
            "fix the model file"
        ) from exc
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.ImportFrom, ast.Import)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def _resolve_file(project_dir: Path, name: str, raw: str) -> Path:
    path = Path(raw.strip()).expanduser()
    if not path.is_absolute():
        path = project_dir / path
    if not path.is_file():
        raise OptionError(
            f"{name} = {raw.strip()}: file not found ({path}); "
            "fix the path (relative paths start at the project folder)"
        )
    return path


def _npz_option(get: Callable[[str], str | None], project_dir: Path, kind: str, name: str,
                holds: str, pte_why: str) -> Path | None:
    """An optional data file option (calibration, validation): an existing .npz, for a model the
    build lowers (a ready .pte takes none: ``pte_why`` says why)."""
    raw = (get(name) or "").strip()
    if not raw:
        return None
    path = _resolve_file(project_dir, name, raw)
    if path.suffix != ".npz":
        raise OptionError(
            f"{name} = {raw}: expected a .npz file (numpy.savez of {holds}); convert the data "
            "with numpy.savez"
        )
    if kind == "pte":
        raise OptionError(
            f"{name} = {raw}: a ready .pte {pte_why}; remove {name} or point {MODEL} at the "
            ".py/.pt2 model"
        )
    return path


def parse(
    get: Callable[[str], str | None],
    all_names: list[str],
    project_dir: Path,
    board_mcu: str,
) -> ModelOptions | None:
    """Read the options through `get(name)`; None when the env names no model.

    `all_names` are every option name of the env, to catch misspelt custom_executorch_*.
    One model only: an env with several (`name = path` lines) is read with parse_models.
    """
    models = parse_models(get, all_names, project_dir, board_mcu)
    if len(models) > 1:
        raise OptionError(f"{MODEL}: {len(models)} models where one was expected")
    return models[0] if models else None


def parse_models(
    get: Callable[[str], str | None],
    all_names: list[str],
    project_dir: Path,
    board_mcu: str,
) -> list[ModelOptions]:
    """Every model of the env ([] when it names none): one unnamed model (`model = path`, the
    generated model_pte.h) or several named ones (one `name = path` per line)."""
    for name in all_names:
        if name.startswith(PREFIX) and name not in KNOWN:
            raise OptionError(
                f"{name}: unknown option; the executorch options are {', '.join(KNOWN)}"
            )
    raw_model = (get(MODEL) or "").strip()
    others = [n for n in (CALIBRATION, STRICT, TARGET, SELFTEST, VALIDATION, IO, SHARED_ARENA, PROFILE)
              if (get(n) or "").strip()]
    if not raw_model:
        if others:
            raise OptionError(
                f"{others[0]} is set but {MODEL} is not; add `{MODEL} = path/to/model.py`"
            )
        return []
    entries = model_entries(raw_model)
    if len(entries) == 1 and (get(SHARED_ARENA) or "").strip():
        raise OptionError(
            f"{SHARED_ARENA}: one model has nothing to share its arena with; remove "
            f"{SHARED_ARENA} or name several models (`{MODEL} =` one `name = path` per line)"
        )
    if len(entries) == 1 and not entries[0][0]:
        return [_parse_one(get, entries[0][1], project_dir, board_mcu)]
    shared_arena(get)  # a wrong yes/no stops here, before any lowering
    names = [n for n, _ in entries]
    per_model = {opt: _per_model_values(opt, get(opt) or "", names) for opt in PER_MODEL}
    models = []
    for name, raw_path in entries:
        def get_one(option: str, name: str = name) -> str | None:
            if option in PER_MODEL:
                return per_model[option].get(name)
            return get(option)

        models.append(replace(_parse_one(get_one, raw_path, project_dir, board_mcu), name=name))
    return models


_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def model_entries(raw: str) -> list[tuple[str, str]]:
    """custom_executorch_model's value: [("", path)] for one unnamed model, else [(name, path)]
    for `name = path` lines.  Names are C identifiers (they name the generated header and its
    symbols), unique even ignoring case (ESPNN_MODEL_<NAME>_* macros)."""
    lines = [ln.strip() for ln in raw.splitlines() if ln.strip()]
    named = [ln for ln in lines if "=" in ln]
    if not named:
        if len(lines) > 1:
            raise OptionError(
                f"{MODEL}: {len(lines)} models without names; give one `name = path` per line, "
                f"e.g. `{MODEL} =` then `  kws = {lines[0]}` on the next lines"
            )
        return [("", lines[0])]
    if len(named) != len(lines):
        plain = next(ln for ln in lines if "=" not in ln)
        raise OptionError(
            f"{MODEL}: `{plain}` has no name while other models have one; write it as "
            f"`name = {plain}` (every model of several needs a name)"
        )
    entries: list[tuple[str, str]] = []
    seen: dict[str, str] = {}
    for ln in lines:
        name, _, path = (part.strip() for part in ln.partition("="))
        if not _NAME_RE.fullmatch(name):
            raise OptionError(
                f"{MODEL}: model name `{name}` is not a C identifier; use letters, digits and "
                "_ (not starting with a digit), e.g. `kws = model/kws.py`"
            )
        if name.lower() in seen:
            raise OptionError(
                f"{MODEL}: model name `{name}` is used twice (as `{seen[name.lower()]}`; names must "
                "differ even ignoring case); give each model its own name"
            )
        if not path:
            raise OptionError(f"{MODEL}: model `{name}` has no path; write `{name} = path/to/model.py`")
        seen[name.lower()] = name
        entries.append((name, path))
    return entries


def _per_model_values(option: str, raw: str, names: list[str]) -> dict[str, str]:
    """name -> value of a per-model option with several models: `name = value` lines; a plain
    selftest number applies to every model; a plain path is ambiguous."""
    lines = [ln.strip() for ln in raw.splitlines() if ln.strip()]
    if not lines:
        return {}
    named = [ln for ln in lines if "=" in ln]
    if not named:
        if option == SELFTEST and len(lines) == 1:
            return dict.fromkeys(names, lines[0])
        example = f"{names[0]} = {lines[0]}"
        raise OptionError(
            f"{option} = {' '.join(lines)}: with several models, say which model it is for: one "
            f"`name = value` per line, e.g. `{option} =` then `  {example}`"
        )
    if len(named) != len(lines):
        plain = next(ln for ln in lines if "=" not in ln)
        raise OptionError(
            f"{option}: `{plain}` names no model; write `name = {plain}` with one of {', '.join(names)}"
        )
    values: dict[str, str] = {}
    for ln in lines:
        name, _, value = (part.strip() for part in ln.partition("="))
        if name not in names:
            raise OptionError(
                f"{option}: `{name}` is not a model of {MODEL} (its models: {', '.join(names)}); "
                "use one of those names"
            )
        if name in values:
            raise OptionError(f"{option}: model `{name}` is given twice; keep one `{name} = ...` line")
        values[name] = value
    return values


def shared_arena(get: Callable[[str], str | None]) -> bool:
    """custom_executorch_shared_arena (parse_models checked it goes with several models)."""
    return _parse_bool(SHARED_ARENA, get(SHARED_ARENA) or "no")


def _parse_one(
    get: Callable[[str], str | None],
    raw_model: str,
    project_dir: Path,
    board_mcu: str,
) -> ModelOptions:
    model = _resolve_file(project_dir, MODEL, raw_model)
    if model.suffix not in MODEL_SUFFIXES:
        raise OptionError(
            f"{MODEL} = {raw_model}: unsupported file type '{model.suffix}'; "
            "use a .py (model()/example_inputs()), a .pt2 (torch.export.save) or a .pte"
        )
    kind = model.suffix[1:]
    if kind == "py":
        defined = _defined_functions(model)
        for required in ("model", "example_inputs"):
            if required not in defined:
                raise OptionError(
                    f"{MODEL} = {raw_model}: the file defines no {required}(); add "
                    f"`def {required}():` returning "
                    + ("the torch.nn.Module" if required == "model" else "a tuple of example tensors")
                )

    calibration = _npz_option(get, project_dir, kind, CALIBRATION, "the input batches",
                              "is already quantized")

    strict = _parse_bool(STRICT, get(STRICT) or "no")
    selftest, validation = _selftest_options(get, project_dir, kind)
    io = _io_option(get, kind)
    optimize = _optimize_option(get, kind)
    input_layout = _input_layout_option(get, kind)
    prof = profile_option(get, kind)

    raw_target = (get(TARGET) or "").strip().lower()
    if raw_target:
        if raw_target not in TARGETS:
            raise OptionError(
                f"{TARGET} = {raw_target}: unknown target; use one of {', '.join(TARGETS)} "
                "(or remove it to follow the board)"
            )
        target, from_board = raw_target, False
    else:
        mcu = board_mcu.lower()
        if mcu not in MCU_TO_TARGET:
            raise OptionError(
                f"{TARGET}: board MCU '{board_mcu}' has no ESP-NN target; set "
                f"`{TARGET} = ` one of {', '.join(TARGETS)}"
            )
        target, from_board = MCU_TO_TARGET[mcu], True
    return ModelOptions(model, kind, calibration, strict, target, from_board, selftest, validation, io,
                        optimize=optimize, profile=prof, input_layout=input_layout)


def _choice_option(get: Callable[[str], str | None], kind: str, option: str, choices: tuple[str, ...],
                   uses: tuple[str, str], fixed: str) -> str:
    """A two-choice option whose first choice is the default: ``uses`` says what each choice
    does, ``fixed`` what a ready .pte has fixed, as a clause (which only the default then leaves alone)."""
    raw = (get(option) or "").strip()
    value = raw.lower() or choices[0]
    if value not in choices:
        raise OptionError(
            f"{option} = {raw}: unknown value; use `{option} = {choices[0]}` ({uses[0]}) or "
            f"`{option} = {choices[1]}` ({uses[1]})"
        )
    if value != choices[0] and kind == "pte":
        raise OptionError(
            f"{option} = {raw}: a ready .pte's {fixed}; point {MODEL} at the .py/.pt2 model or "
            f"remove {option}"
        )
    return value


def _optimize_option(get: Callable[[str], str | None], kind: str) -> str:
    """custom_executorch_optimize: speed (default) or ram (executorch_espnn.kernel_choice)."""
    return _choice_option(get, kind, OPTIMIZE, OPTIMIZE_CHOICES, (
        "the chip's fastest ESP-NN kernels, the default",
        "ESP-NN's ANSI kernel wherever a fast kernel's scratch sets the arena's peak: less RAM, "
        "slower layers"), "kernels are fixed")


def _input_layout_option(get: Callable[[str], str | None], kind: str) -> str:
    """custom_executorch_input_layout: nchw (default) or nhwc (executorch_espnn.input_layout)."""
    return _choice_option(get, kind, INPUT_LAYOUT, INPUT_LAYOUT_CHOICES, (
        "4-D inputs as the model takes them, [N, C, H, W], the default",
        "channels-last [N, H, W, C] inputs, e.g. camera RGB bytes, read by the first convolution "
        "with no transposing copy"),
        "input layout is fixed (one lowered with nhwc records it, and its model_pte.h says NHWC "
        "without this option)")


def profile_option(get: Callable[[str], str | None], kind: str = "py") -> bool:
    """custom_executorch_profile: yes or no (default).  A ready .pte carries no layer names."""
    raw = (get(PROFILE) or "").strip()
    value = _parse_bool(PROFILE, raw or "no")
    if value and kind == "pte":
        raise OptionError(
            f"{PROFILE} = {raw}: a ready .pte carries no layer names to profile against; point "
            f"{MODEL} at the .py/.pt2 model or remove {PROFILE}"
        )
    return value


def _io_option(get: Callable[[str], str | None], kind: str) -> str:
    """custom_executorch_io: float (default) or int8 (see executorch_espnn.program_io)."""
    raw = (get(IO) or "").strip()
    value = raw.lower() or "float"
    if value not in IO_CHOICES:
        raise OptionError(
            f"{IO} = {raw}: unknown value; use `{IO} = float` (float32 inputs and outputs, the "
            f"default) or `{IO} = int8` (the int8 values of the delegate's quantized side, scale "
            "and zero point in model_pte.h)"
        )
    if value != "float" and kind == "pte":
        raise OptionError(
            f"{IO} = {raw}: a ready .pte's inputs and outputs are fixed; point {MODEL} at the "
            f".py/.pt2 model or remove {IO}"
        )
    return value


def _selftest_options(
    get: Callable[[str], str | None], project_dir: Path, kind: str
) -> tuple[int, Path | None]:
    """custom_executorch_selftest (a whole number >= 0; the lowering checks it against the
    data and its maximum) and custom_executorch_validation (an .npz)."""
    raw = (get(SELFTEST) or "0").strip()
    if not re.fullmatch(r"[+-]?\d+", raw):
        raise OptionError(
            f"{SELFTEST} = {raw}: not a number of samples; give a whole number, e.g. "
            f"`{SELFTEST} = 4` (0 turns the self-test off)"
        )
    selftest = int(raw)
    if selftest < 0:
        raise OptionError(
            f"{SELFTEST} = {raw}: a negative number of samples; give a whole number, e.g. "
            f"`{SELFTEST} = 4` (0 turns the self-test off)"
        )
    if selftest and kind == "pte":
        raise OptionError(
            f"{SELFTEST} = {raw}: a ready .pte carries no model to compute the expected outputs "
            f"with; point {MODEL} at the .py/.pt2 model or remove {SELFTEST}"
        )
    validation = _npz_option(get, project_dir, kind, VALIDATION,
                             "arrays input0, input1, ... and optionally labels",
                             "carries no model to run it on")
    return selftest, validation


def runtime_choice(get: Callable[[str], str | None], is_host: bool) -> str:
    """custom_executorch_runtime: "source" or "wheel" (default: wheel on the host board, source
    on ESP boards, where it is the only choice)."""
    raw = (get(RUNTIME) or "").strip().lower()
    if not raw:
        return "wheel" if is_host else "source"
    if raw not in RUNTIME_CHOICES:
        raise OptionError(
            f"{RUNTIME} = {raw}: unknown value; use `{RUNTIME} = source` (ExecuTorch's runtime "
            f"compiled from its pinned sources) or `{RUNTIME} = wheel` (the executorch wheel's "
            "libraries, host board only)"
        )
    if raw == "wheel" and not is_host:
        raise OptionError(
            f"{RUNTIME} = wheel: the executorch wheel's libraries only run on this computer; ESP "
            f"boards compile the runtime from its sources: remove {RUNTIME} or set it to source"
        )
    return raw


def parse_env_options(options: Mapping[str, str], project_dir: Path, board_mcu: str) -> ModelOptions | None:
    """Convenience for tests and tools: options as a plain mapping."""
    return parse(options.get, list(options), project_dir, board_mcu)


@dataclass(frozen=True)
class StorageOptions:
    """custom_executorch_storage and custom_executorch_partition_size."""

    kind: str = "embedded"
    partition_size: int = 0  # bytes; 0: executorch_espnn.model_image.partition_size's rule

    @property
    def is_partition(self) -> bool:
        return self.kind == "partition"

    def cache_fields(self) -> dict[str, str]:
        return {"storage": self.kind, "partition_size": str(self.partition_size)}


_SIZE_RE = re.compile(r"(0x[0-9a-fA-F]+|\d+)\s*([kKmM]?)")


def parse_size(name: str, raw: str) -> int:
    """A byte count as partition tables write it: 1048576, 0x100000, 1024K or 1M."""
    m = _SIZE_RE.fullmatch(raw.strip())
    if m is None:
        raise OptionError(f"{name} = {raw.strip()}: not a size; give bytes, e.g. `{name} = 512K`, "
                          "`1M` or `0x80000`")
    digits = m.group(1)
    value = int(digits, 16 if digits.lower().startswith("0x") else 10) * {"": 1, "k": 1024, "m": 1024 * 1024}[m.group(2).lower()]
    return value


def storage_choice(get: Callable[[str], str | None], selftest: int = 0, n_models: int = 1,
                   profile: bool = False) -> StorageOptions:
    """custom_executorch_storage: "embedded" (the default) or "partition" (one model only)."""
    raw = (get(STORAGE) or "").strip().lower()
    raw_size = (get(PARTITION_SIZE) or "").strip()
    if not raw:
        raw = "embedded"
    if raw not in STORAGE_CHOICES:
        raise OptionError(
            f"{STORAGE} = {raw}: unknown value; use `{STORAGE} = embedded` (the model in the app "
            f"image) or `{STORAGE} = partition` (a flash partition of its own, written by "
            "`pio run -t uploadmodel`)"
        )
    if raw == "embedded":
        if raw_size:
            raise OptionError(f"{PARTITION_SIZE} is set but {STORAGE} is not partition; add "
                              f"`{STORAGE} = partition` or remove {PARTITION_SIZE}")
        return StorageOptions()
    if n_models > 1:
        raise OptionError(
            f"{STORAGE} = partition: the model partition holds one model and {MODEL} names "
            f"{n_models}; use `{STORAGE} = embedded` for several models, or one model per firmware"
        )
    if selftest:
        raise OptionError(
            f"{SELFTEST} = {selftest}: the self-test's expected outputs belong to one model, and "
            f"with {STORAGE} = partition the firmware runs whichever model is uploaded; remove "
            f"{SELFTEST} or use {STORAGE} = embedded"
        )
    if profile:
        raise OptionError(
            f"{PROFILE} = yes: the layer table belongs to one model, and with {STORAGE} = partition "
            f"the firmware runs whichever model is uploaded; profile with {STORAGE} = embedded, or "
            f"remove {PROFILE}"
        )
    size = 0
    if raw_size:
        size = parse_size(PARTITION_SIZE, raw_size)
        if size <= 0 or size % 4096:
            raise OptionError(f"{PARTITION_SIZE} = {raw_size}: a partition is a whole number of "
                              "4 KiB flash sectors; give a multiple of 4K, e.g. 512K")
    return StorageOptions("partition", size)


def parse_env_models(options: Mapping[str, str], project_dir: Path, board_mcu: str) -> list[ModelOptions]:
    """parse_models with the options as a plain mapping (tests and tools)."""
    return parse_models(options.get, list(options), project_dir, board_mcu)
