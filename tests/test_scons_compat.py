"""`pio run -v` on ESP boards: SCons's "no command string" sentinel survives the deep copy that
Arduino-ESP32 2.0.x's build script makes of espressif32's ElfToBin action
(builder/espnn_pio/scons_compat.py; the whole build: tests/test_platformio_esp.py with -v and,
with the real builders, tests/test_real_builders.py)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _print_copied_action(fix: bool) -> subprocess.CompletedProcess[str]:
    """In a fresh Python (the fix patches SCons process-wide): a command action deep-copied as
    Arduino-ESP32 2.0.x's script does, then executed the way `pio run -v` runs it (printed)."""
    code = textwrap.dedent(f"""
        import copy, sys
        if {fix!r}:
            from builder.espnn_pio import scons_compat
            assert scons_compat.keep_sentinel_on_copy()
        import SCons.Action, SCons.Environment
        env = SCons.Environment.Environment(tools=[])
        action = copy.deepcopy(SCons.Action.Action("echo copied $TARGET"))
        action.cmd_list = action.cmd_list.replace("copied", "copied and edited")
        sys.exit(action([env.File("out.bin")], [], env))
    """)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False, timeout=120, cwd=ROOT)


def test_copied_action_prints_its_command() -> None:
    proc = _print_copied_action(fix=True)
    assert proc.returncode == 0, proc.stderr
    # SCons prints the command line, then the shell runs it
    assert proc.stdout.splitlines() == ["echo copied and edited out.bin", "copied and edited out.bin"]


def test_without_the_fix_scons_fails_as_reported() -> None:
    """The defect itself, so the test above cannot pass for another reason (an SCons whose
    sentinel survives copies makes this one fail: then scons_compat is no longer needed)."""
    proc = _print_copied_action(fix=False)
    assert proc.returncode != 0
    assert "unsupported operand type(s) for +: '_Null' and 'str'" in proc.stderr

