"""One model-artifact job: what `build_artifacts` makes, for which model, where, how.

The builder (and the idf.py route) fills it from the platformio.ini options (`from_options`),
writes it once as JSON and hands the file to the child process (`python -m
executorch_espnn.firmware --job job.json`), which reads it back with `read`.  Every choice is
checked against its one home, the option definitions (options.py).

Standard library only: the SCons process builds jobs on every build.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from ..errors import EspNNError
from . import options

JOB_VERSION = 1  # the JSON's "version": a child refuses a job written by another layout


class JobError(EspNNError):
    """A job file the child cannot use; str() names the file and the field."""


@dataclass(frozen=True)
class ArtifactJob:
    model: Path  # absolute
    kind: str  # one of options.MODEL_KINDS
    out: Path  # $BUILD_DIR/executorch (or a named model's folder): every file goes there
    target: str  # one of options.TARGETS
    strict: bool = False
    calibration: Path | None = None
    validation: Path | None = None
    selftest: int = 0
    io: str = options.IO_CHOICES[0]
    optimize: str = options.OPTIMIZE_CHOICES[0]
    input_layout: str = options.INPUT_LAYOUT_CHOICES[0]
    storage: str = options.STORAGE_CHOICES[0]
    partition_size: int = 0  # bytes; 0: the image + headroom
    name: str = ""  # a named model's generated files (several models)
    profile: bool = False  # custom_executorch_profile: the layer table in model_pte.h
    # the program's I/O in the delegate arena (lower(io_arena=...)); off where the I/O must
    # outlive other models' runs: a shared arena, a model loaded from a partition
    io_arena: bool = True
    model_option: str = options.MODEL  # how the messages name the model

    def __post_init__(self) -> None:
        for attr, choices in (("kind", options.MODEL_KINDS), ("target", options.TARGETS),
                              ("io", options.IO_CHOICES), ("optimize", options.OPTIMIZE_CHOICES),
                              ("input_layout", options.INPUT_LAYOUT_CHOICES),
                              ("storage", options.STORAGE_CHOICES)):
            value = getattr(self, attr)
            if value not in choices:
                raise JobError(f"job field {attr} = {value!r}: not one of {', '.join(choices)}")
        if self.selftest < 0 or self.partition_size < 0:
            raise JobError("job fields selftest and partition_size must be >= 0")

    @property
    def is_partition(self) -> bool:
        return self.storage == "partition"

    @classmethod
    def from_options(cls, opts: options.ModelOptions, out: Path,
                     storage: options.StorageOptions | None = None, shared_arena: bool = False) -> ArtifactJob:
        storage = storage or options.StorageOptions()
        return cls(model=opts.model, kind=opts.kind, out=out, target=opts.target,
                   strict=opts.strict, calibration=opts.calibration, validation=opts.validation,
                   selftest=opts.selftest, io=opts.io, optimize=opts.optimize,
                   input_layout=opts.input_layout, storage=storage.kind,
                   partition_size=storage.partition_size, name=opts.name, profile=opts.profile,
                   io_arena=not (shared_arena or storage.is_partition))

    def to_dict(self) -> dict[str, Any]:
        d = {k: str(v) if isinstance(v, Path) else v for k, v in asdict(self).items()}
        return {"version": JOB_VERSION, **d}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1)

    @classmethod
    def from_json(cls, text: str, where: str = "the job") -> ArtifactJob:
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise JobError(f"{where} is not JSON ({exc}); the builder writes it: rebuild") from exc
        if not isinstance(data, dict) or data.get("version") != JOB_VERSION:
            raise JobError(f"{where} is not a version-{JOB_VERSION} model-artifact job; "
                           "the builder and the package differ: reinstall executorch-espnn")
        known = {f.name: f for f in fields(cls)}
        unknown = sorted(set(data) - set(known) - {"version"})
        missing = sorted(n for n in ("model", "kind", "out", "target") if n not in data)
        if unknown or missing:
            raise JobError(f"{where}: " + "; ".join(
                [*([f"unknown field(s) {', '.join(unknown)}"] if unknown else []),
                 *([f"missing field(s) {', '.join(missing)}"] if missing else [])]))
        values: dict[str, Any] = {}
        for name, value in data.items():
            if name == "version":
                continue
            if name in ("model", "out", "calibration", "validation"):
                ok = isinstance(value, str) or (value is None and name in ("calibration", "validation"))
                values[name] = Path(value) if isinstance(value, str) else None
            elif name in ("strict", "profile", "io_arena"):
                ok = isinstance(value, bool)
                values[name] = value
            elif name in ("selftest", "partition_size"):
                ok = isinstance(value, int) and not isinstance(value, bool)
                values[name] = value
            else:
                ok = isinstance(value, str)
                values[name] = value
            if not ok:
                raise JobError(f"{where}: field {name} = {value!r} has the wrong type")
        try:
            return cls(**values)
        except JobError as exc:
            raise JobError(f"{where}: {exc}") from exc

    @classmethod
    def read(cls, path: Path) -> ArtifactJob:
        try:
            text = path.read_text(encoding="utf8")
        except OSError as exc:
            raise JobError(f"cannot read the job file {path}: {exc.strerror or exc}") from exc
        return cls.from_json(text, f"the job file {path}")

    def write(self, path: Path) -> None:
        path.write_text(self.to_json(), encoding="utf8")
