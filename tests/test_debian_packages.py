"""scripts/debian_packages.sh: the test command's check for the Debian packages the suite needs
(issue 27).  Run with a PATH that lacks some of the listed commands and with installing
forbidden (ESPNN_APT=never), it must stop with one message naming exactly the missing packages
and the command that installs them; with everything present it says nothing."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "debian_packages.sh"
LIST = ROOT / "scripts" / "debian_packages.txt"


def _entries() -> list[tuple[str, str | None]]:
    out = []
    for line in LIST.read_text().splitlines():
        words = line.split()
        if words and not words[0].startswith("#"):
            out.append((words[0], words[1] if len(words) > 1 else None))
    return out


def _path_without(tmp: Path, hidden: set[str]) -> str:
    """A PATH of one folder with links to every command the shell script and the listed
    packages use, except ``hidden``."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    wanted = {"bash", "dpkg-query", "grep", "id", "cat", "dirname"} | {c for _, c in _entries() if c}
    for cmd in wanted - hidden:
        real = shutil.which(cmd)
        if real is not None:
            (bin_dir / cmd).symlink_to(real)
    return str(bin_dir)


def _run(path: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PATH=path, ESPNN_APT="never")
    return subprocess.run([shutil.which("bash") or "/bin/bash", str(SCRIPT)], env=env,
                          capture_output=True, text=True, timeout=60, check=False)


def test_the_list_names_a_command_for_the_tools_the_tests_call() -> None:
    entries = dict(_entries())
    assert len(entries) == len(_entries()), "a package listed twice"
    for pkg, cmd in [("qemu-system-arm", "qemu-system-arm"), ("clang-14", "clang-14"),
                     ("chromium", "chromium"), ("gcc-arm-none-eabi", "arm-none-eabi-gcc")]:
        assert entries[pkg] == cmd


def test_ci_runs_the_readmes_test_command_and_nothing_else() -> None:
    run = (ROOT / ".ci" / "run").read_text()
    assert "exec bash scripts/test.sh" in run and "apt-get" not in run
    test_sh = (ROOT / "scripts" / "test.sh").read_text()
    assert "scripts/debian_packages.sh" in test_sh
    assert "bash scripts/test.sh" in (ROOT / "README.md").read_text()


def test_everything_present_says_nothing(tmp_path: Path) -> None:
    proc = _run(_path_without(tmp_path, set()))
    missing_here = [p for p, c in _entries() if c and shutil.which(c) is None]
    if missing_here:  # this machine lacks some: the message must name exactly those
        assert proc.returncode == 3 and all(p in proc.stderr for p in missing_here), proc.stderr
    else:
        assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")


def test_a_missing_tool_stops_with_the_packages_and_the_command(tmp_path: Path) -> None:
    hidden = {"qemu-system-arm", "clang-14"}
    proc = _run(_path_without(tmp_path, hidden))
    assert proc.returncode == 3, proc.stdout + proc.stderr
    lines = proc.stderr.splitlines()
    assert lines[0].startswith("test setup: missing Debian packages the tests need: ")
    named = lines[0].split(": ", 2)[2].split()
    assert {"qemu-system-arm", "clang-14"} <= set(named)
    present = {p for p, c in _entries() if c and c not in hidden and shutil.which(c)}
    assert not present & set(named), "a package whose command is on PATH was called missing"
    assert lines[-1].strip() == "sudo apt-get install -y --no-install-recommends " + " ".join(named)
