"""A model's generated files outside PlatformIO: what the model step writes into
$BUILD_DIR/executorch for a .pte, for the runner tests and the callgrind benchmark."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def render_model(pte: bytes, out: Path, *, edit: dict[str, Any] | None = None,
                 sizes: Any = None, selftest: dict[str, Any] | None = None) -> Path:
    """Write model.pte and the generated header/data the PlatformIO model step writes, with
    the sizes measured by host.measure (nobody guesses) or, for another target, ``sizes`` (a
    host.PteSizes measured there); returns the folder to pass as ESPNN_MODEL_DIR.  `edit`
    overrides fields ("sizes.arena_bytes", "inputs.0.scale", ...) to make the inconsistent
    headers the runtime must refuse; `selftest` is the self-test table's context
    (``SelfTest.to_context()``, possibly tampered with)."""
    import sys

    from executorch_espnn import host
    from executorch_espnn.payload.format import FORMAT_MAJOR, FORMAT_MINOR
    from executorch_espnn.version import __version__

    builder = str(Path(__file__).resolve().parents[1] / "builder")
    sys.path.insert(0, builder)
    try:
        from espnn_pio import pte_meta, render  # type: ignore[import-not-found]
    finally:
        sys.path.remove(builder)
    out.mkdir(parents=True, exist_ok=True)
    (out / "model.pte").write_bytes(pte)
    sizes = sizes if sizes is not None else host.measure(pte)
    info: dict[str, Any] = {
        "pte": pte_meta.read(pte).to_dict(),
        "sizes": {**sizes.header_sizes(), "weights_bytes": sizes.delegate_weights_bytes,
                  "pointer_bytes": sizes.pointer_bytes},
        "versions": {"executorch": host.executorch_version(), "package": __version__,
                     "format_major": FORMAT_MAJOR, "format_minor": FORMAT_MINOR},
    }
    for key, value in (edit or {}).items():
        section, _, field = key.partition(".")
        if section in ("inputs", "outputs"):
            index, _, attr = field.partition(".")
            info["pte"][section][int(index)][attr] = value
        else:
            info[section][field] = value
    render.write_all(info, out, selftest)
    return Path(out / render.GENERATED_SUBDIR)
