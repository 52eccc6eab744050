"""Benchmarks of executorch-espnn over the model zoo: one command, the figures of docs/benchmarks.md.

    python benchmarks/run.py                 every model, every figure (tens of minutes)
    python benchmarks/run.py --quick         the CI subset (DS-CNN; hello_world for pio)
    python benchmarks/run.py --models resnet8,tiny_vit --skip pio --json out.json

Per model: operators delegated / total and partitions; the delegate arena against the peak live
set computed here from the payload; ExecuTorch's planned and method-allocator bytes and the RAM
the generated header asks for; .pte bytes against the int8 weights + int32 biases +
requantization parameters of the quantized program; host instructions per inference under
callgrind for our delegate (a) and for ExecuTorch's CPU kernels on the same quantized program
(b), and the share of (a) outside the kernels; lowering time by stage and against XNNPACK's
partitioner on the same program; ESP32-S3 fast-path MAC coverage per layer.  Then `pio run` on
the host board.  Every target is printed as met or missed at the end.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

# The checkout goes last on sys.path: its top-level platform.py (the PlatformIO platform) must
# not shadow the standard library's `platform`.
ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))

from benchmarks import models as bench_models  # noqa: E402

TARGET = "esp32s3"
ARENA_TARGET = 1.01
PTE_TARGET = 1.05
OUTSIDE_TARGET = 0.01
SKIPPABLE = ("callgrind", "lowering", "pio")
TEMPLATES = Path(__file__).resolve().parent / "templates"


@dataclass
class ModelResult:
    key: str
    title: str
    ops_delegated: int = 0
    ops_total: int = 0
    partitions: int = 0
    arena_bytes: int = 0
    peak_live_bytes: int = 0
    arena_ratio_worst: float = 0.0  # the worst partition's arena / peak live
    peak_at: list[str] = field(default_factory=list)  # per partition: "op 62 CONV2D (scratch 145216)"
    planned_bytes: int = 0
    method_allocator_bytes: int = 0
    header_ram_bytes: int = 0
    header_sizes: dict[str, int] = field(default_factory=dict)
    pte_bytes: int = 0
    const_bound_bytes: int = 0
    const_bound: dict[str, int] = field(default_factory=dict)
    pte_parts: dict[str, int] = field(default_factory=dict)  # where the .pte bytes go
    instr_delegate: int | None = None
    instr_cpu: int | None = None
    outside_share: float | None = None  # outside ESP-NN's and the engine's kernels
    overhead_share: float | None = None  # outside every kernel (CPU-fallback operators excluded)
    cpu_op_instructions: int | None = None
    overhead: dict[str, int] = field(default_factory=dict)
    stages: dict[str, float] = field(default_factory=dict)
    back_half: dict[str, dict[str, float]] = field(default_factory=dict)  # flow -> partition/to_executorch
    fast_share: float | None = None
    fast_share_report: float | None = None
    fast_mismatch: list[str] = field(default_factory=list)
    fast_table: str = ""
    cpu_ops: list[str] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)

    @property
    def pte_ratio(self) -> float | None:
        return self.pte_bytes / self.const_bound_bytes if self.const_bound_bytes else None

    @property
    def instr_ratio(self) -> float | None:
        if self.instr_delegate is None or not self.instr_cpu:
            return None
        return self.instr_delegate / self.instr_cpu

    @property
    def lowering_ratio(self) -> float | None:
        e, x = self.back_half.get("espnn"), self.back_half.get("xnnpack")
        if not e or not x:
            return None
        return e["total"] / x["total"]


# --- per-model figures ------------------------------------------------------------------------


def _ops_and_memory(res: ModelResult, lm: Any) -> None:
    from benchmarks.memory import peak_live
    from executorch_espnn import host
    from executorch_espnn.payload import decode
    from executorch_espnn.pte import delegate_payloads

    rep = lm.report
    res.ops_delegated = len(rep.delegated_ops)
    res.ops_total = len(rep.delegated_ops) + len(rep.cpu_ops)
    res.partitions = len(rep.partitions)
    res.cpu_ops = sorted({e.operator for e in rep.cpu_ops})
    worst = 0.0
    for i, data in enumerate(delegate_payloads(lm.pte) if rep.partitions else []):
        p = decode(data)
        pk = peak_live(p)
        res.arena_bytes = max(res.arena_bytes, p.arena_size)  # one arena for all partitions
        res.peak_live_bytes = max(res.peak_live_bytes, pk.bytes)
        worst = max(worst, p.arena_size / pk.bytes if pk.bytes else 1.0)
        res.peak_at.append(f"partition {i}: op {pk.op} {pk.opcode} (activations {pk.tensor_bytes:,} "
                           f"+ scratch {pk.scratch_bytes:,})")
    res.arena_ratio_worst = worst
    sizes = host.measure(lm.pte)
    res.planned_bytes = sizes.planned_bytes
    res.method_allocator_bytes = sizes.method_allocator_bytes
    res.header_sizes = {**sizes.header_sizes(), "weights_bytes": sizes.delegate_weights_bytes}
    res.header_ram_bytes = sum(res.header_sizes.values())


def _pte_size(res: ModelResult, lm: Any) -> None:
    from benchmarks.pte_bound import constant_bytes
    from executorch_espnn.payload import decode
    from executorch_espnn.pte import delegate_payloads

    cb = constant_bytes(lm.quantized_program)
    res.pte_bytes = len(lm.pte)
    payloads = delegate_payloads(lm.pte) if lm.report.partitions else []
    consts = sum(len(decode(d).constants) for d in payloads)
    res.pte_parts = {"payload constants": consts,
                     "payload tables (header, tensors, io, ops)": sum(len(d) for d in payloads) - consts,
                     "ExecuTorch program (flatbuffer, CPU constants, segment padding)":
                         len(lm.pte) - sum(len(d) for d in payloads)}
    res.const_bound_bytes = cb.total
    res.const_bound = {"weights": cb.weights, "biases": cb.biases, "requant": cb.requant,
                       "other": cb.other, "layers": cb.layers}


def _fast_path(res: ModelResult, lm: Any) -> None:
    from benchmarks.fastpath import classify, mac_share
    from executorch_espnn.payload import decode
    from executorch_espnn.pte import delegate_payloads
    from executorch_espnn.report.text import table

    rep = lm.report
    mine = []
    for i, data in enumerate(delegate_payloads(lm.pte) if rep.partitions else []):
        mine += classify(i, decode(data))
    res.fast_share = mac_share(mine)
    res.fast_share_report = rep.fast_path_mac_share
    theirs = {(f.partition, f.op): f for f in rep.fast_path}
    for layer in mine:
        f = theirs.pop((layer.partition, layer.op), None)
        if f is None:
            res.fast_mismatch.append(f"partition {layer.partition} op {layer.op}: missing from the report")
        elif f.fast != layer.fast or f.macs != layer.macs:
            res.fast_mismatch.append(
                f"partition {layer.partition} op {layer.op} ({f.layer}): report says fast={f.fast}, "
                f"{f.macs} MACs; DESIGN.md's conditions give fast={layer.fast}, {layer.macs} MACs")
    for (part, op), f in theirs.items():
        res.fast_mismatch.append(f"partition {part} op {op} ({f.layer}): in the report, not a conv/fc here")
    rows = [[str(f.partition), str(f.op), f.layer, f.shape, f"{f.macs:,}", "yes" if f.fast else "NO", f.why]
            for f in rep.fast_path]
    if rows:
        res.fast_table = table(["part", "op", "layer", "shape", "MACs", "fast", "why"], rows)


def _callgrind(res: ModelResult, lm: Any, cpu_pte: bytes, work: Path, runner: Any) -> None:
    from benchmarks import callgrind as cg

    if cg.valgrind_version() is None:
        raise cg.CallgrindError("valgrind is not installed (apt-get install valgrind)")
    for variant, pte in (("delegate", lm.pte), ("cpu", cpu_pte)):
        model_dir = cg.render_model(pte, work / res.key / variant / "model")
        exe = runner.runner_for(model_dir, work / "runner-build.log")
        cost = cg.measure(exe, work / res.key / variant / "callgrind")
        if variant == "delegate":
            res.instr_delegate = cost.instructions
            res.outside_share = cost.outside_share
            res.overhead_share = cost.overhead_share
            res.cpu_op_instructions = cost.cpu_op_instructions
            res.overhead = cost.overhead
        else:
            res.instr_cpu = cost.instructions


def bench_model(bm: bench_models.BenchModel, args: argparse.Namespace, work: Path, runner: Any,
                say: Any) -> ModelResult:
    import executorch_espnn as ee
    from benchmarks import lowering_time
    from devkit.zoo import ZOO

    z = ZOO[bm.key]
    res = ModelResult(bm.key, bm.title)
    say(f"== {bm.title} ({bm.key})")
    lm = ee.lower(z.model(), z.example_inputs(), z.calibration_data(args.calibration), target=TARGET,
                  progress=lambda m: say("   " + m))
    res.stages = lm.timings.as_dict()
    for name, fn in (("ops/memory", _ops_and_memory), ("pte", _pte_size), ("fast path", _fast_path)):
        try:
            fn(res, lm)
        except Exception as exc:  # a figure that cannot be measured is reported, not fatal
            res.errors[name] = f"{type(exc).__name__}: {exc}"
            say(traceback.format_exc())
    cpu_pte: bytes | None = None
    if "lowering" not in args.skip or "callgrind" not in args.skip:
        try:
            rounds = 1 if "lowering" in args.skip else args.rounds
            say(f"   back half x{rounds}: EspNNPartitioner / XnnpackPartitioner / no partitioner ...")
            assert lm.quantized_program is not None
            best = lowering_time.compare(lm.quantized_program, TARGET, rounds)
            res.back_half = {k: {"partition": v.partition, "to_executorch": v.to_executorch,
                                 "total": v.total} for k, v in best.items()}
            cpu_pte = best["cpu"].pte
        except Exception as exc:
            res.errors["lowering"] = f"{type(exc).__name__}: {exc}"
            say(traceback.format_exc())
    if "callgrind" not in args.skip and cpu_pte is not None:
        try:
            say("   callgrind: delegate and CPU kernels ...")
            _callgrind(res, lm, cpu_pte, work, runner)
        except Exception as exc:
            res.errors["callgrind"] = f"{type(exc).__name__}: {exc}"
            say(traceback.format_exc())
    return res


# --- printing ---------------------------------------------------------------------------------


def _kb(n: int | None) -> str:
    return "-" if n is None else f"{n / 1024:,.1f} K"


def _x(v: float | None, digits: int = 3) -> str:
    return "-" if v is None else f"{v:.{digits}f}x"


def _pct(v: float | None, digits: int = 1) -> str:
    return "-" if v is None else f"{100 * v:.{digits}f}%"


def _mi(n: int | None) -> str:
    return "-" if n is None else f"{n / 1e6:,.1f} M"


def summary_rows(results: list[ModelResult]) -> tuple[list[str], list[list[str]]]:
    head = ["model", "ops ESP-NN/total", "parts", "arena", "peak live", "arena/peak",
            "planned", "method alloc", "header RAM", ".pte", "consts bound", ".pte/bound",
            "instr (a) delegate", "instr (b) CPU", "(a)/(b)", "(a) outside ESP-NN kernels",
            "(a) overhead",
            "lowering s", "ours/XNNPACK", "S3 fast MACs"]
    rows = []
    for r in results:
        low = sum(r.stages.values()) if r.stages else None
        rows.append([
            r.title, f"{r.ops_delegated}/{r.ops_total}", str(r.partitions), _kb(r.arena_bytes),
            _kb(r.peak_live_bytes), _x(r.arena_ratio_worst if r.partitions else None),
            _kb(r.planned_bytes), _kb(r.method_allocator_bytes), _kb(r.header_ram_bytes),
            _kb(r.pte_bytes), _kb(r.const_bound_bytes), _x(r.pte_ratio), _mi(r.instr_delegate),
            _mi(r.instr_cpu), _x(r.instr_ratio), _pct(r.outside_share, 3), _pct(r.overhead_share, 3),
            "-" if low is None else f"{low:.1f}", _x(r.lowering_ratio, 2), _pct(r.fast_share),
        ])
    return head, rows


def _render(template: str, **context: Any) -> str:
    """One of benchmarks/templates/, through the package's one jinja2 environment."""
    from executorch_espnn import rendering

    return str(rendering.environment(TEMPLATES).get_template(template).render(**context))


def markdown_table(head: list[str], rows: list[list[str]]) -> str:
    return _render("summary.md.j2", head=head, rows=rows).removesuffix("\n")


def targets(results: list[ModelResult], pio: dict[str, Any] | None) -> list[tuple[str, str, str]]:
    """(figure, model, "met"/"MISSED"/"not measured" + detail) for every target."""
    out = []
    for r in results:
        if r.partitions:
            ok = r.arena_ratio_worst <= ARENA_TARGET
            out.append(("arena <= 1.01x peak live", r.title,
                        f"{'met' if ok else 'MISSED'} ({r.arena_ratio_worst:.4f}x)"))
        if r.pte_ratio is not None:
            ok = r.pte_ratio <= PTE_TARGET
            out.append((".pte <= 1.05x constants", r.title, f"{'met' if ok else 'MISSED'} ({r.pte_ratio:.4f}x)"))
        else:
            out.append((".pte <= 1.05x constants", r.title, "not measured: " + r.errors.get("pte", "")))
        if r.key in bench_models.OVERHEAD_TARGET_MODELS:
            if r.outside_share is None:
                out.append(("(a) outside kernels < 1%", r.title,
                            "not measured: " + r.errors.get("callgrind", "skipped")))
            else:
                ok = r.outside_share < OUTSIDE_TARGET
                out.append(("(a) outside kernels < 1%", r.title,
                            f"{'met' if ok else 'MISSED'} ({100 * r.outside_share:.4f}%)"))
        if r.fast_mismatch:
            out.append(("report fast-path table agrees with DESIGN.md", r.title,
                        f"MISSED ({len(r.fast_mismatch)} layers differ)"))
    if pio is not None and "error" in pio:
        out.append(("pio run on the host board", pio.get("example", "-"), "not measured: " + pio["error"]))
    return out


def report(results: list[ModelResult], pio: dict[str, Any] | None, say: Any) -> None:
    """Print the summary table, each model's details and the targets."""
    head, rows = summary_rows(results)
    say(_render("report.txt.j2", head=head, rows=rows, results=results, pio=pio,
                targets=targets(results, pio), pct=_pct).removesuffix("\n"))


def render(path: Path, markdown: Path | None) -> int:
    from dataclasses import fields

    data = json.loads(path.read_text())
    names = {f.name for f in fields(ModelResult)}
    results = [ModelResult(**{k: v for k, v in m.items() if k in names}) for m in data["models"]]
    print(f"figures of: {data['command']}")
    print("machine: " + ", ".join(f"{k} {v}" for k, v in data["machine"].items()))
    report(results, data.get("pio"), lambda msg: print(msg, flush=True))
    if markdown:
        markdown.parent.mkdir(parents=True, exist_ok=True)
        markdown.write_text(markdown_table(*summary_rows(results)) + "\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="the CI subset (small models, hello_world for pio)")
    ap.add_argument("--models", help="comma-separated zoo keys (default: all, or the quick subset)")
    ap.add_argument("--skip", default="", help=f"comma-separated figures to skip: {', '.join(SKIPPABLE)}")
    ap.add_argument("--rounds", type=int, default=None,
                    help="lowering comparison rounds, best kept (default 2, --quick 1)")
    ap.add_argument("--calibration", type=int, default=8, help="calibration batches per model")
    ap.add_argument("--work", type=Path, help="working directory (default: a temporary one)")
    ap.add_argument("--json", type=Path, help="write every figure as JSON here")
    ap.add_argument("--markdown", type=Path, help="write the summary table as Markdown here")
    ap.add_argument("--render", type=Path, metavar="FIGURES.json",
                    help="print (and --markdown) the figures a previous --json run saved; measures nothing")
    args = ap.parse_args(argv)
    if args.render:
        return render(args.render, args.markdown)
    args.skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    bad = args.skip - set(SKIPPABLE)
    if bad:
        ap.error(f"--skip: unknown figure(s) {sorted(bad)}; choose from {', '.join(SKIPPABLE)}")
    if args.rounds is None:
        args.rounds = 1 if args.quick else 2
    chosen = bench_models.select(args.quick, args.models.split(",") if args.models else None)

    def say(msg: str) -> None:
        print(msg, flush=True)

    from benchmarks import callgrind, lowering_time, machine

    t_start = time.monotonic()
    tmp = None if args.work else tempfile.TemporaryDirectory(prefix="espnn-bench-")
    work = args.work or Path(tmp.name if tmp else ".")
    work.mkdir(parents=True, exist_ok=True)
    info = machine.describe()
    say("executorch-espnn benchmarks: python benchmarks/run.py " + " ".join(argv if argv is not None else sys.argv[1:]))
    say("machine: " + ", ".join(f"{k} {v}" for k, v in info.items()))
    if "lowering" not in args.skip:
        say("warming up the lowering flows (imports are not charged to the first model) ...")
        lowering_time.warm_up(TARGET)
    runner = callgrind.RunnerBuild(work / "runner-build")
    results = [bench_model(bm, args, work, runner, say) for bm in chosen]

    pio: dict[str, Any] | None = None
    if "pio" not in args.skip:
        from benchmarks import pio_time

        example = bench_models.PIO_EXAMPLE_QUICK if args.quick else bench_models.PIO_EXAMPLE_FULL
        say(f"== pio run -e host: examples/{example} and a plain sketch ...")
        try:
            pt = pio_time.measure(work / "pio", example, noop_runs=2 if args.quick else 5)
            pio = {**asdict(pt), "noop_ratio": pt.noop_ratio}
        except Exception as exc:
            pio = {"example": example, "error": f"{type(exc).__name__}: {str(exc)[:2000]}"}

    report(results, pio, say)
    elapsed = time.monotonic() - t_start
    say(f"\n{len(results)} models in {elapsed:.0f} s")

    if args.json:
        payload = {
            "command": "python benchmarks/run.py " + " ".join(argv if argv is not None else sys.argv[1:]),
            "machine": info, "elapsed_s": elapsed,
            "models": [{**asdict(r), "pte_ratio": r.pte_ratio, "instr_ratio": r.instr_ratio,
                        "lowering_ratio": r.lowering_ratio} for r in results],
            "pio": pio,
            "targets": [{"figure": f, "model": m, "verdict": v} for f, m, v in targets(results, pio)],
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(payload, indent=1))
    if args.markdown:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text(markdown_table(*summary_rows(results)) + "\n")
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
