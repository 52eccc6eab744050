"""Flash and RAM of the whole firmware stack on the emulated Cortex-M7 (``emulated/mcu_stack.py``),
per part, next to the pools measured on this 64-bit computer: the tables of docs/benchmarks.md
("The firmware stack on a 32-bit MCU").

    EXECUTORCH_SOURCE_DIR=<tree> FLATBUFFERS_SOURCE_DIR=<tree> \\
        python benchmarks/mcu_sizes.py [--model NAME ...] [--markdown FILE] [--json FILE]

Flash: the text and read-only data of each part as the firmware links it (``-Os``,
``--gc-sections``: only what the firmware keeps), read from the linker map: ExecuTorch's
runtime, the selected kernels with their registration, the engine, the ESP-NN kernels (the host
twin), the adapter with EspnnModel, the memory policy and the PAL, the model data (the ``.pte``),
the application (with the test vectors) and the C/C++ libraries.  RAM: the static data (``.data`` + ``.bss``) of each
part, and the pools EspnnModel allocates through the memory policy -- method allocator, planned
buffers, delegate arena, state (delegate state and handles), temp allocator -- as measured on the
target and on this computer, with what the memory policy held in all after ``begin()``.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # last: the checkout's platform.py must not shadow `platform`
    sys.path.append(str(ROOT))

LIBRARIES = "C/C++ libraries + startup"
PADDING = "alignment padding"
_TEXT_INPUTS = (".text", ".init", ".fini", ".glue", ".vfp11", ".v4_bx", ".iplt")
_RAM_OUTPUTS = {".data": "data", ".tdata": "data", ".bss": "bss", ".tbss": "bss"}
_SKIP_OUTPUTS = (".debug", ".comment", ".ARM.attributes", ".stab", ".note", ".tbss_space",
                 ".stack", ".gnu.build.attributes")
_HEADER = re.compile(r"^(\.\S+|COMMON)(?:\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)(?:\s+.*)?)?$")
_INPUT = re.compile(r"^ (\.\S+|COMMON)(?:\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+(\S.*))?$")
_CONT = re.compile(r"^\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+(\S.*)$")
_FILL = re.compile(r"^ \*fill\*\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)")


@dataclass
class PartSize:
    text: int = 0
    rodata: int = 0
    data: int = 0  # in flash (its initial values) and in RAM
    bss: int = 0

    @property
    def flash(self) -> int:
        return self.text + self.rodata + self.data

    @property
    def static_ram(self) -> int:
        return self.data + self.bss


def _owner(path: str, parts: dict[str, tuple[Path, ...]]) -> str:
    archive = path.split("(", 1)[0].strip()
    for part, files in parts.items():
        if any(archive == str(f) for f in files):
            return part
    return LIBRARIES


def part_sizes(map_file: Path, parts: dict[str, tuple[Path, ...]]) -> dict[str, PartSize]:
    """Bytes per part and kind, from a GNU ld map: every input section kept in an output
    section that loads (debug and bookkeeping sections aside); padding is its own part."""
    out: dict[str, PartSize] = {name: PartSize() for name in (*parts, LIBRARIES, PADDING)}
    lines = map_file.read_text(errors="replace").splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("Linker script and memory map"))
    section = ""
    pending: str | None = None
    for ln in lines[start + 1:]:
        if ln and not ln[0].isspace():
            m = _HEADER.match(ln)
            section = m[1] if m else ""
            pending = None
            continue
        if not section or section.startswith(_SKIP_OUTPUTS):
            continue
        if pending is not None:
            c = _CONT.match(ln)
            if c:
                _add(out, section, pending, int(c[2], 16), c[3], parts)
            pending = None
            continue
        f = _FILL.match(ln)
        if f:
            _add(out, section, ".fill", int(f[2], 16), "", parts, padding=True)
            continue
        m = _INPUT.match(ln)
        if m is None:
            continue
        if m[2] is None:
            pending = m[1]  # the address, size and file are on the next line
        else:
            _add(out, section, m[1], int(m[3], 16), m[4], parts)
    return out


def _add(out: dict[str, PartSize], section: str, name: str, size: int, path: str,
         parts: dict[str, tuple[Path, ...]], padding: bool = False) -> None:
    if size == 0:
        return
    part = out[PADDING if padding else _owner(path, parts)]
    kind = _RAM_OUTPUTS.get(section)
    if kind == "data":
        part.data += size
    elif kind == "bss":
        part.bss += size
    elif name.startswith(_TEXT_INPUTS) or padding:
        part.text += size
    else:
        part.rodata += size


def elf_totals(elf: Path) -> dict[str, int]:
    """Loaded bytes per kind straight from the ELF (arm-none-eabi-size -A), to check the map."""
    r = subprocess.run(["arm-none-eabi-size", "-A", str(elf)], capture_output=True, text=True,
                       check=True)
    sizes = dict(re.findall(r"^(\.\S+)\s+(\d+)\s+\d+$", r.stdout, re.M))
    ram = {k: int(v) for k, v in sizes.items() if k in _RAM_OUTPUTS}
    flash = sum(int(v) for k, v in sizes.items()
                if k not in _RAM_OUTPUTS and not k.startswith(_SKIP_OUTPUTS))
    return {"flash_code_and_rodata": flash, "data": sum(v for k, v in ram.items() if k in (".data", ".tdata")),
            "bss": sum(v for k, v in ram.items() if k in (".bss", ".tbss"))}


@dataclass
class ModelSizes:
    model: str
    operators: list[str]
    parts: dict[str, dict[str, int]]
    pools_target: dict[str, int]
    pools_host: dict[str, int]
    policy_bytes: int
    verdict: str
    elf_totals: dict[str, int] = field(default_factory=dict)


POOLS = ("method_allocator_bytes", "planned_bytes", "arena_bytes", "state_bytes",
         "temp_allocator_bytes")


def measure(name: str) -> ModelSizes:
    from emulated import component, et_runtime, mcu_stack

    tree = et_runtime.prepare()
    p = mcu_stack.prepare_model(mcu_stack.load_model(name), tree)
    run = mcu_stack.run_app(p, component.Kernels(), tree)
    if not run.passed:
        raise RuntimeError(f"{name}: the firmware did not pass:\n{run.output[-3000:]}")
    sizes = part_sizes(run.firmware.map_file, run.firmware.parts)
    return ModelSizes(
        model=name,
        operators=list(p.operators),
        parts={k: {**asdict(v), "flash": v.flash, "static_ram": v.static_ram}
               for k, v in sizes.items()},
        pools_target=p.sizes32.header_sizes(),
        pools_host=p.sizes_host.header_sizes(),
        policy_bytes=run.memory().get("policy_bytes", 0),
        verdict=run.verdict or "",
        elf_totals=elf_totals(run.firmware.elf),
    )


def _kb(n: int) -> str:
    return f"{n / 1000:.1f} KB" if n >= 1000 else f"{n} B"


def markdown(results: list[ModelSizes]) -> str:
    models = [r.model for r in results]
    part_names = [p for p in results[0].parts if any(r.parts[p]["flash"] or r.parts[p]["static_ram"]
                                                      for r in results)]
    out = ["Flash (text + read-only data) and static RAM per part, as linked (-Os, gc-sections):", ""]
    out.append("| part | " + " | ".join(models) + " |")
    out.append("|---|" + "---|" * len(models))
    for part in part_names:
        cells = []
        for r in results:
            s = r.parts[part]
            cells.append(f"{_kb(s['text'])} + {_kb(s['rodata'])}"
                         + (f", RAM {_kb(s['static_ram'])}" if s["static_ram"] else ""))
        out.append(f"| {part} | " + " | ".join(cells) + " |")
    total = [r.elf_totals["flash_code_and_rodata"] + r.elf_totals["data"] for r in results]
    out.append("| **flash in all** (the ELF's) | " + " | ".join(_kb(t) for t in total) + " |")
    ram = [r.elf_totals["data"] + r.elf_totals["bss"] for r in results]
    out.append("| **static RAM in all** (the ELF's) | " + " | ".join(_kb(t) for t in ram) + " |")
    out += ["", "Parts are the linker map's input sections; the linker merges identical strings "
            "across parts, so the parts add up to a little more than the ELF (about 1 %)."]
    out += ["", "RAM EspnnModel allocates through the memory policy, Cortex-M7 (measured there) / "
            "this 64-bit computer (what model_pte.h carries when the host measures):", ""]
    out.append("| pool | " + " | ".join(models) + " |")
    out.append("|---|" + "---|" * len(models))
    for pool in POOLS:
        out.append(f"| {pool.removesuffix('_bytes').replace('_', ' ')} | "
                   + " | ".join(f"{r.pools_target[pool]:,} / {r.pools_host[pool]:,}" for r in results)
                   + " |")
    out.append("| held by the policy after begin() (pools, delegate blocks, EspnnModel's own) | "
               + " | ".join(f"{r.policy_bytes:,}" for r in results) + " |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    from emulated import mcu_stack
    from executorch_espnn.errors import RuntimeSourcesError

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", action="append", choices=mcu_stack.model_names())
    ap.add_argument("--markdown", type=Path)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    results: list[ModelSizes] = []
    try:
        for name in args.model or mcu_stack.model_names():
            r = measure(name)
            print(r.verdict, flush=True)
            results.append(r)
    except RuntimeSourcesError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    table = markdown(results)
    print(table)
    if args.markdown:
        args.markdown.write_text(table)
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in results], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())


__all__: list[Any] = ["ModelSizes", "PartSize", "elf_totals", "main", "markdown", "measure",
                      "part_sizes"]
