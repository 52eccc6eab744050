"""`pio run -t menuconfig` on the host board, driven in a real terminal (tmux): kconfiglib's
menuconfig over espnn_component/Kconfig, saved to sdkconfig.<env>; the next build's
CONFIG_ESPNN_ET_* macros (and so the program) follow."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from devkit import pio_helpers as h

SKETCH = """
#include <Arduino.h>
#include "espnn_config.h"
void setup() { Serial.printf("arena placement %d\\n", (int)ESPNN_CFG_ARENA_PLACEMENT); }
void loop() {}
"""

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


class Tmux:
    def __init__(self, name: str) -> None:
        self.name = name

    def start(self, command: str) -> None:
        subprocess.run(["tmux", "kill-session", "-t", self.name], capture_output=True, check=False)
        subprocess.run(
            ["tmux", "new-session", "-d", "-s", self.name, "-x", "160", "-y", "48", command],
            check=True,
        )

    def screen(self) -> str:
        return subprocess.run(["tmux", "capture-pane", "-p", "-t", self.name],
                              capture_output=True, text=True, check=False).stdout

    def wait_for(self, text: str, timeout: float = 60) -> str:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            screen = self.screen()
            if text in screen:
                return screen
            time.sleep(0.3)
        raise AssertionError(f"{text!r} did not appear on the terminal:\n{self.screen()}")

    def keys(self, *keys: str) -> None:
        for k in keys:
            subprocess.run(["tmux", "send-keys", "-t", self.name, k], check=True)
            time.sleep(0.4)

    def kill(self) -> None:
        subprocess.run(["tmux", "kill-session", "-t", self.name], capture_output=True, check=False)


@pytest.mark.slow
def test_menuconfig_changes_placement_and_next_build(tmp_path: Path) -> None:
    core = tmp_path / "core"
    h.seed_core(core)
    proj = h.write_project(
        tmp_path / "p",
        f"""
        [env:host]
        platform = {h.platform_spec()}
        board = host
        framework = arduino
        """,
        {"src/main.cpp": SKETCH},
    )
    r = h.pio(core, proj, "run", "-e", "host", "-t", "exec", timeout=300).check()
    assert "arena placement 0" in r.stdout  # Kconfig default: automatic

    env = " ".join(f"{k}={shlex.quote(v)}" for k, v in h.pio_env(core).items()
                   if k.startswith(("PLATFORMIO_", "PATH", "HOME")))
    done = tmp_path / "done.txt"
    term = Tmux(f"espnn-mc-{tmp_path.name}")
    # --foreground: menuconfig must own the terminal to draw and read keys
    term.start(f"cd {shlex.quote(str(proj))} && env {env} timeout --foreground 180 {h.PIO} "
               f"run -e host -t menuconfig; echo EXIT=$? > {shlex.quote(str(done))}; sleep 5")
    try:
        term.wait_for("ExecuTorch ESP-NN")
        term.keys("/")
        term.wait_for("Jump to symbol")
        term.keys("ESPNN_ET_ARENA_IN_INTERNAL")
        term.wait_for('"Internal RAM only"')
        term.keys("Enter")
        term.wait_for("( ) Internal RAM only")
        term.keys("Space")
        term.wait_for("Delegate arena placement (Internal RAM only)")
        term.keys("Q")
        term.wait_for("Save configuration?")
        term.keys("y")
        end = time.monotonic() + 60
        while not done.is_file() and time.monotonic() < end:
            time.sleep(0.3)
        assert done.read_text().strip() == "EXIT=0"
    finally:
        term.kill()

    saved = (proj / "sdkconfig.host").read_text()
    assert "CONFIG_ESPNN_ET_ARENA_IN_INTERNAL=y" in saved
    r = h.pio(core, proj, "run", "-e", "host", "-t", "exec", timeout=300).check()
    header = (proj / ".pio" / "build" / "host" / "executorch" / "config" / "espnn_sdkconfig.h").read_text()
    assert "#define CONFIG_ESPNN_ET_ARENA_IN_INTERNAL 1" in header
    assert "CONFIG_ESPNN_ET_ARENA_IN_AUTO" not in header
    assert "arena placement 1" in r.stdout


@pytest.mark.slow
def test_refused_sdkconfig_value_stops_the_build(tmp_path: Path) -> None:
    core = tmp_path / "core"
    h.seed_core(core)
    proj = h.write_project(
        tmp_path / "p",
        f"""
        [env:host]
        platform = {h.platform_spec()}
        board = host
        framework = arduino
        """,
        {"src/main.cpp": SKETCH, "sdkconfig.defaults": "CONFIG_ESPNN_ET_ARENA_IN_PSRAM=y\n"},
    )
    r = h.pio(core, proj, "run", "-e", "host", timeout=300)
    assert r.returncode != 0
    errors = r.error_lines()
    assert len(errors) == 1 and "sdkconfig.defaults:1" in errors[0] and "CONFIG_SPIRAM" in errors[0], r.output
