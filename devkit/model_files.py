"""A model's generated files outside PlatformIO: what the model step writes into
$BUILD_DIR/executorch for a .pte, for the runner tests and the callgrind benchmark."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any


def render_model(pte: bytes, out: Path, *, edit: dict[str, Any] | None = None,
                 sizes: Any = None, selftest: dict[str, Any] | None = None,
                 profile: dict[str, Any] | None = None) -> Path:
    """Write model.pte and the generated header/data the PlatformIO model step writes, with
    the sizes measured by host.measure (nobody guesses) or, for another target, ``sizes`` (a
    host.PteSizes measured there); returns the folder to pass as ESPNN_MODEL_DIR.  `edit`
    overrides fields ("sizes.arena_bytes", "inputs.0.scale", ...) to make the inconsistent
    headers the runtime must refuse; `selftest` is the self-test table's context
    (``SelfTest.to_context()``, possibly tampered with); `profile` the layer table of a
    profiling build (``ProfileTable.to_dict()``)."""
    from executorch_espnn import host
    from executorch_espnn.firmware import pte_meta, render
    from executorch_espnn.firmware.model_info import ModelInfo, Sizes, Versions
    from executorch_espnn.payload.format import FORMAT_MAJOR, FORMAT_MINOR
    from executorch_espnn.version import __version__

    out.mkdir(parents=True, exist_ok=True)
    (out / "model.pte").write_bytes(pte)
    sizes = sizes if sizes is not None else host.measure(pte)
    info = ModelInfo(
        pte=pte_meta.read(pte),
        sizes=Sizes(**sizes.header_sizes(), weights_bytes=sizes.delegate_weights_bytes,
                    pointer_bytes=sizes.pointer_bytes),
        versions=Versions(executorch=host.executorch_version(), package=__version__,
                          format_major=str(FORMAT_MAJOR), format_minor=str(FORMAT_MINOR)),
    )
    for key, value in (edit or {}).items():
        section, _, field = key.partition(".")
        if section in ("inputs", "outputs"):
            index, _, attr = field.partition(".")
            setattr(getattr(info.pte, section)[int(index)], attr, value)
        else:
            setattr(info, section, replace(getattr(info, section), **{field: value}))
    render.write_all(info, out, selftest, profile=profile)
    return Path(out / render.GENERATED_SUBDIR)


def model_info_from(partial: dict[str, Any]) -> Any:
    """A ModelInfo from the parts of model_info.json a test cares about (as dicts); the rest
    (pte method/buffers/tensors, sizes, versions) gets neutral defaults."""
    from executorch_espnn.firmware.model_info import ModelInfo

    defaults: dict[str, dict[str, Any]] = {
        "pte": {"size": 0, "sha256": "0" * 64, "method": "forward", "planned_bytes": 0,
                "planned_buffers": [], "delegates": [], "inputs": [], "outputs": []},
        "sizes": {"arena_bytes": 0, "state_bytes": 0, "planned_bytes": 0, "method_allocator_bytes": 0,
                  "temp_allocator_bytes": 0, "pointer_bytes": 4, "weights_bytes": 0},
        "versions": {"executorch": "1.5.1", "package": "0.1.0", "format_major": "2", "format_minor": "0"},
    }
    if "storage" in partial:
        defaults["storage"] = {"label": "espnn_model", "subtype": 0x40, "size": 0, "image_bytes": 0,
                               "signature": "", "signature_sha256": "0" * 64, "host_image_path": ""}
    merged = {**partial, **{k: {**v, **partial.get(k, {})} for k, v in defaults.items()}}
    return ModelInfo.from_dict(merged)
