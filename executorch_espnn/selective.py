"""Selective kernel registration: firmware registers (and so links) only the CPU kernels its
model calls.

The operators that stay on the CPU are read from the ``.pte`` with ExecuTorch's own
``gen_oplist`` (delegated work is inside the delegate payload and calls no kernel), or taken
from a ``selected_operators.yaml`` that ``gen_oplist`` wrote (the ``executorch-espnn build``
CLI writes one).  ExecuTorch's codegen (``executorch.codegen.gen``) then writes the
registration for exactly those operators from the wheel's ``kernels/portable/functions.yaml``
and ``kernels/quantized/quantized.yaml``, through this package's codegen templates
(``templates/executorch_codegen/templates``).

What ``generate`` writes into ``out_dir`` (and returns, in this order):

- ``selected_operators.yaml``: the operator list and kernel keys;
- ``RegisterCodegenUnboxedKernels.cpp``: the registration; ``executorch_espnn_register_kernels()``
  registers once and returns 0 or an ExecuTorch error code; a static initializer calls it too;
- ``RegisterKernels.h``: declares ``executorch_espnn_register_kernels()``;
- ``NativeFunctions.h`` / ``Functions.h``: declarations of the kernel functions.

Compile the ExecuTorch portable and quantized kernel sources as a static library (not
whole-archive): the registration references only the selected kernels, so the linker keeps
only their objects.  Never link it next to a library that registers all kernels (the wheel's
``kernels_optimized``/``kernels_quantized``): registering an operator twice is an error.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]  # (PyYAML, installed with executorch)

from . import compat
from .errors import SelectiveBuildError
from .pte import UnreadableProgramError, load
from .rendering import templates_dir

SELECTED_YAML = "selected_operators.yaml"
REGISTRATION = "RegisterCodegenUnboxedKernels.cpp"
OUTPUTS = (SELECTED_YAML, REGISTRATION, "RegisterKernels.h", "NativeFunctions.h", "Functions.h")


@dataclass(frozen=True)
class KernelSources:
    """Where the wheel keeps the kernel schemas and the torchgen data the codegen needs."""

    portable_yaml: Path
    quantized_yaml: Path
    native_functions_yaml: Path
    tags_yaml: Path

    @staticmethod
    def from_wheel() -> KernelSources:
        import executorch.version
        import torchgen  # type: ignore[import-untyped]

        et = Path(executorch.version.__file__).parent  # executorch is a namespace package
        tg = Path(torchgen.__file__).parent / "packaged" / "ATen" / "native"
        found = KernelSources(
            portable_yaml=et / "kernels" / "portable" / "functions.yaml",
            quantized_yaml=et / "kernels" / "quantized" / "quantized.yaml",
            native_functions_yaml=tg / "native_functions.yaml",
            tags_yaml=tg / "tags.yaml",
        )
        for p in (
            found.portable_yaml,
            found.quantized_yaml,
            found.native_functions_yaml,
            found.tags_yaml,
        ):
            if not p.is_file():
                raise SelectiveBuildError(
                    f"{p} is missing from the installed executorch/torch; reinstall "
                    f"{compat.EXECUTORCH.requirement} (it ships the kernel schemas and codegen tools)"
                )
        return found


def _canonical(entry: dict[str, Any]) -> str:
    """'aten::add.out' for ``op: add.out``; the schema name for ``func: ns::name.overload(...)``."""
    name = str(entry["op"] if "op" in entry else entry["func"].split("(")[0]).strip()
    return name if "::" in name else f"aten::{name}"


def _load_yaml_list(path: Path) -> list[dict[str, Any]]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise SelectiveBuildError(f"{path} is not a kernel schema list")
    return data


def read_selection(path: Path) -> dict[str, Any]:
    """Load a gen_oplist ``selected_operators.yaml`` and check its shape."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        raise SelectiveBuildError(f"{path} is not valid YAML: {e}") from e
    if not isinstance(data, dict) or not isinstance(data.get("operators"), dict):
        raise SelectiveBuildError(
            f"{path} has no 'operators' mapping; expected the selected_operators.yaml that "
            "ExecuTorch's gen_oplist writes (executorch-espnn build writes one next to the .pte)"
        )
    if data.get("include_all_operators"):
        raise SelectiveBuildError(
            f"{path} selects all operators (include_all_operators: true); a selective build needs "
            "the model's own list: regenerate it from the .pte"
        )
    return data


def operators_of_pte(pte: Path, out_yaml: Path) -> dict[str, Any]:
    """Run ExecuTorch's gen_oplist on a .pte and return the selection it wrote.

    It runs in a child process: its flatbuffer reader is native code that crashes on some
    corrupt files, and a corrupt model must give an error, not take the build down.
    """
    # gen_oplist's native reader does not verify the flatbuffer: on a corrupt body it may
    # crash or, depending on what the stray offsets hit, succeed with garbage.  ExecuTorch's
    # Python deserializer (our one reader) checks every offset, so a program it cannot read
    # stops here.
    try:
        load(pte.read_bytes())
    except UnreadableProgramError as exc:
        raise SelectiveBuildError(
            f"{pte} cannot be read as an ExecuTorch program (.pte): {exc.reason}; "
            "pass the .pte the lowering wrote"
        ) from exc
    cmd = [
        sys.executable, "-m", "executorch.codegen.tools.gen_oplist",
        "--model_file_path", str(pte), "--output_path", str(out_yaml),
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        why = (
            f"the reader died with signal {-proc.returncode}"
            if proc.returncode < 0
            else "\n".join(proc.stderr.strip().splitlines()[-3:])
        )
        raise SelectiveBuildError(f"{pte} cannot be read as an ExecuTorch program (.pte): {why}")
    return read_selection(out_yaml)


def merge_selections(ptes: list[Path], out_yaml: Path) -> dict[str, Any]:
    """One selection for several programs in one firmware: the union of their operators and
    kernel keys (torchgen's combine_selective_builders, the selector ExecuTorch's codegen reads), written
    to ``out_yaml`` for ``generate``; each program's own list is kept beside it."""
    from torchgen.selective_build.selector import (  # type: ignore[import-untyped]  # (torch)
        SelectiveBuilder,
        combine_selective_builders,
    )

    merged: SelectiveBuilder | None = None
    out_yaml.parent.mkdir(parents=True, exist_ok=True)
    for i, pte in enumerate(ptes):
        one = operators_of_pte(pte, out_yaml.with_name(f"{out_yaml.stem}.{i}{out_yaml.suffix}"))
        builder = SelectiveBuilder.from_yaml_dict(one)
        merged = builder if merged is None else combine_selective_builders(merged, builder)
    if merged is None:
        raise SelectiveBuildError("no program to select kernels for; pass at least one .pte")
    out_yaml.write_text(yaml.safe_dump(merged.to_dict(), default_flow_style=False), encoding="utf-8")
    return read_selection(out_yaml)


def _functions_yaml(selected: set[str], kernels: KernelSources, out: Path) -> None:
    """Portable schemas plus the selected quantized ones, in one functions.yaml.

    ExecuTorch's yaml parser keys operators by name without namespace, so the whole quantized
    list would collide with portable ones (quantized_decomposed::add.out vs aten::add.out);
    only the quantized operators the model uses are added.
    """
    portable = _load_yaml_list(kernels.portable_yaml)
    quantized = [e for e in _load_yaml_list(kernels.quantized_yaml) if _canonical(e) in selected]
    available = {_canonical(e) for e in portable} | {
        _canonical(e) for e in _load_yaml_list(kernels.quantized_yaml)
    }
    missing = sorted(selected - available)
    if missing:
        raise SelectiveBuildError(
            "no ExecuTorch portable or quantized kernel exists for "
            + ", ".join(missing)
            + ": the device cannot run these operators on its CPU; change the model so they are "
            "delegated or avoided, or add a kernel library that implements them"
        )
    portable_short = {
        _canonical(e).split("::", 1)[1] for e in portable if _canonical(e) in selected
    }
    clash = sorted(
        _canonical(e) for e in quantized if _canonical(e).split("::", 1)[1] in portable_short
    )
    if clash:
        raise SelectiveBuildError(
            "the model uses both aten and quantized_decomposed versions of "
            + ", ".join(clash)
            + ", which ExecuTorch's codegen cannot register in one file"
        )
    out.write_text(yaml.safe_dump(portable + quantized, sort_keys=False), encoding="utf-8")


def codegen_templates() -> Path:
    """This package's templates for ExecuTorch's codegen (its own format, not jinja2)."""
    return templates_dir() / "executorch_codegen"


def _run_codegen(functions_yaml: Path, selection: Path, kernels: KernelSources, out: Path) -> None:
    cmd = [
        sys.executable, "-m", "executorch.codegen.gen",
        "--source-path", str(codegen_templates()),
        "--functions-yaml-path", str(functions_yaml),
        "--aten-yaml-path", str(kernels.native_functions_yaml),
        "--tags-path", str(kernels.tags_yaml),
        "--op-selection-yaml-path", str(selection),
        "--install-dir", str(out),
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ})
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-6:])
        raise SelectiveBuildError(f"ExecuTorch's codegen failed for {selection}:\n{tail}")


def generate(
    pte_or_yaml: Path, out_dir: Path, *, kernels: KernelSources | None = None
) -> list[Path]:
    """Write the kernel registration for the CPU operators of a .pte (or of a
    selected_operators.yaml) into out_dir; returns the files written (see the module doc)."""
    src = Path(pte_or_yaml)
    if not src.is_file():
        raise SelectiveBuildError(
            f"{src} does not exist; pass the model's .pte or selected_operators.yaml"
        )
    if not (codegen_templates() / "templates" / REGISTRATION).is_file():
        raise SelectiveBuildError(
            f"the codegen templates are missing from {codegen_templates()}; use a complete checkout"
        )
    kernels = kernels or KernelSources.from_wheel()
    out_dir.mkdir(parents=True, exist_ok=True)
    selection_path = out_dir / SELECTED_YAML
    if src.suffix in (".yaml", ".yml"):
        selection = read_selection(src)
        if src.resolve() != selection_path.resolve():
            shutil.copyfile(src, selection_path)
    else:
        selection = operators_of_pte(src, selection_path)
    selected = set(selection["operators"])

    with tempfile.TemporaryDirectory(prefix="espnn-codegen-") as tmp:
        functions_yaml = Path(tmp) / "functions.yaml"
        _functions_yaml(selected, kernels, functions_yaml)
        gen_dir = Path(tmp) / "out"
        _run_codegen(functions_yaml, selection_path, kernels, gen_dir)
        # write_sharded makes _0 (the one shard) and Everything (same content, not to be built)
        shutil.copyfile(gen_dir / "RegisterCodegenUnboxedKernels_0.cpp", out_dir / REGISTRATION)
        for name in OUTPUTS[2:]:
            shutil.copyfile(gen_dir / name, out_dir / name)
    return [out_dir / name for name in OUTPUTS]


def selected_operators(path: Path) -> list[str]:
    """The operator names of a selected_operators.yaml, sorted."""
    return sorted(read_selection(path)["operators"])


def registered_kernels(registration: Path) -> list[str]:
    """The operators a generated ``RegisterCodegenUnboxedKernels.cpp`` registers, one entry per
    kernel, in order: the kernel table of the runtime needs ``len()`` slots (ExecuTorch's
    ``MAX_KERNEL_NUM``; its default of 2000 costs 24 KB of RAM on a 32-bit chip)."""
    return re.findall(r'Kernel\(\s*"([^"]+)"', registration.read_text(encoding="utf-8"))
