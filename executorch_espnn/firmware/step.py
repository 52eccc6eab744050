"""The model step: run the model-artifact step (artifact.build_artifacts, in a child process) for
the model named in platformio.ini when, and only when, it changed.

Runs while SCons reads the build scripts, before anything compiles, because espressif32's
ESP-IDF builder reads the CMake code model (which must already contain the generated model
component) at that point too; one mechanism then serves every framework.  The decision to
relower is a content-hash key over: the model file and the data files next to it named after it
(model/ds_cnn.weights.pt, the weights model/ds_cnn.py loads), the calibration and validation
data, the options, the installed executorch-espnn / ExecuTorch / torch / torchao versions (plus
the package's source when it runs from a checkout) and this step's own driver and templates.
The key is stored in $BUILD_DIR/executorch/stamp.json next to the outputs; nothing is written
outside that folder but the job file, a temporary file for the child's lifetime.

Standard library only at the top: the builder (SCons) and scripts/espnn_idf_model.py import it.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import resources
from . import render
from .job import ArtifactJob
from .model_info import ModelInfo, ModelInfoError
from .options import ModelOptions, StorageOptions

HERE = Path(__file__).resolve().parent
PACKAGE = "executorch_espnn"
DRIVER_MODULE = "executorch_espnn.firmware"  # its __main__: `--job job.json`


def runner() -> Path:
    """builder/espnn_pio/checkout.py: runs a module of a platform checkout's package (or of the
    installed one), as the builder's other child processes do."""
    return resources.path("builder", "espnn_pio", "checkout.py")


# what the child process runs: a change to these relowers (the rest of the builder does not)
STEP_FILES = tuple(HERE / f for f in ("__main__.py", "artifact.py", "job.py", "model_info.py",
                                      "options.py", "pte_meta.py", "render.py"))
OUT_SUBDIR = "executorch"


class StepError(Exception):
    """The model step failed; str() is the line to print."""


@dataclass(frozen=True)
class StepPaths:
    out: Path
    name: str = ""  # a named model (several in one firmware): its own files and symbols

    @property
    def pte(self) -> Path:
        return self.out / "model.pte"

    @property
    def info(self) -> Path:
        return self.out / "model_info.json"

    @property
    def stamp(self) -> Path:
        return self.out / "stamp.json"

    @property
    def gen(self) -> Path:
        return self.out / render.generated_subdir(self.name)

    @property
    def header(self) -> Path:
        return self.gen / render.named("model_pte.h", self.name)

    @property
    def source(self) -> Path:
        return self.gen / render.named("model_pte_data.S", self.name)

    @property
    def image(self) -> Path:
        """custom_executorch_storage = partition: the model image uploadmodel writes."""
        return self.out / "model.img"

    def outputs(self, storage: StorageOptions | None = None) -> list[Path]:
        if storage is not None and storage.is_partition:
            return [self.pte, self.info, self.image,
                    *(self.gen / render.named(n, self.name) for n in render.OUTPUTS if n not in render.EMBEDDED_ONLY)]
        return [self.pte, self.info, *(self.gen / render.named(n, self.name) for n in render.OUTPUTS)]


MODELS_SUBDIR = "models"  # $BUILD_DIR/executorch/models/<name>/: each of several models


def paths_for(executorch_out: Path, opts: ModelOptions) -> StepPaths:
    """Where a model's step writes: $BUILD_DIR/executorch itself for the one unnamed model (as
    always), $BUILD_DIR/executorch/models/<name> for each of several; each has its own cache."""
    if not opts.name:
        return StepPaths(executorch_out)
    return StepPaths(executorch_out / MODELS_SUBDIR / opts.name, opts.name)


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fp:
        for block in iter(lambda: fp.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


_VERSION_RE = re.compile(r"""^__version__\s*=\s*['"]([^'"]+)['"]""", re.M)


def _module_version(module: str) -> str:
    """A package's version without importing it (importing torch here would cost seconds)."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        return "missing"
    for loc in spec.submodule_search_locations:
        vfile = Path(loc) / "version.py"
        if vfile.is_file():
            m = _VERSION_RE.search(vfile.read_text(encoding="utf8", errors="replace"))
            if m:
                return m.group(1)
        return f"at {loc}"
    return "unknown"


def checkout_package_dir(platform_dir: Path) -> Path | None:
    """executorch_espnn inside the platform folder (a repository checkout), if any (as
    builder/espnn_pio/checkout.py finds it)."""
    pkg = platform_dir / PACKAGE
    return pkg if (pkg / "__init__.py").is_file() else None


def model_data_files(model: Path) -> list[Path]:
    """The files next to the model file named after it (ds_cnn.weights.pt next to ds_cnn.py):
    data the model file loads, so a change to one relowers."""
    pattern = f"{glob.escape(model.stem)}.*"
    return sorted(p for p in model.parent.glob(pattern) if p.is_file() and p.name != model.name)


def _tree_hash(root: Path, patterns: Iterable[str]) -> str:
    h = hashlib.sha256()
    files = sorted({p for pat in patterns for p in root.rglob(pat) if "__pycache__" not in p.parts})
    for f in files:
        h.update(str(f.relative_to(root)).encode())
        h.update(f.read_bytes())
    return h.hexdigest()


def cache_key(opts: ModelOptions, platform_dir: Path) -> dict[str, Any]:
    pkg_dir = checkout_package_dir(platform_dir)
    package = (
        {"source": _tree_hash(pkg_dir, ["*.py"])}
        if pkg_dir is not None
        else {"version": _module_version("executorch_espnn")}
    )
    templates = resources.templates_dir()
    key: dict[str, Any] = {
        "model": _sha256_file(opts.model),
        "calibration": _sha256_file(opts.calibration) if opts.calibration else None,
        "validation": _sha256_file(opts.validation) if opts.validation else None,
        "options": opts.cache_fields(),
        "versions": {
            "executorch_espnn": package,
            "executorch": _module_version("executorch"),
            "torch": _module_version("torch"),
            "torchao": _module_version("torchao"),
        },
        "step": {f.name: _sha256_file(f) for f in (*STEP_FILES, runner())},
        "templates": {
            **{n: _sha256_file(templates / t) for n, t in render.OUTPUTS.items()},
            **{t: _sha256_file(templates / t) for t in render.INCLUDES},
        },
    }
    data = model_data_files(opts.model)
    if data:  # a model file without data files keeps its old key
        key["model_data"] = {f.name: _sha256_file(f) for f in data}
    return key


def is_up_to_date(paths: StepPaths, key: dict[str, Any], storage: StorageOptions | None = None) -> bool:
    if not all(p.is_file() for p in paths.outputs(storage)) or not paths.stamp.is_file():
        return False
    try:
        return bool(json.loads(paths.stamp.read_text(encoding="utf8")) == key)
    except ValueError:
        return False


def subprocess_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def run(opts: ModelOptions, paths: StepPaths, python: str, platform_dir: Path,
        storage: StorageOptions | None = None, shared_arena: bool = False) -> bool:
    """Lower if needed.  Returns True when it ran; raises StepError with one line on failure.
    ``shared_arena``: the model shares its delegate arena with others, so its I/O stays in
    ExecuTorch's planned memory (ArtifactJob.io_arena)."""
    key = cache_key(opts, platform_dir)
    if storage is not None and storage.is_partition:  # embedded builds keep their old key
        key["storage"] = storage.cache_fields()
    if shared_arena:
        key["shared_arena"] = True
    if is_up_to_date(paths, key, storage):
        return False
    paths.out.mkdir(parents=True, exist_ok=True)
    paths.stamp.unlink(missing_ok=True)
    job = ArtifactJob.from_options(opts, paths.out, storage, shared_arena)
    with tempfile.TemporaryDirectory(prefix="espnn-job-") as tmp:
        job_file = Path(tmp) / "job.json"
        job.write(job_file)
        _run_child([python, str(runner()), str(platform_dir), DRIVER_MODULE, "--job", str(job_file)])
    paths.stamp.write_text(json.dumps(key, sort_keys=True), encoding="utf8")
    return True


def _run_child(cmd: list[str]) -> None:
    """Run the child, showing its progress as it happens; StepError with its last Error: line."""
    last_error = ""
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=subprocess_env(),
        text=True,
        errors="replace",
    )
    assert proc.stdout is not None
    for line in proc.stdout:  # show the lowering's progress as it happens
        if line.startswith("Error: "):
            last_error = line[len("Error: "):].strip()
            continue
        if _is_noise(line):
            continue
        sys.stdout.write(line)
        sys.stdout.flush()
    rc = proc.wait()
    if rc != 0:
        raise StepError(last_error or f"the model step failed (exit code {rc}); run `pio run -v` for details")


# Known harmless noise from importing torchao/torch in the child (see PREAMBLE).
_NOISE = (
    re.compile(r"^Failed to load .*torchao.*\.so"),
    re.compile(r"^W\d{4} .*_pytree\.py.*KernelPreference"),
    re.compile(r"^\s*return cls\.__new__\(cls, \*args\)\s*$"),
)


def _is_noise(line: str) -> bool:
    return any(p.search(line) for p in _NOISE)


def load_info(paths: StepPaths) -> ModelInfo:
    try:
        return ModelInfo.read(paths.info)
    except ModelInfoError as exc:
        raise StepError(f"{paths.info}: {exc}") from exc
