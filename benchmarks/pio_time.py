"""``pio run`` on the host board: clean build, no-op rebuild, and the no-op against a plain
PlatformIO project (the same board and framework, a sketch without a model).

Runs the real ``pio`` offline with a private core directory seeded by
``scripts/seed_platformio.sh`` (devkit/pio_helpers.py), every call under ``timeout``.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from devkit import pio_helpers as h

PLAIN_SKETCH = """
#include <Arduino.h>

void setup() {
    Serial.begin(115200);
    Serial.println("plain sketch: no model");
}

void loop() { delay(1000); }
"""

PLAIN_INI = """
[env:host]
platform = {platform}
board = host
framework = arduino
"""


class PioBenchError(RuntimeError):
    pass


@dataclass(frozen=True)
class PioTimes:
    example: str
    clean: float  # seconds
    noop: float  # best of the no-op rebuilds
    plain_clean: float
    plain_noop: float

    @property
    def noop_ratio(self) -> float:
        return self.noop / self.plain_noop


def _timed(core: Path, project: Path, timeout: int, workspace: Path | None = None) -> float:
    t0 = time.monotonic()
    r = h.pio(core, project, "run", "-e", "host", timeout=timeout, workspace=workspace)
    elapsed = time.monotonic() - t0
    if r.returncode != 0:
        raise PioBenchError(f"pio run in {project} failed ({r.returncode}):\n{r.output[-3000:]}")
    return elapsed


def measure(work: Path, example: str, noop_runs: int = 3, timeout: int = 1200) -> PioTimes:
    core = work / "core"
    h.seed_core(core)
    # the example builds in place, as a user runs it, with its .pio folder moved to `work`
    # (PLATFORMIO_WORKSPACE_DIR) so the checkout stays clean
    proj = h.example_dir(example)
    ws = work / example
    plain = work / "plain"
    for p in (ws, plain):
        shutil.rmtree(p, ignore_errors=True)
    h.write_project(plain, PLAIN_INI.format(platform=h.platform_spec()), {"src/main.cpp": PLAIN_SKETCH})
    clean = _timed(core, proj, timeout, ws)
    plain_clean = _timed(core, plain, timeout)
    noops: list[float] = []
    plain_noops: list[float] = []
    for _ in range(max(1, noop_runs)):  # alternating, so a load spike hits both alike
        noops.append(_timed(core, proj, timeout, ws))
        plain_noops.append(_timed(core, plain, timeout))
    return PioTimes(example, clean, min(noops), plain_clean, min(plain_noops))
