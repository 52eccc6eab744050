"""Flash and RAM of the whole firmware stack on an emulated MCU (``emulated/mcu_stack.py``: the
Cortex-M7, or the ESP32-C3 in its own memory map), per part, next to the pools measured on this
64-bit computer, and on the ESP32-C3 the instructions of one inference: the tables of
docs/benchmarks.md ("The firmware stack on a 32-bit MCU", "... on an emulated ESP32-C3").

    EXECUTORCH_SOURCE_DIR=<tree> FLATBUFFERS_SOURCE_DIR=<tree> [ESPNN_QEMU_ESP_DIR=<qemu>] \\
    [ESPNN_ESP_NN_DIR=<esp-nn>] python benchmarks/mcu_sizes.py [--target cortex-m7|esp32c3] \\
        [--model NAME ...] [--markdown FILE] [--json FILE]

Flash: the text and read-only data of each part as the firmware links it (``-Os``,
``--gc-sections``: only what the firmware keeps), read from the linker map: ExecuTorch's
runtime, the selected kernels with their registration, the engine, the ESP-NN kernels (the host
twin), the adapter with EspnnModel, the memory policy and the PAL, the model data (the ``.pte``),
the application (with the test vectors) and the C/C++ libraries.  RAM: the static data (``.data`` + ``.bss``) of each
part, and the pools EspnnModel allocates through the memory policy -- method allocator, planned
buffers, delegate arena, state (delegate state and handles), temp allocator -- as measured on the
target and on this computer, with what the memory policy held in all after ``begin()``.

On the ESP32-C3 code that runs from RAM (IRAM: start-up, trap vector, flash mapping) is its own
kind, counted in the flash image and in RAM; the firmware is built on the host ESP-NN twin and,
with ``$ESPNN_ESP_NN_DIR``, on ESP-NN as its own build selects it for the C3 (the sizes are that
firmware's), and the instructions of each inference (``EMU INSN``, QEMU ``-icount``) of both
are side by side.
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
_IRAM_OUTPUTS = (".iram.text",)  # the ESP32-C3's code in RAM (emulated/esp32c3/link.ld)
_SKIP_OUTPUTS = (".debug", ".comment", ".ARM.attributes", ".stab", ".note", ".tbss_space", ".dram_skip",
                 ".stack", ".gnu.build.attributes", ".dram.skip", ".riscv.attributes")
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
    iram: int = 0  # code copied to RAM (the ESP32-C3's ROM loads it): in flash and in RAM

    @property
    def flash(self) -> int:
        return self.text + self.rodata + self.data + self.iram

    @property
    def static_ram(self) -> int:
        return self.data + self.bss + self.iram


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
    if section in _IRAM_OUTPUTS:
        part.iram += size
    elif kind == "data":
        part.data += size
    elif kind == "bss":
        part.bss += size
    elif name.startswith(_TEXT_INPUTS) or padding:
        part.text += size
    else:
        part.rodata += size


def elf_totals(elf: Path, size_tool: str = "arm-none-eabi-size") -> dict[str, int]:
    """Loaded bytes per kind straight from the ELF (``<binutils>-size -A``), to check the map;
    flash_code_and_rodata includes code in RAM (``iram``, also given alone)."""
    r = subprocess.run([size_tool, "-A", str(elf)], capture_output=True, text=True, check=True)
    sizes = dict(re.findall(r"^(\.\S+)\s+(\d+)\s+\d+$", r.stdout, re.M))
    ram = {k: int(v) for k, v in sizes.items() if k in _RAM_OUTPUTS}
    flash = sum(int(v) for k, v in sizes.items()
                if k not in _RAM_OUTPUTS and not k.startswith(_SKIP_OUTPUTS))
    return {"flash_code_and_rodata": flash, "data": sum(v for k, v in ram.items() if k in (".data", ".tdata")),
            "bss": sum(v for k, v in ram.items() if k in (".bss", ".tbss")),
            "iram": sum(int(v) for k, v in sizes.items() if k in _IRAM_OUTPUTS)}


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
    target: str = "cortex-m7"
    kernels: str = "host-espnn"  # the firmware the sizes are of
    selftest: str = ""  # its self_test() line
    # kernels -> instructions of each inference (boards that count them)
    instructions: dict[str, list[int]] = field(default_factory=dict)


POOLS = ("method_allocator_bytes", "planned_bytes", "arena_bytes", "state_bytes",
         "temp_allocator_bytes")


def measure(name: str, target: str = "cortex-m7") -> ModelSizes:
    """One model's firmware on ``target``: built and run on each kernel set (the host twin and
    the real ESP-NN when $ESPNN_ESP_NN_DIR names it, on the Cortex-M7 only the twin); the sizes
    are those of the last one, every run must pass."""
    from emulated import component, et_runtime, mcu_stack

    stack = mcu_stack.STACKS[target]
    tree = et_runtime.prepare()
    p = mcu_stack.prepare_model(mcu_stack.load_model(name, stack), tree, stack=stack)
    variants = (mcu_stack.kernel_variants(stack=stack) if stack is mcu_stack.ESP32C3
                else [component.Kernels()])
    instructions = {}
    for kernels in variants:
        run = mcu_stack.run_app(p, kernels, tree)
        if not run.passed:
            raise RuntimeError(f"{name} on {target} with {kernels.name}: the firmware did not "
                               f"pass:\n{run.output[-3000:]}")
        if run.instructions():
            instructions[kernels.name] = run.instructions()
    sizes = part_sizes(run.firmware.map_file, run.firmware.parts)
    size_tool = stack.target.cc.removesuffix("gcc") + "size"
    return ModelSizes(
        model=name,
        operators=list(p.operators),
        parts={k: {**asdict(v), "flash": v.flash, "static_ram": v.static_ram}
               for k, v in sizes.items()},
        pools_target=p.sizes32.header_sizes(),
        pools_host=p.sizes_host.header_sizes(),
        policy_bytes=run.memory().get("policy_bytes", 0),
        verdict=run.verdict or "",
        elf_totals=elf_totals(run.firmware.elf, size_tool),
        target=target,
        kernels=run.kernels,
        selftest=run.selftest or "",
        instructions=instructions,
    )


def _kb(n: int) -> str:
    return f"{n / 1000:.1f} KB" if n >= 1000 else f"{n} B"


_TARGET_TITLE = {"cortex-m7": "Cortex-M7", "esp32c3": "ESP32-C3"}


def markdown(results: list[ModelSizes]) -> str:
    models = [r.model for r in results]
    title = _TARGET_TITLE.get(results[0].target, results[0].target)
    part_names = [p for p in results[0].parts if any(r.parts[p]["flash"] or r.parts[p]["static_ram"]
                                                      for r in results)]
    iram = any(r.elf_totals.get("iram", 0) for r in results)
    out = [f"Flash (text + read-only data{'; IRAM: code the ROM loads into RAM' if iram else ''}) "
           f"and static RAM per part, as linked (-Os, gc-sections), {title}"
           + (f", firmware on {results[0].kernels}" if results[0].target != "cortex-m7" else "")
           + ":", ""]
    out.append("| part | " + " | ".join(models) + " |")
    out.append("|---|" + "---|" * len(models))
    for part in part_names:
        cells = []
        for r in results:
            s = r.parts[part]
            cells.append(f"{_kb(s['text'])} + {_kb(s['rodata'])}"
                         + (f" + IRAM {_kb(s['iram'])}" if s.get("iram") else "")
                         + (f", RAM {_kb(s['static_ram'])}" if s["static_ram"] else ""))
        out.append(f"| {part} | " + " | ".join(cells) + " |")
    total = [r.elf_totals["flash_code_and_rodata"] + r.elf_totals["data"] for r in results]
    out.append("| **flash in all** (the ELF's) | " + " | ".join(_kb(t) for t in total) + " |")
    ram = [r.elf_totals["data"] + r.elf_totals["bss"] + r.elf_totals.get("iram", 0) for r in results]
    out.append("| **static RAM in all** (the ELF's) | " + " | ".join(_kb(t) for t in ram) + " |")
    out += ["", "Parts are the linker map's input sections; the linker merges identical strings "
            "across parts, so the parts add up to a little more than the ELF (about 1 %)."]
    out += ["", f"RAM EspnnModel allocates through the memory policy, {title} (measured there) / "
            "this 64-bit computer (what model_pte.h carries when the host measures):", ""]
    out.append("| pool | " + " | ".join(models) + " |")
    out.append("|---|" + "---|" * len(models))
    for pool in POOLS:
        out.append(f"| {pool.removesuffix('_bytes').replace('_', ' ')} | "
                   + " | ".join(f"{r.pools_target[pool]:,} / {r.pools_host[pool]:,}" for r in results)
                   + " |")
    out.append("| held by the policy after begin() (pools, delegate blocks, EspnnModel's own) | "
               + " | ".join(f"{r.policy_bytes:,}" for r in results) + " |")
    kernel_sets = sorted({k for r in results for k in r.instructions})
    if kernel_sets:
        out += ["", "Instructions of one inference (invoke(), boundary conversions included; QEMU "
                "-icount shift=0,sleep=off: the same every run; the median of the cases, ± half "
                "their range):", ""]
        out.append("| kernels | " + " | ".join(models) + " |")
        out.append("|---|" + "---|" * len(models))
        for k in kernel_sets:
            out.append(f"| {k} | " + " | ".join(_insn(r.instructions.get(k, [])) for r in results)
                       + " |")
        if len(kernel_sets) == 2:
            a, b = kernel_sets
            out.append(f"| {a} / {b} | " + " | ".join(
                f"{_median(r.instructions[a]) / _median(r.instructions[b]):.2f}"
                if r.instructions.get(a) and r.instructions.get(b) else "-" for r in results) + " |")
        out += ["", "Self-test on the target: " + "; ".join(f"{r.model}: {r.selftest}" for r in results
                                                           if r.selftest)]
    return "\n".join(out) + "\n"


def _median(xs: list[int]) -> float:
    ys = sorted(xs)
    return (ys[(len(ys) - 1) // 2] + ys[len(ys) // 2]) / 2


def _insn(xs: list[int]) -> str:
    if not xs:
        return "-"
    half = (max(xs) - min(xs)) / 2
    spread = f"{half / 1e3:.1f} k" if half >= 1000 else f"{half:.0f}"
    return f"{_median(xs):,.0f}" + (f" (±{spread})" if half else "")


def main(argv: list[str] | None = None) -> int:
    from emulated import mcu_stack
    from executorch_espnn.errors import RuntimeSourcesError

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", choices=list(mcu_stack.STACKS), default="cortex-m7")
    ap.add_argument("--model", action="append", choices=mcu_stack.model_names())
    ap.add_argument("--markdown", type=Path)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    results: list[ModelSizes] = []
    try:
        for name in args.model or mcu_stack.model_names():
            r = measure(name, args.target)
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
