"""Render the generated model files from templates/, through executorch_espnn.rendering.

`model_info` merges what the .pte says (sizes, inputs/outputs, planned buffers) with the
lowering report (delegate arena/state/weights, names, quantization) into one `ModelInfo`, whose
`to_dict()` is both the template context and model_info.json, what the builder prints and
checks later.  Standard library only at the top: the SCons process names the generated files
through it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from .model_info import (
    POOL_FIELDS,
    CpuOp,
    ModelInfo,
    Ops,
    PteMeta,
    SelftestSummary,
    Sizes,
    Versions,
)

# Generated file -> template: the descriptor (header) and the bytes (.incbin in the .S).
OUTPUTS = {
    "model_pte.h": "model_pte.h.j2",
    "model_pte_data.S": "model_pte_data.S.j2",
    "CMakeLists.txt": "model_component.cmake.j2",
}
# Templates the outputs include (their content is part of the model step's cache key too).
INCLUDES = ("model_selftest.h.j2", "model_profile.h.j2", "model_pte_partition.h.j2")
# Outputs a custom_executorch_storage = partition build does not have (the bytes stay out).
EMBEDDED_ONLY = ("model_pte_data.S",)


def _int(d: dict[str, Any], *keys: str) -> int:
    for k in keys:
        v = d.get(k)
        if isinstance(v, (int, float)) and v:
            return int(v)
    return 0


def _count(value: Any) -> int:
    if isinstance(value, list):
        return len(value)
    return int(value) if isinstance(value, int) else 0


def _ops(report: dict[str, Any], key: str) -> list[dict[str, Any]]:
    ops = report.get(key, [])
    return [o for o in ops if isinstance(o, dict)] if isinstance(ops, list) else []


def model_info(
    meta: PteMeta, report: dict[str, Any], versions: Versions, measured: dict[str, int]
) -> ModelInfo:
    """`measured`: executorch_espnn.host.measure(pte).header_sizes(), the exact pool sizes, and
    "pointer_bytes", the pointer size of the build that measured them."""
    pte = PteMeta.from_dict(meta.to_dict())  # a copy: the report's names and quantization go in
    mem = report.get("memory") if isinstance(report.get("memory"), dict) else report
    assert isinstance(mem, dict)
    for side in ("inputs", "outputs"):
        described = report.get(side)
        if not isinstance(described, list):
            continue
        for tensor, info in zip(getattr(pte, side), described, strict=False):
            if not isinstance(info, dict):
                continue
            if info.get("name"):
                tensor.name = str(info["name"])
            if info.get("scale") and (not tensor.scale or info.get("quantized_by") == "program"):
                # an int8 program tensor's own parameters are the delegate's (io="int8")
                tensor.scale = float(info["scale"])
                tensor.zero_point = int(info.get("zero_point", 0))
            if info.get("access"):
                tensor.access = str(info["access"])
            if info.get("layout"):  # "NHWC" for a channels-last input (input_layout = nhwc)
                tensor.layout = str(info["layout"])
    delegated = _ops(report, "delegated_ops")
    cpu = _ops(report, "cpu_ops")
    # Pools from the measurement (what EspnnModel allocates), weights from the lowering
    # report (they stay in the .pte, in flash).
    sizes = Sizes(**{name: int(measured[name]) for name in POOL_FIELDS},
                  pointer_bytes=int(measured["pointer_bytes"]), weights_bytes=_int(mem, "weights_bytes"))
    return ModelInfo(
        pte=pte,
        sizes=sizes,
        versions=versions,
        ops=Ops(
            delegated=len(delegated),
            cpu=len(cpu),
            cpu_list=[CpuOp(str(o.get("op", "?")), str(o.get("reason", ""))) for o in cpu],
            partitions=_count(report.get("partitions")),
        ),
        target=str(report.get("target", "")),
        warnings=[str(w) for w in report.get("warnings", []) if isinstance(w, str)],
    )


def _asm_path(p: Path) -> str:
    text = str(p).replace("\\", "/")
    if '"' in text or "\n" in text:
        raise ValueError(f"the build folder path {text!r} cannot be named in an assembler .incbin")
    return text


GENERATED_SUBDIR = "espnn_model"  # also the ESP-IDF component name of the generated files

# A named model (several in one firmware) gets the very files of one unnamed model with every
# model symbol carrying its name, so two headers can be included in one file: model_pte ->
# model_<name>_pte, espnn_model_* -> espnn_model_<name>_*, ESPNN_MODEL_* -> ESPNN_MODEL_<NAME>_*,
# and the file names the same way (model_<name>_pte.h, component espnn_model_<name>).  One pass
# over the rendered text, so the templates stay those of one model and whatever they add later
# follows the naming without a second copy.
_MODEL_SYMBOL = re.compile(r"(?<![A-Za-z0-9_])(?:model_pte|ESPNN_MODEL)(?![A-Za-z0-9])"
                           r"|(?<![A-Za-z0-9])espnn_model(?![A-Za-z0-9])")


def named(text: str, name: str) -> str:
    """`text` (a generated file or its name) with the model symbols of model `name`; unchanged
    for the unnamed model ("")."""
    if not name:
        return text

    def one(m: re.Match[str]) -> str:
        sym = m.group(0)
        if sym == "model_pte":
            return f"model_{name}_pte"
        return f"{sym}_{name.upper()}" if sym == "ESPNN_MODEL" else f"{sym}_{name}"

    return _MODEL_SYMBOL.sub(one, text)


def generated_subdir(name: str = "") -> str:
    """The folder (and ESP-IDF component) of a model's generated files."""
    return named(GENERATED_SUBDIR, name)


def selftest_summary(selftest: dict[str, Any] | None) -> SelftestSummary:
    """What model_info.json says about the embedded self-test (the values stay in the header)."""
    if not selftest:
        return SelftestSummary()
    from ..payload.format import DType  # the format's one table of element sizes

    tensors = selftest["inputs"] + selftest["expected"]
    nbytes = sum(len(t["data"]) * DType.from_numpy_name(t["dtype"]).size for t in tensors)
    return SelftestSummary(int(selftest["n_cases"]), str(selftest["source"]), nbytes)


def write_all(info: ModelInfo, out: Path, selftest: dict[str, Any] | None = None,
              name: str = "", profile: dict[str, Any] | None = None) -> list[Path]:
    """Render into out/espnn_model/ (the .pte stays at out/model.pte).  ``selftest``: the
    context of the embedded self-test table (``SelfTest.to_context()``), None for none.
    ``name``: a named model's files and symbols (`named`), in out/espnn_model_<name>/.
    ``profile``: the layer table of a profiling build (``ProfileTable.to_dict()``), None for none."""
    from .. import rendering

    env = rendering.environment()
    ctx = info.to_dict()
    ctx["pte_path"] = _asm_path((out / "model.pte").resolve())
    ctx["selftest"] = selftest if selftest and selftest.get("n_cases") else None
    ctx["profile"] = profile
    ctx["storage"] = ctx.get("storage")  # None: embedded; else the partition's fields
    written = []
    gen = out / generated_subdir(name)
    gen.mkdir(parents=True, exist_ok=True)
    for output, template in OUTPUTS.items():
        path = gen / named(output, name)
        if ctx["storage"] and output in EMBEDDED_ONLY:
            path.unlink(missing_ok=True)  # a stale .incbin of an earlier embedded build
            continue
        rendering.write_if_changed(path, named(env.get_template(template).render(**ctx), name))
        written.append(path)
    return written
