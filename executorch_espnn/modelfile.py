"""Load what the CLI and the PlatformIO model step are pointed at.

Three kinds of model file:

- ``model.py`` defining ``model() -> torch.nn.Module``, ``example_inputs() -> tuple`` and
  optionally ``calibration_data() -> Iterable[tuple]`` (each batch shaped like the example
  inputs);
- ``model.pt2`` written by ``torch.export.save`` (its example inputs are used);
- ``model.pte``, an already lowered program: only reported on, it must contain an
  ``EspNNDelegateBackend`` delegate.

Calibration data can also come from an ``.npz`` file (``--calibration`` on the command line,
``custom_executorch_calibration`` in platformio.ini): one array per model input, named
``input0``, ``input1``, …, each with a leading axis over the batches, i.e. of shape
``(n_batches, *example_input.shape)``.  Batch ``i`` is ``(input0[i], input1[i], …)``.

Every problem raises ``ModelFileError`` or ``CalibrationError`` with the file (and line, for
errors inside a ``.py``) and what to do.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
import traceback
import types
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .errors import CalibrationError, EspNNError, ModelFileError, PteError, ValidationDataError

if TYPE_CHECKING:
    import torch
    from torch.export import ExportedProgram

ModelKind = Literal["py", "pt2", "pte"]
KINDS: dict[str, ModelKind] = {".py": "py", ".pt2": "pt2", ".pte": "pte"}
NPZ_KEY = "input{}"


@dataclass
class ModelSource:
    """A loaded model file: a module or exported program to lower, or a ready .pte."""

    path: Path
    kind: ModelKind
    model: torch.nn.Module | ExportedProgram | None = None  # None for a .pte
    example_inputs: tuple[Any, ...] | None = None
    calibration: list[tuple[Any, ...]] | None = None  # None: not given (random calibration)
    calibration_source: str | None = None  # "calibration_data()" or the .npz path
    pte: bytes | None = None
    validation: ValidationData | None = None  # held-out samples (a validation .npz)


def load_model_file(
    path: str | Path, calibration: str | Path | None = None, validation: str | Path | None = None
) -> ModelSource:
    """Load ``path`` (.py/.pt2/.pte); ``calibration`` is an optional .npz that overrides the
    model file's own ``calibration_data()``; ``validation`` an optional .npz of held-out
    samples (see :func:`load_validation_npz`)."""
    p = Path(path)
    if not p.is_file():
        what = "is a directory, not a file" if p.is_dir() else "does not exist"
        raise ModelFileError(
            f"model file {p} {what}; pass a .py (defining model() and example_inputs()), "
            "a .pt2 (torch.export.save) or a .pte file"
        )
    kind = KINDS.get(p.suffix.lower())
    if kind is None:
        raise ModelFileError(
            f"model file {p}: unsupported extension '{p.suffix}'; use .py (model()/example_inputs()), "
            ".pt2 (torch.export.save) or .pte (an already lowered program)"
        )
    if kind == "pte":
        if validation is not None:
            raise ValidationDataError(
                f"{p} is an already lowered .pte: validation data needs the model; pass the "
                ".py or .pt2 model instead"
            )
        if calibration is not None:
            raise CalibrationError(
                f"{p} is an already lowered .pte: calibration data cannot change it; "
                "pass the .py or .pt2 model to lower it again with calibration"
            )
        return _load_pte(p)
    src = _load_py(p) if kind == "py" else _load_pt2(p)
    if calibration is not None:
        assert src.example_inputs is not None
        src.calibration = load_calibration_npz(calibration, src.example_inputs)
        src.calibration_source = str(calibration)
    if validation is not None:
        assert src.example_inputs is not None
        src.validation = load_validation_npz(validation, src.example_inputs)
    return src


def load_weights(net: torch.nn.Module, path: str | Path, regenerate: str | None = None) -> torch.nn.Module:
    """Load a state_dict saved with ``torch.save`` at ``path`` into ``net``; return it in eval mode.

    For model files that ship their trained weights as data beside them (as the examples do:
    float training rounds differently on other CPUs, so training at build time gives other
    weights on another machine).  ``regenerate`` is the command that rewrites the file; the
    error for a missing one names it.  Tensors only (``weights_only=True``): a weights file
    cannot run code.
    """
    import torch

    p = Path(path)
    how = f": regenerate it with `{regenerate}`" if regenerate else ""
    if not p.is_file():
        raise ModelFileError(f"{p} is missing: the trained weights {type(net).__name__} loads{how}")
    try:
        state = torch.load(p, weights_only=True, map_location="cpu")
    except Exception as exc:  # a truncated zip, a pickle of objects, another format
        raise ModelFileError(f"{p} is not a state_dict torch.load can read ({_first_line(exc)}){how}") from exc
    if not isinstance(state, dict):
        raise ModelFileError(f"{p} holds a {type(state).__name__}, not a state_dict{how}")
    try:
        net.load_state_dict(state)
    except RuntimeError as exc:  # missing/unexpected keys or a shape that changed with the net
        raise ModelFileError(
            f"{p} does not fit {type(net).__name__} (the net changed since it was saved?): "
            f"{' '.join(str(exc).split())}{how}") from exc
    return net.eval()


# ---------------------------------------------------------------------------------------------
# .py


def _where(p: Path, exc: BaseException) -> str:
    """``file:line`` of the innermost frame of ``exc`` inside the model file, else the file."""
    target = str(p.resolve())
    line = None
    for fs in traceback.extract_tb(exc.__traceback__):
        if fs.filename and str(Path(fs.filename).resolve()) == target:
            line = fs.lineno
    return f"{p}:{line}" if line else str(p)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__


def _import_py(p: Path) -> types.ModuleType:
    # A stable, unique module name per file; registered in sys.modules so that dataclasses,
    # pickling and torch's tracing can resolve the model's classes.
    name = "_espnn_model_" + hashlib.sha256(str(p.resolve()).encode()).hexdigest()[:16]
    spec = importlib.util.spec_from_file_location(name, p)
    if spec is None or spec.loader is None:
        raise ModelFileError(f"model file {p} cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    try:
        code = compile(p.read_bytes(), str(p), "exec")
    except SyntaxError as exc:
        raise ModelFileError(
            f"{p}:{exc.lineno}: syntax error in the model file: {exc.msg}; fix it and run again"
        ) from None
    # the model file may import helpers next to it
    parent = str(p.resolve().parent)
    added = parent not in sys.path
    if added:
        sys.path.insert(0, parent)
    sys.modules[name] = module
    try:
        exec(code, module.__dict__)
    except Exception as exc:
        sys.modules.pop(name, None)
        raise ModelFileError(
            f"{_where(p, exc)}: importing the model file failed: {_first_line(exc)}; "
            "fix the model file (or install what it imports) and run again"
        ) from exc
    finally:
        if added and parent in sys.path:
            sys.path.remove(parent)
    return module


def _call(p: Path, module: types.ModuleType, fname: str, hint: str) -> Any:
    fn = getattr(module, fname, None)
    if fn is None:
        raise ModelFileError(f"{p} defines no {fname}() function; {hint}")
    if not callable(fn):
        raise ModelFileError(f"{p}: {fname} is a {type(fn).__name__}, not a function; {hint}")
    try:
        return fn()
    except Exception as exc:
        err: type[ModelFileError] | type[CalibrationError] = (
            CalibrationError if fname == "calibration_data" else ModelFileError
        )
        raise err(f"{_where(p, exc)}: {fname}() raised {_first_line(exc)}") from exc


def _describe(x: object) -> str:
    import torch

    if isinstance(x, torch.Tensor):
        return f"a tensor of shape {tuple(x.shape)} and dtype {x.dtype}"
    return f"a {type(x).__name__}"


def _check_example_inputs(where: str, value: object) -> tuple[Any, ...]:
    import torch

    if isinstance(value, list):
        value = tuple(value)
    if not isinstance(value, tuple) or not value:
        raise ModelFileError(
            f"{where}: example_inputs() must return a non-empty tuple of tensors, got "
            f"{_describe(value)}; wrap a single tensor as (x,)"
        )
    for i, x in enumerate(value):
        if not isinstance(x, torch.Tensor):
            raise ModelFileError(
                f"{where}: example_inputs()[{i}] is {_describe(x)}; every model input must be a tensor"
            )
    return value


def check_calibration(
    batches: Iterable[object], example_inputs: tuple[Any, ...], source: str
) -> list[tuple[Any, ...]]:
    """Materialise calibration batches, each a tuple matching the example inputs exactly
    (the program is exported with static shapes)."""
    import torch

    out: list[tuple[Any, ...]] = []
    for index, batch in enumerate(batches):
        if isinstance(batch, torch.Tensor):
            batch = (batch,)
        if isinstance(batch, list):
            batch = tuple(batch)
        if not isinstance(batch, tuple) or len(batch) != len(example_inputs):
            got = f"{len(batch)} inputs" if isinstance(batch, tuple) else _describe(batch)
            raise CalibrationError(
                f"{source}: batch {index} has {got}; each batch must be a tuple of "
                f"{len(example_inputs)} tensor(s) shaped like example_inputs()"
            )
        for i, (got_t, want) in enumerate(zip(batch, example_inputs, strict=True)):
            if (not isinstance(got_t, torch.Tensor) or got_t.shape != want.shape
                    or got_t.dtype != want.dtype):
                raise CalibrationError(
                    f"{source}: batch {index}, input {i} is {_describe(got_t)}, expected "
                    f"{_describe(want)} like example_inputs(); give every calibration batch "
                    "exactly the example inputs' shapes and dtypes"
                )
        out.append(batch)
    if not out:
        raise CalibrationError(
            f"{source}: no calibration batches; provide at least one, or remove it to "
            "calibrate on random data (the report then warns that accuracy is unknown)"
        )
    return out


def _load_py(p: Path) -> ModelSource:
    import torch

    module = _import_py(p)
    m = _call(p, module, "model", "add `def model() -> torch.nn.Module` returning the network to lower")
    if not isinstance(m, torch.nn.Module):
        hint = " (return an instance, e.g. `return Net()`, not the class)" if isinstance(m, type) else ""
        raise ModelFileError(
            f"{p}: model() returned {_describe(m)}, expected a torch.nn.Module{hint}"
        )
    ex = _check_example_inputs(
        str(p),
        _call(p, module, "example_inputs",
              "add `def example_inputs() -> tuple` returning one input tuple, e.g. "
              "`return (torch.randn(1, 3, 96, 96),)`"),
    )
    src = ModelSource(p, "py", model=m, example_inputs=ex)
    calib_fn: Callable[[], Iterable[object]] | None = getattr(module, "calibration_data", None)
    if calib_fn is not None:
        batches = _call(p, module, "calibration_data", "")
        if not isinstance(batches, Iterable) or isinstance(batches, torch.Tensor):
            raise CalibrationError(
                f"{p}: calibration_data() returned {_describe(batches)}; return a list (or "
                "generator) of input tuples shaped like example_inputs()"
            )
        try:
            src.calibration = check_calibration(batches, ex, f"{p}: calibration_data()")
        except CalibrationError:
            raise
        except Exception as exc:  # a generator failing half-way
            raise CalibrationError(f"{_where(p, exc)}: calibration_data() raised {_first_line(exc)}") from exc
        src.calibration_source = "calibration_data()"
    return src


# ---------------------------------------------------------------------------------------------
# .pt2 / .pte


def _load_pt2(p: Path) -> ModelSource:
    import torch

    save_hint = "write it with torch.export.save(torch.export.export(model, example_inputs), path)"
    if not zipfile.is_zipfile(p):
        raise ModelFileError(f"{p} is not a torch.export archive; {save_hint}")
    try:
        ep = torch.export.load(p)
    except Exception as exc:
        raise ModelFileError(f"{p} could not be loaded by torch.export.load: {_first_line(exc)}; {save_hint}") from exc
    ex = ep.example_inputs
    if ex is None:
        raise ModelFileError(f"{p} carries no example inputs; {save_hint}")
    args, kwargs = ex
    if kwargs:
        raise ModelFileError(
            f"{p} was exported with keyword inputs {sorted(kwargs)}; export it with positional inputs only"
        )
    return ModelSource(p, "pt2", model=ep, example_inputs=_check_example_inputs(str(p), tuple(args)))


def _load_pte(p: Path) -> ModelSource:
    from .pte import BACKEND_ID, backend_ids

    data = p.read_bytes()
    ids = backend_ids(data)  # raises PteError for what is not a .pte
    if BACKEND_ID not in ids:
        found = ", ".join(sorted(set(ids))) if ids else "no delegate at all"
        raise PteError(
            f"{p} contains no {BACKEND_ID} delegate (found: {found}); lower the model with "
            "executorch_espnn (python -m executorch_espnn build model.py) to get one"
        )
    return ModelSource(p, "pte", pte=data)


# ---------------------------------------------------------------------------------------------
# .npz calibration


def load_calibration_npz(path: str | Path, example_inputs: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    """Batches from an .npz holding ``input0``, ``input1``, … of shape ``(n, *input.shape)``."""
    p = Path(path)
    batches, _ = _load_npz_samples(p, example_inputs, "calibration", "batch", CalibrationError)
    return check_calibration(batches, example_inputs, f"calibration file {p}")


@dataclass
class ValidationData:
    """Held-out samples (``lower(..., validation=...)``, ``--validation``,
    ``custom_executorch_validation``): input tuples like the example inputs and, optionally,
    one label per sample.  The self-test takes its inputs from here first."""

    samples: list[tuple[Any, ...]]
    labels: Any = None  # a numpy array with one entry per sample, or None
    source: str = "validation data"

    def __len__(self) -> int:
        return len(self.samples)


LABELS_KEY = "labels"


def load_validation_npz(path: str | Path, example_inputs: tuple[Any, ...]) -> ValidationData:
    """Samples from an .npz laid out like the calibration file (``input0``, ``input1``, … of
    shape ``(n_samples, *input.shape)``), plus an optional ``labels`` array of length n."""
    p = Path(path)
    samples, labels = _load_npz_samples(p, example_inputs, "validation", "sample",
                                        ValidationDataError, extra=(LABELS_KEY,))
    if not samples:
        raise ValidationDataError(
            f"validation file {p}: no samples (the arrays have length 0); give at least one"
        )
    if labels is not None and (labels.ndim != 1 or labels.shape[0] != len(samples)):
        raise ValidationDataError(
            f"validation file {p}: {LABELS_KEY} has shape {tuple(labels.shape)}, expected one "
            f"label per sample ({len(samples)},)"
        )
    if labels is not None:
        check_label_dtype(labels, f"validation file {p}")
    return ValidationData(samples, labels, f"validation file {p}")


def check_label_dtype(labels: Any, source: str) -> None:
    """Labels are class indices: an integer array, or ValidationDataError naming the fix."""
    import numpy as np

    if not np.issubdtype(labels.dtype, np.integer):
        raise ValidationDataError(
            f"{source}: labels has dtype {labels.dtype}; give one integer class index per sample "
            "(e.g. labels=y.astype(np.int64)), the index the model's arg-max should select"
        )


def _load_npz_samples(
    p: Path,
    example_inputs: tuple[Any, ...],
    role: str,
    unit: str,  # what one entry along the leading axis is: "batch" or "sample"
    error: type[EspNNError],
    extra: tuple[str, ...] = (),
) -> tuple[list[tuple[Any, ...]], Any]:
    """Samples ``(input0[i], input1[i], …)`` from an .npz, and the ``extra`` array if present
    (only one extra key is supported: the labels)."""
    import numpy as np
    import torch

    units = unit + ("es" if unit.endswith("ch") else "s")
    if not p.is_file():
        raise error(f"{role} file {p} does not exist; pass an .npz file (arrays input0, input1, …)")
    if p.suffix.lower() != ".npz":
        raise error(
            f"{role} file {p}: expected an .npz (numpy.savez) with arrays input0, input1, …; "
            f"got '{p.suffix}'"
        )
    try:
        with np.load(p, allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in npz.files}
    except Exception as exc:
        raise error(f"{role} file {p} could not be read as .npz: {_first_line(exc)}") from exc
    want = [NPZ_KEY.format(i) for i in range(len(example_inputs))]
    missing = [k for k in want if k not in arrays]
    unexpected = sorted(set(arrays) - set(want) - set(extra))
    if missing or unexpected:
        also = f" (and optionally {', '.join(extra)})" if extra else ""
        raise error(
            f"{role} file {p}: the model has {len(example_inputs)} input(s), so the .npz must "
            f"hold exactly {', '.join(want)}{also} (missing: {missing or 'none'}, unexpected: "
            f"{unexpected or 'none'})"
        )
    n = None
    tensors = []
    for key, ex in zip(want, example_inputs, strict=True):
        a = arrays[key]
        shape = tuple(ex.shape)
        if a.ndim != len(shape) + 1 or tuple(a.shape[1:]) != shape:
            raise error(
                f"{role} file {p}: {key} has shape {tuple(a.shape)}, expected (n_{units}, "
                f"{', '.join(map(str, shape))}): a leading {unit} axis over example input {shape}"
            )
        if n is not None and a.shape[0] != n:
            raise error(
                f"{role} file {p}: {key} has {a.shape[0]} {units}, input0 has {n}; every "
                f"array needs the same number of {units}"
            )
        n = a.shape[0]
        t = torch.from_numpy(np.ascontiguousarray(a))
        if (t.dtype.is_floating_point != ex.dtype.is_floating_point
                or (t.dtype == torch.bool) != (ex.dtype == torch.bool)):
            raise error(
                f"{role} file {p}: {key} has dtype {a.dtype}, the model input is {ex.dtype}"
            )
        tensors.append(t.to(ex.dtype))
    samples = [tuple(t[i] for t in tensors) for i in range(n or 0)]
    return samples, (arrays[extra[0]] if extra and extra[0] in arrays else None)
