"""Bounded fuzzing of the engine in CI, and the corpus replayed with 32-bit ``size_t``.

libFuzzer (clang-14, ASan + UBSan) starts from the golden suite's payloads and runs for a
bounded time (``ESPNN_FUZZ_SECONDS``, default 60); any sanitizer report, oracle failure,
crash or timeout fails the test.  The seeds and everything the run added to the corpus are
then replayed through the same harness built with ``gcc -m32 -fsanitize=address,undefined``.
``python -m fuzz.run_long`` runs the same for longer and reports coverage.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

import pytest

from executorch_espnn.payload.format import FORMAT_MAJOR
from fuzz import build, make_corpus

FUZZ_SECONDS = int(os.environ.get("ESPNN_FUZZ_SECONDS", "60"))


@dataclass(frozen=True)
class Session:
    seeds: Path
    corpus: Path
    artifacts: Path
    result: build.FuzzResult


@pytest.fixture(scope="module")
def seeds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("seeds")
    make_corpus.write_corpus(d, make_corpus.golden_payloads())
    return d


@pytest.fixture(scope="module")
def session(seeds: Path, tmp_path_factory: pytest.TempPathFactory) -> Session:
    work = tmp_path_factory.mktemp("fuzz")
    corpus, artifacts = work / "corpus", work / "artifacts"
    artifacts.mkdir()
    result = build.run_fuzzer(build.fuzzer(), corpus, seeds, max_total_time=FUZZ_SECONDS,
                              seed=20261130, artifacts=artifacts)
    return Session(seeds, corpus, artifacts, result)


def test_bounded_fuzz_run_finds_nothing(session: Session) -> None:
    r = session.result
    summary = (f"fuzz: {r.executed} executions, {r.exec_per_sec} exec/s, cov {r.coverage} "
               f"edges, ft {r.features}, corpus {r.corpus_units} units, {r.new_units} new, "
               f"peak rss {r.peak_rss_mb} MB; {r.depth}")
    print(summary)
    assert r.findings() == [], "\n".join(r.findings()) + "\n" + r.log[-6000:]
    assert r.returncode == 0, r.log[-6000:]
    assert list(session.artifacts.iterdir()) == [], "libFuzzer wrote crash/timeout artifacts"
    # it really ran, and deep: payloads got past validation and were invoked
    assert r.executed >= 20 * FUZZ_SECONDS, summary
    assert r.coverage > 0 and r.corpus_units > 0, summary
    assert r.depth is not None and r.depth.invoked > 1000, summary


def test_every_seed_reaches_invoke(seeds: Path) -> None:
    """The harness is not vacuous: each golden payload is valid, bound and invoked."""
    r = build.run_replay(build.replay(m32=True), [seeds])
    n = len(list(seeds.iterdir()))
    assert r.returncode == 0, r.log[-4000:]
    assert f"replayed {n} inputs" in r.log and "size_t is 32 bits" in r.log
    d = r.depth
    assert d is not None and d.inputs == n
    # each seed is exercised as given, with patched sizes (identical for a valid payload) and
    # for some at an odd address, where int32/float32 constants in place are refused
    assert d.valid == d.exercises and d.too_big == 0, d
    assert d.bound + d.misaligned == d.exercises and d.invoked == d.bound, d
    assert d.invoked >= 2 * n, d


def test_corpus_replays_clean_with_32_bit_size_t(session: Session) -> None:
    exe = build.replay(m32=True)
    r = build.run_replay(exe, [session.seeds, session.corpus])
    n = len(list(session.seeds.iterdir())) + len(list(session.corpus.iterdir()))
    assert r.returncode == 0, r.log[-6000:]
    assert f"replayed {n} inputs" in r.log
    assert "size_t is 32 bits" in r.log
    assert "runtime error" not in r.log and "AddressSanitizer" not in r.log
    assert r.depth is not None and r.depth.invoked > 0


def test_planted_out_of_bounds_read_is_caught(tmp_path: Path) -> None:
    """The harness catches an engine bug: with the header length check weakened in a copy of
    parse.c, a 12-byte input makes the parser read total_size past the buffer, and ASan (exact-size
    buffers, as libFuzzer hands them over) stops the replay."""
    parse = build.ENGINE / "src" / "parse.c"
    text = parse.read_text()
    check = "if (len < ESPNN_HEADER_SIZE) {"
    assert text.count(check) == 1, "parse.c changed: update the planted bug"
    planted = tmp_path / "parse.c"
    planted.write_text(text.replace(check, "if (len < 8) {"))
    sources = [planted if p == parse else p for p in build.engine_sources()]
    exe = build._build("fuzz_replay-m32-planted", "gcc",
                       ["-m32", "-g", "-O1", *build.SANITIZE],
                       [build.FUZZ / "fuzz_engine.c", build.FUZZ / "replay_main.c", *sources])
    bad = tmp_path / "short"
    # the current format version, so the parser gets past the version check to total_size
    bad.write_bytes(b"ESNN" + struct.pack("<HH", FORMAT_MAJOR, 0) + bytes(4))
    r = build.run_replay(exe, [bad])
    assert r.returncode == 86, r.log[-3000:]  # ASAN_OPTIONS exitcode
    assert "heap-buffer-overflow" in r.log
    # the real parser rejects the same input cleanly
    ok = build.run_replay(build.replay(m32=True), [bad])
    assert ok.returncode == 0, ok.log
