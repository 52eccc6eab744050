"""Fuzz the engine for longer than CI does, then replay and measure what the corpus covers.

    python -m fuzz.run_long [--minutes 30] [--corpus build/fuzz/corpus] [--i386]
                            [--report build/fuzz/report.json]

1. libFuzzer (clang-14, ASan + UBSan, x86_64; with ``--i386`` a second run of the i386 build)
   from the golden seeds into a persistent corpus directory (reused by later runs);
2. the seeds and the whole corpus replayed through ``gcc -m32`` ASan/UBSan;
3. source coverage of the engine and host kernels by that corpus (llvm-cov).

Exits 1 on any finding (crash or timeout artifacts are left next to the corpus).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

from fuzz import build, make_corpus

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fuzz.run_long",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--corpus", type=Path, default=ROOT / "build" / "fuzz" / "corpus")
    ap.add_argument("--i386", action="store_true", help="also fuzz the 32-bit libFuzzer build")
    ap.add_argument("--seed", type=int, default=int(time.time()) & 0x7FFFFFFF)
    ap.add_argument("--report", type=Path, help="write the numbers as JSON here")
    args = ap.parse_args(argv)

    seconds = max(1, int(args.minutes * 60))
    artifacts = args.corpus.parent / "artifacts"
    artifacts.mkdir(parents=True, exist_ok=True)
    report: dict[str, object] = {"seconds_per_run": seconds, "seed": args.seed}
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        seeds = Path(tmp) / "seeds"
        make_corpus.write_corpus(seeds, make_corpus.golden_payloads())
        runs = [("x86_64", build.fuzzer())]
        if args.i386:
            runs.append(("i386", build.fuzzer(m32=True)))
        for arch, exe in runs:
            print(f"fuzzing {arch} for {seconds} s into {args.corpus} ...", flush=True)
            r = build.run_fuzzer(exe, args.corpus, seeds, max_total_time=seconds,
                                 seed=args.seed, artifacts=artifacts)
            findings = r.findings()
            print(f"{arch}: {r.executed} executions at {r.exec_per_sec}/s, cov {r.coverage} "
                  f"edges, ft {r.features}, corpus {r.corpus_units} units "
                  f"({r.new_units} new), peak rss {r.peak_rss_mb} MB")
            print(f"{arch}: depth {r.depth}")
            if findings or r.returncode != 0:
                ok = False
                print("\n".join(findings) or r.log[-4000:])
            report[arch] = {k: v for k, v in asdict(r).items() if k != "log"}
        replay = build.run_replay(build.replay(m32=True), [seeds, args.corpus], timeout=3600)
        print(f"m32 replay: exit {replay.returncode}, {replay.log.strip().splitlines()[0]}")
        print(f"m32 replay: depth {replay.depth}")
        ok = ok and replay.returncode == 0
        report["m32_replay"] = {"returncode": replay.returncode,
                                "depth": asdict(replay.depth) if replay.depth else None}
        cov = build.coverage([seeds, args.corpus])
        print(f"coverage: lines {cov.line_percent:.1f}% ({cov.lines_covered}/{cov.lines_total}), "
              f"branches {cov.branch_percent:.1f}% ({cov.branches_covered}/{cov.branches_total})")
        for name, pct in sorted(cov.per_file.items(), key=lambda kv: kv[1])[:6]:
            print(f"  least covered: {name} {pct:.1f}%")
        report["coverage"] = asdict(cov)
    if args.report:
        args.report.parent.mkdir(parents=True, exist_ok=True)
        args.report.write_text(json.dumps(report, indent=2) + "\n")
    print("fuzz: PASS" if ok else "fuzz: FINDINGS")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
