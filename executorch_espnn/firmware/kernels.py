"""The kernel step: after the model step, for builds that compile ExecuTorch's runtime from its
sources (ESP boards, and the host board with `custom_executorch_runtime = source`), the model's
CPU kernels and their selective registration (kernel_driver.py, run as a child process) in
$BUILD_DIR/executorch/kernels/.

It runs while SCons reads the build scripts, like the model step: espressif32's ESP-IDF builder
runs CMake at that point, and the generated `executorch` component lists the registration.  It
reruns only when its content key changes: the .pte, the runtime source list, the driver, its
template, the codegen templates, the package's selective/runtime_sources modules and the
ExecuTorch version; a no-op build reads kernels.json and nothing else.

Standard library only at the top: the builder (SCons) and scripts/espnn_idf_model.py import it.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import resources
from . import step as model_step
from .kernel_driver import CMAKE_NAME, CMAKE_TEMPLATE, JSON_NAME

SUBDIR = "kernels"  # under $BUILD_DIR/executorch/
STAMP = "stamp.json"
# the package modules whose output the step writes (checkout or installed copy)
PACKAGE_MODULES = ("selective.py", "runtime_sources.py", "rendering.py")


class KernelStepError(Exception):
    """The kernel step failed; str() is the line to print."""


@dataclass(frozen=True)
class Kernels:
    """What a build compiles for the model's CPU operators."""

    dir: Path
    operators: tuple[str, ...]
    registered: int  # the runtime's MAX_KERNEL_NUM
    sources: tuple[str, ...]  # kernel sources, relative to an ExecuTorch tree

    @property
    def registration(self) -> Path:
        return self.dir / "RegisterCodegenUnboxedKernels.cpp"

    @property
    def cmake(self) -> Path:
        return self.dir / CMAKE_NAME


DRIVER = Path(__file__).resolve().with_name("kernel_driver.py")
DRIVER_MODULE = "executorch_espnn.firmware.kernel_driver"


def _package_dir(platform_dir: Path) -> Path | None:
    pkg = model_step.checkout_package_dir(platform_dir)
    if pkg is not None:
        return pkg
    import importlib.util

    spec = importlib.util.find_spec(model_step.PACKAGE)
    return Path(spec.origin).parent if spec is not None and spec.origin else None


def cache_key(pte: Path | list[Path], list_file: Path, platform_dir: Path) -> dict[str, Any]:
    sha = model_step._sha256_file
    ptes = pte if isinstance(pte, list) else [pte]
    pkg = _package_dir(platform_dir)
    templates = resources.templates_dir()
    codegen = templates / "executorch_codegen"
    return {
        # one model keeps its key's form; several: each .pte, in the options' order
        **({"pte": sha(ptes[0])} if len(ptes) == 1 else {"ptes": [sha(p) for p in ptes]}),
        "list": sha(list_file),
        "driver": sha(DRIVER),
        "template": sha(templates / CMAKE_TEMPLATE),
        "codegen": {str(p.relative_to(codegen)): sha(p)
                    for p in sorted(codegen.rglob("*")) if p.is_file()},
        "package": {m: sha(pkg / m) if pkg is not None and (pkg / m).is_file() else None
                    for m in PACKAGE_MODULES},
        "executorch": model_step._module_version("executorch"),
    }


def _load(out: Path) -> Kernels:
    data = json.loads((out / JSON_NAME).read_text(encoding="utf8"))
    return Kernels(out, tuple(data["operators"]), int(data["registered_kernels"]),
                   tuple(data["kernel_sources"]))


def run(model_out: Path, list_file: Path, python: str, platform_dir: Path,
        ptes: list[Path] | None = None) -> tuple[Kernels, bool]:
    """The model's kernels (model_out: $BUILD_DIR/executorch), regenerated only when the key
    changed; (kernels, whether it ran).  `ptes`: several models' programs, registered together
    (default: model_out/model.pte).  Raises KernelStepError with one line."""
    out = model_out / SUBDIR
    ptes = ptes or [model_out / "model.pte"]
    key = cache_key(ptes, list_file, platform_dir)
    stamp = out / STAMP
    try:
        if json.loads(stamp.read_text(encoding="utf8")) == key:
            return _load(out), False
    except (OSError, ValueError, KeyError):
        pass
    out.mkdir(parents=True, exist_ok=True)
    stamp.unlink(missing_ok=True)
    cmd = [python, str(model_step.runner()), str(platform_dir), DRIVER_MODULE,
           *(a for p in ptes for a in ("--pte", str(p))), "--list", str(list_file), "--out", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace",
                          env=model_step.subprocess_env(), check=False)
    errors = [ln[len("Error: "):] for ln in proc.stderr.splitlines() if ln.startswith("Error: ")]
    if proc.returncode != 0:
        tail = "; ".join(proc.stderr.strip().splitlines()[-3:])
        raise KernelStepError(errors[-1] if errors else
                              f"the kernel step failed (exit code {proc.returncode}): {tail}")
    for line in proc.stdout.splitlines():
        if line.startswith("executorch: "):
            print(line)
    stamp.write_text(json.dumps(key, sort_keys=True), encoding="utf8")
    return _load(out), True
