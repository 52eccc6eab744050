#!/usr/bin/env python3
"""A compiler driver for the ESP32-S3 (Xtensa LX7, windowed ABI) from Debian's tools.

No registry ships an ESP32-S3 compiler.  Debian's clang-22 has an Xtensa backend (windowed ABI)
whose integrated assembler fails on real files, and Debian's binutils-xtensa-lx106 assemble and
link for any Xtensa core when ``XTENSA_GNU_CONFIG`` names that core's configuration plugin; this
driver joins them so the emulated builds (``emulated/esp32s3.py``) can call it like a compiler:

    s3cc.py --version                       tools, versions and the plugin's hash (a cache key)
    s3cc.py [flags] -c SRC.c -o OBJ         clang-22 -S, the stack check, then GNU as
    s3cc.py [flags] -c SRC.S -o OBJ         clang-22 -E (C preprocessor), then GNU as
    s3cc.py [flags] -E SRC -o OUT           clang-22 -E (SRC may be - for standard input)
    s3cc.py [flags] OBJ... LIB.a... -o ELF  GNU ld (-T, -Wl,... and the inputs; compile flags
                                            are dropped)

The core plugin comes from ``ESPNN_XTENSA_S3_GNU_CONFIG`` (the esp32s3 ``.so`` built from
Espressif's xtensa-dynconfig and xtensa-overlays; never part of this repository).

**The stack check.**  clang-22 moves the stack pointer by the exact size of a call's stack
arguments when the function keeps a frame pointer (``addi aN, a1, -20; movsp a1, aN``).  The
windowed ABI wants SP 16-byte aligned at all times, and ESP-NN's S3 assembly stores 128-bit
registers into its frame (``ee.vst.128.ip``, which ignores the low 4 address bits): a 4-byte
aligned SP makes those stores overwrite the caller's arguments.  ``-fomit-frame-pointer``
makes clang reserve outgoing arguments inside the ``entry`` frame (no SP moves at calls), and
every ``-S`` output is checked: an ``a1`` write other than ``entry``/``retw`` and a
16-multiple ``addi``+``movsp`` is refused, naming the function and the line, so no build ever
carries a misaligned stack.  ``--s3cc-keep-frame-pointer`` / ``--s3cc-no-stack-check`` undo
each half, for the test that shows what goes wrong without them.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

CLANG = "clang-22"
AS = "xtensa-lx106-elf-as"
LD = "xtensa-lx106-elf-ld"
CONFIG_ENV = "ESPNN_XTENSA_S3_GNU_CONFIG"

# The ESP32-S3's core options that clang-22's Xtensa backend knows (the overlay's core-isa.h:
# XCHAL_HAVE_*).  No CPU name: clang's driver knows none for Xtensa.  The S3 lacks the ESP32's
# double-precision FP accelerator (dfpaccel), and its TIE SIMD (ee.*) is not in LLVM: that code
# is ESP-NN's assembly, assembled by GNU as with the core plugin.
FEATURES = ("density", "windowed", "fp", "mul16", "mul32", "mul32high", "div32", "nsa",
            "minmax", "sext", "clamps", "loop", "mac16", "bool", "s32c1i", "threadptr",
            "exception", "interrupt", "highpriinterrupts", "debug", "prid", "rvector",
            "timers3", "miscsr", "coprocessor", "extendedl32r")
# -fno-integrated-as: clang's Xtensa assembler knows no ee.* instruction and would reject ESP-NN's
# inline SIMD assembly; this way it is copied into the -S output for GNU as.  -fno-addrsig:
# GNU as knows no .addrsig.
TARGET_FLAGS = ("--target=xtensa", "-fno-addrsig", "-fno-integrated-as", "-ffreestanding",
                *(x for f in FEATURES for x in ("-Xclang", "-target-feature", "-Xclang", f"+{f}")))

class DriverError(Exception):
    pass


_INSN = re.compile(r"^\s*([a-z][a-z0-9_.]*)\s+([a-z0-9]+)\s*(?:,\s*(.*))?$", re.I)
_LABEL = re.compile(r"^([A-Za-z_.$][\w.$]*):")
# Mnemonics whose first operand is read, not written.
_READS_FIRST = ("s8i", "s16i", "s32i", "s32i.n", "s32e", "s32c1i", "ssi", "ssip", "ssx", "ssxp",
                "wsr", "wur", "wer", "ee.", "b", "j", "call", "ret", "entry", "movsp")


def _writes_first(op: str) -> bool:
    return not any(op == r or (r.endswith(".") and op.startswith(r)) for r in _READS_FIRST) \
        and not (op.startswith("b") and op not in ("break",))


@dataclass
class _Facts:
    """What is known at one point of a function: registers holding a 16-byte aligned stack
    address, registers holding a multiple of 16, constants, stack slots holding an aligned SP."""

    sp_like: set[str] = field(default_factory=lambda: {"a1"})
    mult16: set[str] = field(default_factory=set)
    const: dict[str, int] = field(default_factory=dict)
    saved: set[tuple[str, str]] = field(default_factory=set)

    def copy(self) -> _Facts:
        return _Facts(set(self.sp_like), set(self.mult16), dict(self.const), set(self.saved))

    def meet(self, other: _Facts) -> _Facts:
        return _Facts(self.sp_like & other.sp_like, self.mult16 & other.mult16,
                      {k: v for k, v in self.const.items() if other.const.get(k) == v},
                      self.saved & other.saved)

    def covers(self, other: _Facts) -> bool:
        return other.sp_like <= self.sp_like and other.mult16 <= self.mult16


def _literals(lines: list[str]) -> dict[str, int]:
    """Literal-pool values (``.LCPIx_y: .word N``), for ``l32r`` of a mask."""
    vals: dict[str, int] = {}
    label = ""
    for line in lines:
        code = " ".join(line.split("#", 1)[0].split())
        lab = _LABEL.match(code)
        if lab:
            label = lab.group(1)
            continue
        w = re.fullmatch(r"\.(?:word|long) (-?\d+)", code)
        lit = re.fullmatch(r"\.literal (\S+), (-?\d+)", code)
        name, value = (label, w.group(1)) if w and label else \
            (lit.group(1), lit.group(2)) if lit else ("", "")
        if name:
            v = int(value) & 0xFFFFFFFF
            vals[name] = v - (1 << 32) if v >= 1 << 31 else v
        label = ""
    return vals


def _next_insn(lines: list[str], n: int) -> str:
    """The mnemonic of the first instruction after line ``n`` (1-based), labels skipped."""
    for line in lines[n:]:
        code = " ".join(line.split("#", 1)[0].split())
        if code and not code.startswith(".") and not _LABEL.match(code):
            return code.split(" ", 1)[0].lower()
    return ""


def _one_pass(lines: list[str], lits: dict[str, int],
              back: dict[tuple[str, str], _Facts]) -> tuple[list[str], dict[tuple[str, str], _Facts]]:
    """Every write of the stack pointer a1 in clang's ``-S`` output whose value is not known to
    keep SP 16-byte aligned.  Known aligned: ``a1`` itself (after ``entry``), ``a1`` plus or
    minus a multiple of 16 (``addi``), ``a1`` minus a register masked to a multiple of 16
    (``and`` with a ``movi``/``l32r`` constant -16k: variable-length arrays), a copy of one of
    those (``or aN, aK, aK``) and a stack slot ``s32i a1`` saved.  At a label the facts of its
    fall-through and of every jump to it meet (jumps back to it as found by the previous pass:
    stack_problems() repeats passes until they agree)."""
    problems: list[str] = []
    jumps: dict[tuple[str, str], _Facts] = {}
    func = "?"
    facts: _Facts | None = _Facts()
    for n, line in enumerate(lines, 1):
        code = " ".join(line.split("#", 1)[0].split())
        lab = _LABEL.match(code)
        if lab:
            name = lab.group(1)
            if not name.startswith(".L"):
                func, facts = name, _Facts()
                continue
            for f in (jumps.get((func, name)), back.get((func, name))):
                if f is not None:
                    facts = f.copy() if facts is None else facts.meet(f)
            facts = facts or _Facts()
            continue
        m = _INSN.match(code) or re.fullmatch(r"(ret|retw|retw\.n|ret\.n)()()", code)
        if m is None or facts is None:
            continue
        op, dst = m.group(1).lower(), m.group(2)
        args = [x.strip() for x in m.group(3).split(",")] if m.group(3) else []
        # control flow: record the facts for the target, stop after unconditional jumps
        target = dst if op == "j" else (args[-1] if op.startswith("b") and args else "")
        if target.startswith(".L"):
            key = (func, target)
            jumps[key] = facts.copy() if key not in jumps else jumps[key].meet(facts)
        if op in ("j", "jx", "ret", "ret.n", "retw", "retw.n"):
            facts = None
            continue
        if op == "s32i" and dst in facts.sp_like and len(args) == 2:
            facts.saved.add((args[0], args[1]))
        if op == "movsp":
            # a new SP right before retw is dead: retw returns to the caller's own a1
            dead = _next_insn(lines, n) in ("retw", "retw.n")
            if dst == "a1" and not dead and not (args and args[0] in facts.sp_like):
                problems.append(f"{func}: line {n}: '{code}' (the new SP is not known to be "
                                f"16-byte aligned)")
            continue
        if not _writes_first(op):
            continue
        aligned = False
        if op in ("addi", "addmi") and len(args) == 2 and args[0] in facts.sp_like:
            aligned = int(args[1], 0) % 16 == 0
        elif op in ("sub", "add", "add.n") and len(args) == 2:
            aligned = (args[0] in facts.sp_like and args[1] in facts.mult16) or \
                      (op != "sub" and args[1] in facts.sp_like and args[0] in facts.mult16)
        elif op in ("or", "mov", "mov.n") and args and all(x in facts.sp_like for x in args):
            aligned = True
        elif op in ("l32i", "l32i.n") and len(args) == 2 and (args[0], args[1]) in facts.saved:
            aligned = True
        if dst == "a1":
            if not aligned:
                problems.append(f"{func}: line {n}: '{code}' (the new SP is not known to be "
                                f"16-byte aligned)")
            continue
        facts.const.pop(dst, None)
        facts.mult16.discard(dst)
        facts.sp_like.discard(dst)
        facts.saved = {sl for sl in facts.saved if sl[0] != dst}
        if aligned:
            facts.sp_like.add(dst)
        elif op in ("movi", "movi.n") and args:
            try:
                facts.const[dst] = int(args[0], 0)
            except ValueError:
                pass
        elif op == "l32r" and args and args[0] in lits:
            facts.const[dst] = lits[args[0]]
        elif op == "and" and len(args) == 2:
            if any((k := facts.const.get(x)) is not None and k % 16 == 0 for x in args):
                facts.mult16.add(dst)
    return problems, jumps


def stack_problems(asm: str) -> list[str]:
    """Every write of the stack pointer a1 in clang's ``-S`` output whose value is not known to
    keep SP 16-byte aligned (see _one_pass)."""
    lines = asm.splitlines()
    lits = _literals(lines)
    back: dict[tuple[str, str], _Facts] = {}
    for _ in range(20):
        problems, jumps = _one_pass(lines, lits, back)
        if all(k in back and back[k].covers(v) and v.covers(back[k]) for k, v in jumps.items()):
            return problems
        back = {k: v if k not in back else v.meet(back[k]) for k, v in jumps.items()}
    return ["the stack facts did not settle in 20 passes (cannot prove alignment)"]


def round_call_frames(asm: str) -> tuple[str, int]:
    """Round clang's call-frame adjustments to multiples of 16.

    A function with a frame pointer (clang keeps one for variable-length arrays even with
    -fomit-frame-pointer: ESP-NN's S3 depthwise dispatcher has three) moves SP by the exact
    size of each call's stack arguments: ``addi aN, a1, -K`` before the call and
    ``addi aN, a1, K`` after it, each followed by ``movsp a1, aN`` directly or after a ``j`` to
    a block that starts with it.  Only those are rewritten, to -/+ K rounded up to 16: the
    arguments still sit at the new SP + 0.. (where the callee reads them), the extra bytes lie
    above them unused, and the pair stays balanced.  Returns the text and the number of
    adjustments rewritten; stack_problems() then checks the result."""
    lines = asm.splitlines()
    first_at: dict[str, str] = {}  # label -> its first instruction
    pending: list[str] = []
    for line in lines:
        code = " ".join(line.split("#", 1)[0].split())
        lab = _LABEL.match(code)
        if lab:
            pending.append(lab.group(1))
        elif code and not code.startswith("."):
            for name in pending:
                first_at[name] = code
            pending = []

    def next_code(i: int) -> str:
        for line in lines[i + 1:]:
            code = " ".join(line.split("#", 1)[0].split())
            if code and not code.startswith(".") and not code.startswith("#"):
                return code
        return ""

    out, count = [], 0
    for i, line in enumerate(lines):
        code = " ".join(line.split("#", 1)[0].split())
        m = re.fullmatch(r"addi (a\d+), a1, (-?\d+)", code)
        if m and int(m.group(2)) % 16 != 0:
            reg, k = m.group(1), int(m.group(2))
            nxt = next_code(i)
            jmp = re.fullmatch(r"j (\S+)", nxt)
            target = first_at.get(jmp.group(1), "") if jmp else nxt
            if target == f"movsp a1, {reg}":
                r = (abs(k) + 15) // 16 * 16
                line = f"\taddi\t{reg}, a1, {-r if k < 0 else r}\t# s3cc: was {k}"
                count += 1
        out.append(line)
    return "\n".join(out) + "\n", count


def _config() -> str:
    path = os.environ.get(CONFIG_ENV, "")
    if not path or not Path(path).is_file():
        raise DriverError(f"{CONFIG_ENV} must name the esp32s3 core plugin (.so) for GNU as/ld "
                          f"(now {path!r})")
    return path


def _run(cmd: list[str], env: dict[str, str] | None = None) -> None:
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if r.returncode != 0:
        raise DriverError(f"{' '.join(cmd)}\n{r.stdout}{r.stderr}")
    if r.stderr:
        sys.stderr.write(r.stderr)


def _gnu_env() -> dict[str, str]:
    return {**os.environ, "XTENSA_GNU_CONFIG": _config()}


def version() -> str:
    out = []
    for tool in (CLANG, AS, LD):
        exe = shutil.which(tool)
        if exe is None:
            raise DriverError(f"{tool} not found (Debian packages clang-22, binutils-xtensa-lx106)")
        r = subprocess.run([exe, "--version"], capture_output=True, text=True, check=False)
        out.append(r.stdout.splitlines()[0] if r.stdout else tool)
    digest = hashlib.sha256(Path(_config()).read_bytes()).hexdigest()[:16]
    # the driver's own rewrites change the objects too: its source is part of the cache key
    own = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]
    return f"s3cc: {'; '.join(out)}; core config {digest}; driver {own}"


def _split(argv: list[str]) -> tuple[list[str], dict[str, str | bool]]:
    """Compiler flags, and the driver's own options (-c, -o, -MF, -MD, its --s3cc-* flags)."""
    flags: list[str] = []
    opts: dict[str, str | bool] = {}
    inputs: list[str] = []
    it = iter(argv)
    for a in it:
        if a in ("-o", "-MF", "-T"):
            opts[a] = next(it)
        elif a in ("-c", "-MD", "--s3cc-keep-frame-pointer", "--s3cc-no-stack-fix",
                   "--s3cc-no-stack-check"):
            opts[a] = True
        elif a == "-mlongcalls":
            continue  # GCC's; clang's Xtensa calls always go through a literal (l32r + callx)
        elif a in ("-Xclang", "-isystem", "-include", "-I", "-D", "-x"):
            flags += [a, next(it)]
        elif a.startswith("-") and a != "-":
            flags.append(a)
        else:
            inputs.append(a)  # "-": standard input
    opts["inputs"] = "\0".join(inputs)
    return flags, opts


_SECTION = re.compile(r"^\s*\.(section|text)\b")
_LITERAL = re.compile(r"^\s*\.literal(_position)?\b")


def literals_into_own_section(asm: str) -> str:
    """clang-22 writes a function's literal pool (``.literal_position`` and its ``.literal``
    lines) before the ``.section`` directive of that function, so GNU as files the literals
    under the previous function's section.  In C++ that section can be an inline function's
    COMDAT group, which the linker discards when another object's copy wins, and the next
    function loses its literals (``defined in discarded section .literal._ZN...``).  Each
    pool moves after the section directives that follow it: into its own function's section."""
    out: list[str] = []
    pending: list[str] = []
    for line in asm.splitlines():
        if _LITERAL.match(line):
            pending.append(line)
            continue
        if pending and not _SECTION.match(line) and line.strip() != "":
            out += pending
            pending = []
        out.append(line)
    out += pending
    return "\n".join(out) + "\n"


def compile_one(flags: list[str], opts: dict[str, str | bool]) -> None:
    src = str(opts["inputs"])
    out = str(opts["-o"])
    dep = ["-MD", "-MF", str(opts["-MF"]), "-MT", out] if opts.get("-MF") else []
    fp = [] if opts.get("--s3cc-keep-frame-pointer") else ["-fomit-frame-pointer"]
    with tempfile.TemporaryDirectory() as tmp:
        asm = Path(tmp) / "out.s"
        if src.endswith(".S"):
            _run([CLANG, *TARGET_FLAGS, *flags, *dep, "-E", "-x", "assembler-with-cpp", src,
                  "-o", str(asm)])
        else:
            _run([CLANG, *TARGET_FLAGS, *fp, *flags, *dep, "-S", src, "-o", str(asm)])
            asm.write_text(literals_into_own_section(asm.read_text()))
            if not opts.get("--s3cc-no-stack-fix"):
                text, _ = round_call_frames(asm.read_text())
                asm.write_text(text)
            if not opts.get("--s3cc-no-stack-check"):
                problems = stack_problems(asm.read_text())
                if problems:
                    raise DriverError(f"{src}: the stack pointer would leave 16-byte alignment "
                                      f"(ESP-NN's 128-bit frame stores need it):\n  "
                                      + "\n  ".join(problems))
        _run([AS, str(asm), "-o", out], env=_gnu_env())


def link(argv: list[str]) -> None:
    """GNU ld over the inputs; of the compile flags only -Wl,..., -T, -o and -nostdlib count."""
    cmd = [LD]
    it = iter(argv)
    for a in it:
        if a == "-o" or a == "-T":
            cmd += [a, next(it)]
        elif a.startswith("-Wl,"):
            cmd += a[4:].split(",")
        elif a in ("-Xclang", "-isystem", "-include", "-I", "-D"):
            next(it)
        elif a.startswith("-"):
            continue
        else:
            cmd.append(a)
    _run(cmd, env=_gnu_env())


def main(argv: list[str]) -> int:
    try:
        if argv == ["--version"]:
            print(version())
            return 0
        flags, opts = _split(argv)
        if "-E" in flags:  # preprocess only (the build's check for the C++ headers)
            _run([CLANG, *TARGET_FLAGS, *flags, *str(opts["inputs"]).split("\0"),
                  *(["-o", str(opts["-o"])] if opts.get("-o") else [])])
        elif opts.get("-c"):
            compile_one(flags, opts)
        else:
            link(argv)
    except DriverError as exc:
        print(f"s3cc: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
