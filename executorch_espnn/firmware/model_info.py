"""What the model-artifact step found out about a model: the typed `ModelInfo`, written once as
model_info.json beside the generated files and read back by the builder (the summary, the RAM
check, the model partition) and by the templates (``ModelInfo.to_dict()`` is their context).

Standard library only: the SCons process reads it on every build, no-op builds included.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

# The espnn_pte_desc_t byte counts EspnnModel sizes its pools with.
POOL_FIELDS = (
    "arena_bytes",
    "state_bytes",
    "planned_bytes",
    "method_allocator_bytes",
    "temp_allocator_bytes",
)


class ModelInfoError(ValueError):
    """model_info.json is not one this package wrote; str() says to rebuild."""


@dataclass
class TensorMeta:
    name: str
    dtype: int  # ESPNN_DTYPE_*
    dtype_name: str
    dims: list[int]
    numel: int
    nbytes: int
    scale: float = 0.0
    zero_point: int = 0
    # ExecuTorch's contiguous default dim order: "NCHW" for rank 4, "contiguous" otherwise
    layout: str = ""
    # how the delegate reaches it (the report's TensorSpec.access: "in place", "transposed copy",
    # ...); "" when the report does not say
    access: str = ""
    # lower(..., io_arena=True): a tensor ExecuTorch does not plan, living in the delegate arena
    # at arena_offset (executorch_espnn.io_arena)
    in_arena: bool = False
    arena_offset: int = 0


@dataclass
class PteMeta:
    """What the .pte itself says (pte_meta.read)."""

    size: int
    sha256: str
    method: str
    planned_bytes: int
    planned_buffers: list[int]
    delegates: list[str]
    inputs: list[TensorMeta] = field(default_factory=list)
    outputs: list[TensorMeta] = field(default_factory=list)
    # the opcodes (lower-case names) the delegate payloads use: model_pte_data.S defines an
    # espnn_engine_op_<name> selector for each, the op families a firmware of embedded models
    # links (src/registry.c)
    engine_ops: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PteMeta:
        return cls(**{**d, "inputs": [TensorMeta(**t) for t in d["inputs"]],
                      "outputs": [TensorMeta(**t) for t in d["outputs"]]})


@dataclass(frozen=True)
class Sizes:
    """The header's byte counts: pools measured on this computer (host.measure), weights from
    the lowering report (they stay in the .pte, in flash)."""

    arena_bytes: int
    state_bytes: int
    planned_bytes: int
    method_allocator_bytes: int
    temp_allocator_bytes: int
    pointer_bytes: int  # the pointer size of the build that measured the pools
    weights_bytes: int = 0

    def pools(self) -> dict[str, int]:
        return {name: int(getattr(self, name)) for name in POOL_FIELDS}


@dataclass(frozen=True)
class Versions:
    executorch: str
    package: str
    format_major: str
    format_minor: str


@dataclass(frozen=True)
class CpuOp:
    op: str
    reason: str = ""


@dataclass(frozen=True)
class Ops:
    delegated: int = 0
    cpu: int = 0
    cpu_list: list[CpuOp] = field(default_factory=list)
    partitions: int = 0


@dataclass(frozen=True)
class SelftestSummary:
    """The embedded self-test (its values stay in the header); cases 0: none."""

    cases: int = 0
    source: str = ""
    bytes: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"cases": self.cases, "source": self.source, "bytes": self.bytes} if self.cases else {"cases": 0}


@dataclass(frozen=True)
class PartitionInfo:
    """custom_executorch_storage = partition: the model image and its partition."""

    label: str
    subtype: int
    size: int  # the partition's bytes
    image_bytes: int
    signature: str
    signature_sha256: str
    host_image_path: str  # the file the host program maps


@dataclass
class ModelInfo:
    pte: PteMeta
    sizes: Sizes
    versions: Versions
    ops: Ops = field(default_factory=Ops)
    target: str = ""
    warnings: list[str] = field(default_factory=list)
    accuracy: list[str] = field(default_factory=list)  # one line per output, for the summary
    ram: dict[str, Any] | None = None  # report.json's RAM bill with the measured pools
    selftest: SelftestSummary = field(default_factory=SelftestSummary)
    name: str = ""  # a named model (several in one firmware)
    storage: PartitionInfo | None = None  # None: the model is embedded in the app

    def to_dict(self) -> dict[str, Any]:
        """model_info.json's content (no "storage" for an embedded model), which is also the
        templates' context."""
        d: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self)}
        for key in ("sizes", "versions", "ops"):
            d[key] = asdict(d[key])
        d["pte"] = self.pte.to_dict()
        d["selftest"] = self.selftest.to_dict()
        if self.storage is None:
            del d["storage"]
        else:
            d["storage"] = asdict(self.storage)
        return d

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ModelInfo:
        ops = dict(d.get("ops") or {})
        ops["cpu_list"] = [CpuOp(**o) for o in ops.get("cpu_list", [])]
        storage = d.get("storage")
        return cls(
            pte=PteMeta.from_dict(d["pte"]),
            sizes=Sizes(**d["sizes"]),
            versions=Versions(**{k: str(v) for k, v in d["versions"].items()}),
            ops=Ops(**ops),
            target=str(d.get("target", "")),
            warnings=[str(w) for w in d.get("warnings", [])],
            accuracy=[str(a) for a in d.get("accuracy", [])],
            ram=d.get("ram"),
            selftest=SelftestSummary(**d.get("selftest", {"cases": 0})),
            name=str(d.get("name", "")),
            storage=PartitionInfo(**storage) if isinstance(storage, dict) else None,
        )

    @classmethod
    def from_json(cls, text: str) -> ModelInfo:
        try:
            return cls.from_dict(json.loads(text))
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise ModelInfoError(
                f"model_info.json is not one this version wrote ({type(exc).__name__}: {exc}); "
                "delete the build folder and build again"
            ) from exc

    @classmethod
    def read(cls, path: Path) -> ModelInfo:
        return cls.from_json(path.read_text(encoding="utf8"))

    def write(self, path: Path) -> None:
        path.write_text(self.to_json(), encoding="utf8")

    @property
    def ram_needed(self) -> int:
        """What the model needs at run time (bytes): the pools EspnnModel allocates."""
        return sum(self.sizes.pools().values())
