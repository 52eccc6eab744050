"""The short report the build prints, and the check that the model fits the board's RAM.

Standard library only: the builder (SCons) and scripts/espnn_idf_model.py print it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .model_info import ModelInfo


@dataclass(frozen=True)
class RamBudget:
    """What the model needs at run time against what the board offers (bytes)."""

    needed: int
    available: int  # 0 when unknown (the host board)
    source: str  # where `available` comes from, for the message
    policy: str  # "internal", "psram" or "auto"

    @property
    def fits(self) -> bool:
        return self.available == 0 or self.needed <= self.available


def ram_needed(info: ModelInfo) -> int:
    return info.ram_needed


def _kib(n: int) -> str:
    return f"{n / 1024:.1f} KiB" if n >= 1024 else f"{n} B"


def summary_lines(info: ModelInfo, budget: RamBudget | None) -> list[str]:
    s = info.sizes
    ops = info.ops
    pte = info.pte
    lines = [
        f"ExecuTorch model: {_kib(pte.size)} .pte (sha256 {pte.sha256[:12]}), "
        f"delegates: {', '.join(pte.delegates) or 'none'}",
        f"  operators: {ops.delegated} on ESP-NN, {ops.cpu} on the CPU"
        + (f" ({ops.partitions} partitions)" if ops.partitions else ""),
    ]
    for op in ops.cpu_list[:8]:
        lines.append(f"    cpu: {op.op}" + (f" -- {op.reason}" if op.reason else ""))
    if len(ops.cpu_list) > 8:
        lines.append(f"    ... and {len(ops.cpu_list) - 8} more (see report.txt)")
    lines.append(
        f"  memory: arena {_kib(s.arena_bytes)}, planned {_kib(s.planned_bytes)}, "
        f"state {_kib(s.state_bytes)}, method allocator {_kib(s.method_allocator_bytes)}, "
        f"temp {_kib(s.temp_allocator_bytes)}, "
        f"weights {_kib(s.weights_bytes)} (in flash, used in place)"
    )
    io = pte.inputs + pte.outputs
    homed = [t for t in io if t.in_arena]
    if homed:  # lower(..., io_arena=True): what the sketch must know about input()/output()
        lines.append(
            f"  program I/O: {len(homed)} of {len(io)} tensors live in the arena (no planned memory for "
            "them): write the inputs before every invoke(), read the outputs before the next"
        )
    if budget is not None and s.pointer_bytes > 4:
        lines.append(
            f"  (state, method and temp allocator measured with {s.pointer_bytes}-byte pointers on "
            "this computer: upper bounds for the 32-bit chip)"
        )
    lines += ram_lines(info.ram)
    for line in info.accuracy:  # with custom_executorch_validation (report.txt has the tables)
        lines.append(f"  {line}")
    st = info.selftest
    if st.cases:
        lines.append(
            f"  self-test: {st.cases} samples from the {st.source} data with their expected "
            f"outputs, {_kib(st.bytes)} in flash (EspnnModel::self_test())"
        )
    if budget is None:
        lines.append(f"  RAM: {_kib(ram_needed(info))} needed (host board: no internal RAM limit)")
    elif budget.available:
        verdict = "fits" if budget.fits else "does NOT fit"
        lines.append(
            f"  RAM: {_kib(budget.needed)} needed, {verdict} in {_kib(budget.available)} "
            f"internal RAM ({budget.source}; placement policy: {budget.policy})"
        )
    else:
        lines.append(
            f"  RAM: {_kib(budget.needed)} needed ({budget.source} does not say how much "
            "internal RAM the board has)"
        )
    for w in info.warnings[:4]:
        lines.append(f"  warning: {w}")
    return lines


def ram_lines(ram: dict[str, Any] | None) -> list[str]:
    """The whole RAM bill beside its lower bound (executorch_espnn/report/ram.py), when the
    lowering's report is there."""
    if not ram or ram.get("total_bytes") is None:
        return []
    b = ram["bound"]
    ratio = f"{ram['ratio']:.2f}x" if ram.get("ratio") else "n/a"
    lines = [
        f"  RAM bill: {_kib(ram['total_bytes'])} (the five pools above), lower bound {_kib(b['bytes'])} "
        f"(activations {_kib(b['activation_bytes'])} + scratch {_kib(b['scratch_bytes'])} + planned I/O "
        f"{_kib(b['io_bytes'])}): {ratio}",
        f"    peak set by {b['setter']}",
    ]
    if ram.get("io_view_bytes"):
        lines.append(f"    I/O views: {_kib(ram['io_view_bytes'])} more if the sketch asks for the other dtype")
    return lines


def fit_problem(budget: RamBudget) -> tuple[str, bool] | None:
    """(message, is_error) when the model does not fit internal RAM, else None."""
    if budget.fits:
        return None
    msg = (
        f"the model needs {budget.needed} bytes of RAM but the board has {budget.available} "
        f"bytes of internal RAM ({budget.source})"
    )
    if budget.policy == "internal":
        return (
            msg + "; with the internal-RAM-only placement (CONFIG_ESPNN_ET_ARENA_IN_INTERNAL or "
            "CONFIG_ESPNN_ET_PLANNED_IN_INTERNAL) it cannot run: choose the automatic or PSRAM "
            "placement in `pio run -t menuconfig` (on a board with PSRAM) or a smaller model",
            True,
        )
    return (msg + "; it will need PSRAM at run time (placement policy: " + budget.policy + ")", False)


# --- several models in one firmware (custom_executorch_model with `name = path` lines) --------

def shared_arena_need(info: ModelInfo) -> int:
    """Bytes of a shared arena that hold one model's delegates: its arena_bytes, the largest
    partition's (every delegate of a model starts at the arena's base: espnn_arena_lease.h)."""
    return info.sizes.arena_bytes


def shared_arena_bytes(infos: list[ModelInfo]) -> int:
    """ESPNN_SHARED_ARENA_BYTES: the largest model's need (models never run at once)."""
    return max((shared_arena_need(i) for i in infos), default=0)


def models_ram_needed(infos: list[ModelInfo], shared: bool) -> int:
    """RAM of every model together, the shared arena counted once."""
    total = sum(ram_needed(i) for i in infos)
    if shared:
        total += shared_arena_bytes(infos) - sum(i.sizes.arena_bytes for i in infos)
    return total


def models_summary_lines(
    models: list[tuple[str, ModelInfo, bool]], budget: RamBudget | None, shared: bool
) -> list[str]:
    """The summary of several models: each model's own section (summary_lines, for the models
    lowered in this build; `models`: (name, info, ran)), then the firmware's total."""
    lines: list[str] = []
    for name, info, ran in models:
        if not ran:
            continue
        own = None if budget is None else RamBudget(ram_needed(info), budget.available, budget.source,
                                                     budget.policy)
        section = summary_lines(info, own)
        section[0] = section[0].replace("ExecuTorch model:", f"ExecuTorch model {name}:", 1)
        lines += section
    infos = [info for _, info, _ in models]
    total = models_ram_needed(infos, shared)
    lines.append(f"ExecuTorch models: {len(models)} ({', '.join(n for n, _, _ in models)}), "
                 f"{_kib(total)} of RAM together")
    arenas = sum(i.sizes.arena_bytes for i in infos)
    if shared:
        one = shared_arena_bytes(infos)
        lines.append(f"  shared arena {one} B instead of {arenas} B, saves {arenas - one} B "
                     "(custom_executorch_shared_arena: the models never run at the same time)")
    else:
        lines.append(f"  arenas: {arenas} B, one per model (custom_executorch_shared_arena = yes "
                     f"would need {shared_arena_bytes(infos)} B when they never run at once)")
    if budget is not None and budget.available:
        verdict = "fits" if budget.fits else "does NOT fit"
        lines.append(f"  RAM: {_kib(budget.needed)} needed by all models, {verdict} in "
                     f"{_kib(budget.available)} internal RAM ({budget.source}; placement policy: "
                     f"{budget.policy})")
    return lines
