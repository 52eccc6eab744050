"""Write the fuzz seed corpus: every payload of the golden suite, one file each, plus a few
payloads that reach code the suite does not (softmax rows past ESP-NN's 511-entry limit, which
run on the engine's own kernel, up to the 4095 maximum; a few golden payloads re-planned with
their io tensors homed in the arena, format 2.4).

    python -m fuzz.make_corpus OUT_DIR [--seeds 0 1 ...]

Files are named by content hash, so regenerating is idempotent and duplicates collapse.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from collections.abc import Iterable
from pathlib import Path


def golden_payloads(seeds: Iterable[int] = (0,)) -> list[bytes]:
    from devkit.payload_factory import all_cases, homed, softmax_case

    extra = [softmax_case("softmax_long_row", shape=(2, 700), logit_scale=0.5),
             softmax_case("softmax_max_row", shape=(1, 4095), logit_scale=0.05)]
    golden = [c.payload for s in seeds for c in all_cases(s)]
    return [*golden, *(c.payload for c in extra), *(homed(d) for d in golden[::8])]


def write_corpus(out: Path, payloads: Iterable[bytes]) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for data in payloads:
        p = out / hashlib.sha1(data).hexdigest()
        if not p.exists():
            p.write_bytes(data)
        paths.append(p)
    return paths


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fuzz.make_corpus", description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--seeds", type=int, nargs="*", default=[0])
    args = ap.parse_args(argv)
    paths = write_corpus(args.out, golden_payloads(args.seeds))
    print(f"{len(set(paths))} seed payloads in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
