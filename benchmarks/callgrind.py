"""Host instructions per inference, counted by valgrind's callgrind (deterministic).

Both programs run in the same standalone runner (``espnn_component/runtime/host_runner.cpp``:
``EspnnModel`` over ExecuTorch's runtime, linking the wheel's optimized + portable and
quantized CPU kernels), built once with ``-g`` (debug info does not change the generated code;
it gives callgrind the source file of every function):

* (a) the program lowered with our partitioner: the delegate on the host ESP-NN kernels;
* (b) the same quantized program lowered without any partitioner: ExecuTorch's CPU kernels.

Only ``EspnnModel::invoke`` is collected (``--toggle-collect``).  One inference is the
difference between a run with two invocations and a run with one, so one-time work (lazy
binding, thread-pool start-up, first-call initialisation) cancels out.

The share of (a) spent outside the kernels is ``1 - kernel / total``, where ``kernel`` is the
inclusive cost of every call made from non-kernel code into a kernel function: the host
ESP-NN kernels (``host_espnn/src``) and the engine's own kernels (``engine/ops`` and the
element loops of ``engine/src/{permute,broadcast,conv_common}.c``).  Everything else (the
ExecuTorch method, the adapter, ``EspnnModel``, the engine's dispatch loop) is overhead.  A
program with CPU fallback also spends instructions in ExecuTorch's operator kernels
(``libexecutorch_kernels_*.so``); they count as outside the delegate's kernels in that share,
and are reported on their own so that the pure overhead (``overhead_share``) is visible too.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMPONENT = ROOT / "espnn_component"
COLLECT = "EspnnModel::invoke*"

# where a kernel function is defined (callgrind's fl= of the function)
KERNEL_FILES = (
    re.compile(r"/espnn_component/host_espnn/src/[^/]+\.c$"),
    re.compile(r"/espnn_component/engine/ops/[^/]+\.c$"),
    re.compile(r"/espnn_component/engine/src/(permute|broadcast|conv_common)\.c$"),
)
KERNEL_NAMES = re.compile(r"^esp_nn_")

# ExecuTorch's operator libraries: the CPU kernels of operators left outside the delegate, and
# the thread pool their parallel_for runs on (it calls back into them)
CPU_OP_OBJECTS = re.compile(r"libexecutorch_(kernels_[a-z_]+|threadpool)\.so")

# categories for the overhead breakdown (matched on the function's file, then its name, then
# its object), first match wins
CATEGORIES = (
    ("engine dispatch", re.compile(r"/espnn_component/engine/")),
    ("adapter", re.compile(r"/espnn_component/adapter/")),
    ("EspnnModel", re.compile(r"/espnn_component/(runtime|memory|pal)/")),
    ("ExecuTorch CPU operators", CPU_OP_OBJECTS),
    ("ExecuTorch runtime", re.compile(r"executorch")),
)
OTHER = "other (libc and helpers kernels share)"


class CallgrindError(RuntimeError):
    pass


def valgrind_version() -> str | None:
    exe = shutil.which("valgrind")
    if exe is None:
        return None
    out = subprocess.run([exe, "--version"], capture_output=True, text=True, check=False)
    return out.stdout.strip() or None


# --- parsing ------------------------------------------------------------------------------------

FnKey = tuple[str, str]  # (file of the function, name)


@dataclass
class Profile:
    """Self costs per function and inclusive costs per call edge, from one callgrind file."""

    total: int
    self_cost: dict[FnKey, int] = field(default_factory=dict)
    calls: dict[tuple[FnKey, FnKey], int] = field(default_factory=dict)  # inclusive, per edge
    objects: dict[FnKey, str] = field(default_factory=dict)  # the binary each function is in


def parse(path: Path) -> Profile:
    """Read a callgrind file written with --compress-strings=no --compress-pos=no (one event)."""
    self_cost: dict[FnKey, int] = defaultdict(int)
    calls: dict[tuple[FnKey, FnKey], int] = defaultdict(int)
    total: int | None = None
    objects: dict[FnKey, str] = {}
    ob = fl = fi = "???"
    fn: FnKey | None = None
    cfile: str | None = None
    cfn: str | None = None
    pending_call = False
    with path.open(encoding="utf-8", errors="replace") as fh:
        for raw in fh:
            line = raw.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            c = line[0]
            if c.isdigit() or c in "+-*":
                parts = line.split()
                cost = int(parts[-1]) if len(parts) >= 2 else 0
                if fn is None:
                    continue
                if pending_call:
                    assert cfn is not None
                    calls[(fn, (cfile or fi, cfn))] += cost
                    pending_call = False
                    cfile = cfn = None
                else:
                    self_cost[fn] += cost
                continue
            if line.startswith(("summary:", "totals:")):
                total = int(line.split(":", 1)[1].split()[0])
                continue
            key, _, value = line.partition("=")
            if key == "ob":
                ob = value
            elif key == "fl":
                fl = fi = value
            elif key in ("fi", "fe"):
                fi = value
            elif key == "fn":
                fn = (fl, value)
                fi = fl
                objects.setdefault(fn, ob)
            elif key in ("cfi", "cfl"):
                cfile = value
            elif key == "cfn":
                cfn = value
            elif key == "calls":
                pending_call = True
    if total is None:
        raise CallgrindError(f"{path}: no summary line (is it a callgrind output file?)")
    return Profile(total, dict(self_cost), dict(calls), objects)


def is_kernel(fn: FnKey) -> bool:
    path, name = fn
    return bool(KERNEL_NAMES.match(name)) or any(p.search(path) for p in KERNEL_FILES)


def is_cpu_op(p: Profile, fn: FnKey) -> bool:
    """A function of ExecuTorch's operator libraries (a CPU-fallback operator's kernel)."""
    return bool(CPU_OP_OBJECTS.search(p.objects.get(fn, "")))


def _computing(p: Profile, fn: FnKey) -> bool:
    return is_kernel(fn) or is_cpu_op(p, fn)


def kernel_cost(p: Profile) -> int:
    """Inclusive cost of the calls that enter kernel code from outside it."""
    return sum(cost for (caller, callee), cost in p.calls.items()
               if is_kernel(callee) and not _computing(p, caller))


def cpu_op_cost(p: Profile) -> int:
    """Inclusive cost of the calls into ExecuTorch's CPU operator kernels."""
    return sum(cost for (caller, callee), cost in p.calls.items()
               if is_cpu_op(p, callee) and not _computing(p, caller))


def overhead_by_category(p: Profile) -> dict[str, int]:
    """The instructions outside every kernel (ours and ExecuTorch's CPU operators), by category:
    the self cost of each function no kernel ever reaches (the engine's dispatch loop, the
    adapter, EspnnModel, ExecuTorch's method); what remains (helpers that kernels call too,
    such as memcpy) is "other".  The categories sum to the total less both kernel costs."""
    callees: dict[FnKey, list[FnKey]] = defaultdict(list)
    for caller, callee in p.calls:
        callees[caller].append(callee)
    reached = {fn for fn in p.self_cost if _computing(p, fn)}
    stack = list(reached)
    while stack:
        for nxt in callees.get(stack.pop(), ()):
            if nxt not in reached:
                reached.add(nxt)
                stack.append(nxt)
    out: dict[str, int] = defaultdict(int)
    for fn, cost in p.self_cost.items():
        if fn in reached:
            continue
        where = (fn[0], fn[1], p.objects.get(fn, ""))
        cat = next((name for name, pat in CATEGORIES if any(pat.search(w) for w in where)), None)
        if cat is not None:
            out[cat] += cost
    out[OTHER] = max(0, p.total - kernel_cost(p) - cpu_op_cost(p) - sum(out.values()))
    return dict(out)


# --- building and running ------------------------------------------------------------------------


@dataclass(frozen=True)
class RunnerBuild:
    """One CMake build tree of the component, re-pointed at each model's generated header."""

    build_dir: Path

    def runner_for(self, model_dir: Path, log: Path) -> Path:
        from executorch_espnn import host

        tc = host.find_toolchain()
        env = dict(os.environ, CXX=str(tc.cxx))
        if tc.cc is not None:
            env["CC"] = str(tc.cc)
        configure = [str(tc.cmake), "-S", str(COMPONENT), "-B", str(self.build_dir), "-G", tc.generator,
                     "-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_C_FLAGS=-g", "-DCMAKE_CXX_FLAGS=-g",
                     f"-DCMAKE_PREFIX_PATH={host.executorch_dir()}", f"-DESPNN_MODEL_DIR={model_dir}"]
        build = [str(tc.cmake), "--build", str(self.build_dir), "--target", "espnn_runner", "--parallel", "2"]
        for cmd in (configure, build):
            with log.open("a") as out:
                out.write("$ " + " ".join(cmd) + "\n")
                out.flush()
                proc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, check=False)
            if proc.returncode != 0:
                tail = "\n".join(log.read_text(errors="replace").splitlines()[-20:])
                raise CallgrindError(f"building the runner failed (log {log}):\n{tail}")
        exe = self.build_dir / "espnn_runner"
        if not exe.is_file():
            raise CallgrindError(f"the build produced no {exe}")
        return exe


def render_model(pte: bytes, out: Path) -> Path:
    """The generated model header the PlatformIO model step writes, sized by host.measure;
    returns the folder to pass as ESPNN_MODEL_DIR."""
    from devkit.model_files import render_model as render

    return render(pte, out)


def _callgrind(exe: Path, repeat: int, out_file: Path, timeout: int) -> Profile:
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out_file}",
           "--compress-strings=no", "--compress-pos=no", f"--toggle-collect={COLLECT}",
           str(exe), "--repeat", str(repeat)]
    env = dict(os.environ, LD_BIND_NOW="1")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, check=False)
    if proc.returncode != 0 or not out_file.is_file():
        raise CallgrindError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    if "output 0" not in proc.stdout:
        raise CallgrindError(f"the runner printed no output under valgrind:\n{proc.stdout[-1000:]}")
    return parse(out_file)


@dataclass(frozen=True)
class InferenceCost:
    instructions: int  # per inference
    kernel_instructions: int  # inside the delegate's kernels (ESP-NN's and the engine's own)
    cpu_op_instructions: int  # inside ExecuTorch's CPU operator kernels (CPU fallback)
    overhead: dict[str, int]  # outside every kernel, by category

    @property
    def outside_share(self) -> float:
        """Outside the delegate's kernels (CPU-fallback operators count as outside)."""
        return 1.0 - self.kernel_instructions / self.instructions if self.instructions else 0.0

    @property
    def overhead_share(self) -> float:
        """Outside every kernel: parsing, dispatch and bookkeeping only."""
        inside = self.kernel_instructions + self.cpu_op_instructions
        return 1.0 - inside / self.instructions if self.instructions else 0.0


def measure(exe: Path, work: Path, timeout: int = 3600) -> InferenceCost:
    """Instructions of one inference: (run with 2 invocations) - (run with 1)."""
    work.mkdir(parents=True, exist_ok=True)
    one = _callgrind(exe, 1, work / "callgrind.1.out", timeout)
    two = _callgrind(exe, 2, work / "callgrind.2.out", timeout)
    total = two.total - one.total
    kernel = kernel_cost(two) - kernel_cost(one)
    cpu_ops = cpu_op_cost(two) - cpu_op_cost(one)
    o1, o2 = overhead_by_category(one), overhead_by_category(two)
    overhead = {k: o2.get(k, 0) - o1.get(k, 0) for k in sorted(set(o1) | set(o2))}
    if total <= 0:
        raise CallgrindError(f"{exe}: two invocations cost no more than one ({two.total} vs {one.total})")
    return InferenceCost(total, kernel, cpu_ops, overhead)
