"""Corrupted and truncated ``.pte`` files, and delegate payloads swapped for random bytes.

A real program lowered by ``executorch_espnn.lower`` (IslandNet: two delegates around a CPU
island) is damaged in many ways and run through ``executorch_espnn.host.run`` (and, for
truncations, through ExecuTorch's own loader alone).  Everything runs in one child process
(``pte_child.py``) that reports each outcome before the next case starts: a crash fails the
test and names the case.  Every damaged program must fail with an exception; a payload of
random bytes must be refused by ``EspNNDelegateBackend::init()`` with its reason; and the
good program still runs afterwards, with the same outputs.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
CHILD = Path(__file__).resolve().parent / "pte_child.py"
N_FLIPS = 40


@dataclass(frozen=True)
class Program:
    pte: bytes
    payload_at: tuple[int, ...]
    payload_len: tuple[int, ...]
    x: np.ndarray


@pytest.fixture(scope="module")
def program(island_pte: Path) -> Program:
    from devkit.zoo import ZOO
    from executorch_espnn.pte import delegate_payloads

    pte = island_pte.read_bytes()
    payloads = delegate_payloads(pte)
    at = tuple(pte.find(p) for p in payloads)
    assert len(payloads) == 2 and all(a > 0 for a in at), "IslandNet should lower to two delegates"
    return Program(pte, at, tuple(len(p) for p in payloads),
                   ZOO["island_net"].example_inputs()[0].numpy().astype(np.float32))


def _cases(p: Program) -> list[tuple[str, str, bytes]]:
    """(name, mode, pte bytes)."""
    pte, n = p.pte, len(p.pte)
    rng = random.Random(20261130)
    cases: list[tuple[str, str, bytes]] = [("control_first", "run", pte)]
    cuts = sorted({0, 1, 8, 16, 32, 64, 200, 1024, p.payload_at[0], p.payload_at[0] + 100,
                   p.payload_at[1] + 10, n // 2, n - p.payload_len[1] // 2, n - 1})
    for cut in cuts:
        cases.append((f"truncated_{cut}", "run", pte[:cut]))
        cases.append((f"truncated_{cut}_loader", "load", pte[:cut]))
    for k, (at, length) in enumerate(zip(p.payload_at, p.payload_len, strict=True)):
        for seed in range(3):
            r = random.Random(seed * 7919 + k)
            junk = bytes(r.randrange(256) for _ in range(length))
            cases.append((f"payload{k}_random_{seed}", "run", pte[:at] + junk + pte[at + length:]))
        # the version header intact, everything after it random
        r = random.Random(100 + k)
        junk = bytes(r.randrange(256) for _ in range(length - 64))
        cases.append((f"payload{k}_random_body", "run", pte[: at + 64] + junk + pte[at + length:]))
        cases.append((f"payload{k}_zeroed", "run", pte[:at] + bytes(length) + pte[at + length:]))
    outside = [i for i in range(n)
               if not any(a <= i < a + ln for a, ln in zip(p.payload_at, p.payload_len, strict=True))]
    for i in range(N_FLIPS):
        bad = bytearray(pte)
        for _ in range(rng.randint(1, 4)):
            bad[rng.choice(outside)] = rng.randrange(256)
        cases.append((f"program_flips_{i}", "run", bytes(bad)))
        cases.append((f"program_flips_{i}_loader", "load", bytes(bad)))
    cases.append(("control_last", "run", pte))
    return cases


@pytest.fixture(scope="module")
def outcomes(program: Program, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    work = tmp_path_factory.mktemp("pte")
    np.save(work / "x.npy", program.x)
    listing = []
    for name, mode, data in _cases(program):
        path = work / f"{name}.pte"
        path.write_bytes(data)
        listing.append({"name": name, "pte": str(path), "input": str(work / "x.npy"), "mode": mode})
    (work / "cases.json").write_text(json.dumps(listing))
    script = (f"import runpy, sys; sys.path.append({str(ROOT)!r}); "
              f"sys.argv = [{str(CHILD)!r}, {str(work / 'cases.json')!r}]; "
              f"runpy.run_path({str(CHILD)!r}, run_name='__main__')")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, timeout=1200, check=False)
    results = {}
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            r = json.loads(line)
            results[r["name"]] = r
    done = [c["name"] for c in listing if c["name"] in results]
    crashed_on = listing[len(done)]["name"] if len(done) < len(listing) else None
    assert proc.returncode == 0 and "__done__" in results, (
        f"the child died (exit {proc.returncode}) on case {crashed_on}:\n{proc.stderr[-4000:]}")
    return results


def test_every_case_reported_and_good_program_still_runs(outcomes: dict[str, dict[str, Any]]) -> None:
    first, last = outcomes["control_first"], outcomes["control_last"]
    assert first["outcome"] == "ok" and last["outcome"] == "ok", (first, last)
    assert first["shapes"] == [[1, 5]]
    assert last["first"] == first["first"]


def test_truncated_pte_fails_cleanly(outcomes: dict[str, dict[str, Any]]) -> None:
    truncated = {k: v for k, v in outcomes.items() if k.startswith("truncated_")}
    assert len(truncated) >= 20
    for name, r in truncated.items():
        assert r["outcome"] == "error", (name, r)
        if not name.endswith("_loader"):
            assert r["type"] == "HostRuntimeError", (name, r)


def test_random_payload_refused_by_init(outcomes: dict[str, dict[str, Any]]) -> None:
    for k in (0, 1):
        for seed in range(3):
            r = outcomes[f"payload{k}_random_{seed}"]
            assert r["outcome"] == "error" and r["type"] == "HostRuntimeError", r
            msg = r["message"]
            assert "loading method 'forward' failed" in msg, msg
            assert "EspNNDelegateBackend: init:" in msg and "magic" in msg, msg
        zeroed = outcomes[f"payload{k}_zeroed"]
        assert zeroed["outcome"] == "error" and "EspNNDelegateBackend: init:" in zeroed["message"]


def test_random_payload_body_names_a_field(outcomes: dict[str, dict[str, Any]]) -> None:
    for k in (0, 1):
        r = outcomes[f"payload{k}_random_body"]
        assert r["outcome"] == "error", r
        assert "EspNNDelegateBackend: init:" in r["message"] and "field '" in r["message"], r


def test_program_corruption_never_crashes(outcomes: dict[str, dict[str, Any]]) -> None:
    flips = {k: v for k, v in outcomes.items() if k.startswith("program_flips_")}
    assert len(flips) == 2 * N_FLIPS
    for name, r in flips.items():
        # a flip may land on bytes nothing reads (then the program loads), otherwise a clean
        # error: HostRuntimeError from host.run, RuntimeError from ExecuTorch's loader
        assert r["outcome"] in ("ok", "error"), r
        if r["outcome"] == "ok" and not name.endswith("_loader"):
            assert r["shapes"] == [[1, 5]], r
        if r["outcome"] == "error":
            want = "RuntimeError" if name.endswith("_loader") else "HostRuntimeError"
            assert r["type"] == want, r
