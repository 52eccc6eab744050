"""Two programs, and two instances of each, executing at once from several threads.

``cpp/concurrency.cpp`` (built with ThreadSanitizer over the component's own sources) runs
IslandNet and CumsumNet, two Methods of each with different inputs, from four threads, while
two more threads repeatedly load, run and destroy fresh Methods (backend init/destroy racing
with execute).  Every result must equal the serial run of the same instance, and TSan must
report nothing.  The negative control builds the adapter without its execute lock: TSan then
reports the race on ESP-NN's global scratch pointer, so the clean run means something.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.hardening import cpp_build

ITERATIONS = 20


@pytest.fixture(scope="module")
def tsan_build() -> Path:
    return cpp_build.build("thread")


def test_concurrent_execution_matches_serial_under_tsan(tsan_build: Path, island_pte: Path,
                                                         cumsum_pte: Path) -> None:
    r = cpp_build.run(tsan_build / "concurrency", [str(island_pte), str(cumsum_pte),
                                                   str(ITERATIONS)], cpp_build.TSAN_ENV)
    log = r.stdout + r.stderr
    assert "ThreadSanitizer" not in log, log[-6000:]
    assert r.returncode == 0, log[-6000:]
    m = re.search(r"concurrency: (\d+) threads, (\d+) runs \((\d+) fresh inits\), (\d+) mismatches, "
                  r"(\d+) errors", r.stdout)
    assert m is not None, log[-3000:]
    threads, runs, inits, mismatches, errors = map(int, m.groups())
    assert threads == 6 and inits == 2 * (ITERATIONS // 4)
    assert runs == 4 * ITERATIONS + inits
    assert mismatches == 0 and errors == 0


def test_without_the_execute_lock_tsan_reports_the_scratch_race(tsan_build: Path,
                                                                 island_pte: Path) -> None:
    r = cpp_build.run(tsan_build / "concurrency_unserialized",
                      [str(island_pte), str(island_pte), str(ITERATIONS)], cpp_build.TSAN_ENV)
    log = r.stdout + r.stderr
    assert r.returncode == 66, log[-4000:]  # TSAN_OPTIONS exitcode
    assert "WARNING: ThreadSanitizer: data race" in log
    assert re.search(r"esp_nn_set_(conv|depthwise_conv|softmax)_scratch_buf", log), log[-4000:]
