"""The component's Kconfig for builds that are not ESP-IDF (host, Arduino): the builder's side
of executorch_espnn.kconfig, which owns the resolution, the header format and menuconfig.

ESP-IDF resolves espnn_component/Kconfig itself and shows it in its menuconfig.  Elsewhere the
project's sdkconfig.<env> (written by `pio run -t menuconfig`) or, when there is none,
sdkconfig.defaults, is resolved by kconfiglib into the same CONFIG_ESPNN_ET_* macros, written
as $BUILD_DIR/executorch/config/espnn_sdkconfig.h, which espnn_config.h includes.

The resolver runs as a child process (`python -m executorch_espnn.kconfig`, with the platform
checkout's package when there is one), like the lowering: SCons never imports kconfiglib.  It
reports every file it read; the stamp keeps that list, so a no-op build hashes exactly those
files and runs nothing.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PREFIX = "CONFIG_ESPNN_ET_"
PSRAM_HINT = (
    "on an ESP board with PSRAM add `build_flags = -DBOARD_HAS_PSRAM` to the env; "
    "the host board has none"
)
RUNNER = Path(__file__).resolve().with_name("checkout.py")  # runs a module of the checkout's package
MODULE = "executorch_espnn.kconfig"


class KconfigGlueError(Exception):
    """One line for the build to print."""


@dataclass
class KconfigSetup:
    component_kconfig: Path
    out_dir: Path  # $BUILD_DIR/executorch/config
    sdkconfig: Path  # <project>/sdkconfig.<env>
    defaults: Path  # <project>/sdkconfig.defaults
    has_psram: bool
    platform_dir: Path  # whose executorch_espnn resolves, when it is a checkout
    python: str  # PlatformIO's Python ($PYTHONEXE)
    profile: bool = False  # custom_executorch_profile = yes: CONFIG_ESPNN_ET_PROFILE forced on
    _values: dict[str, Any] | None = field(default=None, repr=False)

    def config_files(self) -> list[Path]:
        """ESP-IDF's rule: sdkconfig.<env> when it exists, else sdkconfig.defaults."""
        for p in (self.sdkconfig, self.defaults):
            if p.is_file():
                return [p]
        return []

    def overrides(self) -> dict[str, bool]:
        # SPIRAM is the board's fact, as ESP-IDF's own sdkconfig.h is for Arduino-ESP32: on
        # when the board declares PSRAM (BOARD_HAS_PSRAM), off otherwise (the host has none).
        # custom_executorch_profile = yes turns the profiler on (the option is the one switch a
        # PlatformIO user sets; menuconfig can turn it on as well); absent when off, so an
        # unprofiled build resolves with the same command as before
        return {"SPIRAM": self.has_psram, **({"ESPNN_ET_PROFILE": True} if self.profile else {})}

    def command(self, action: str, *extra: str) -> list[str]:
        """The resolver's command line for `header` or `menuconfig`."""
        cmd = [self.python, str(RUNNER), str(self.platform_dir), MODULE, action,
               "--kconfig", str(self.component_kconfig)]
        for path in self.config_files():
            cmd += ["--config", str(path)]
        for name, value in self.overrides().items():
            cmd += ["--set", f"{name}={'y' if value else 'n'}"]
        return [*cmd, *extra]

    def _key(self, inputs: list[str]) -> str:
        """Hash of everything the header depends on: the files the resolver read last time,
        which sdkconfig files apply now, the overrides and the command."""
        h = hashlib.sha256()
        for name in inputs:
            path = Path(name)
            h.update(name.encode() + b"\0")
            h.update(path.read_bytes() if path.is_file() else b"<missing>")
            h.update(b"\0")
        h.update(json.dumps(self.command("header"), sort_keys=True).encode())
        return h.hexdigest()

    @property
    def header(self) -> Path:
        return self.out_dir / "espnn_sdkconfig.h"

    @property
    def _stamp(self) -> Path:
        return self.out_dir / "espnn_kconfig.json"

    def _cached(self) -> dict[str, Any] | None:
        try:
            data = json.loads(self._stamp.read_text(encoding="utf8"))
            if data["key"] != self._key(list(data["inputs"])) or not self.header.is_file():
                return None
        except (OSError, ValueError, KeyError, TypeError):
            return None
        values: dict[str, Any] = data["values"]
        return values

    def _resolve(self) -> dict[str, Any]:
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self._stamp.unlink(missing_ok=True)
        proc = subprocess.run(
            self.command("header", "--header", str(self.header), "--json", str(self._stamp)),
            capture_output=True, text=True, errors="replace", check=False,
        )
        if proc.returncode != 0:
            raise KconfigGlueError(self._failure(proc.returncode, proc.stderr))
        data = json.loads(self._stamp.read_text(encoding="utf8"))
        data["key"] = self._key(list(data["inputs"]))
        self._stamp.write_text(json.dumps(data, sort_keys=True), encoding="utf8")
        values: dict[str, Any] = data["values"]
        return values

    def _failure(self, rc: int, stderr: str) -> str:
        lines = stderr.strip().splitlines()
        errors = [ln[len("Error: "):] for ln in lines if ln.startswith("Error: ")]
        if errors:  # a KconfigError: already one line naming file and fix
            message = errors[-1]
            if not self.has_psram and "CONFIG_SPIRAM" in message:
                message += f" (this board declares no PSRAM; {PSRAM_HINT})"
            return message
        last = lines[-1] if lines else f"exit code {rc}"
        if "ModuleNotFoundError" in last or "ImportError" in last:
            return (
                f"PlatformIO's Python cannot import {MODULE} ({last}); install with: "
                f'"{sys.executable}" -m pip install executorch-espnn'
            )
        return f"resolving {self.component_kconfig} failed: {last}"

    def values(self) -> dict[str, Any]:
        """The resolved CONFIG_ESPNN_ET_* values; espnn_sdkconfig.h is current afterwards
        (rendered again only when its inputs changed)."""
        if self._values is None:
            self._values = self._cached()
        if self._values is None:
            self._values = self._resolve()
        return self._values

    def write_header(self) -> Path:
        """espnn_sdkconfig.h for this env."""
        self.values()
        return self.header

    def placement(self) -> str:
        v = self.values()
        if v.get(PREFIX + "ARENA_IN_INTERNAL") or v.get(PREFIX + "PLANNED_IN_INTERNAL"):
            return "internal"
        if v.get(PREFIX + "ARENA_IN_PSRAM") and v.get(PREFIX + "PLANNED_IN_PSRAM"):
            return "psram"
        return "auto"

    def internal_cap(self) -> int:
        return int(self.values().get(PREFIX + "INTERNAL_RAM_CAP", 0) or 0)


def board_has_psram(env: Any) -> bool:
    if "BOARD" not in env:
        return False
    flags = env.BoardConfig().get("build.extra_flags", "")
    text = " ".join(flags) if isinstance(flags, list) else str(flags)
    text += " " + " ".join(str(f) for f in env.get("BUILD_FLAGS", []))
    return "BOARD_HAS_PSRAM" in text


def for_env(env: Any, platform_dir: Path, profile: bool = False) -> KconfigSetup | None:
    kconfig = platform_dir / "espnn_component" / "Kconfig"
    if not kconfig.is_file():
        return None
    project = Path(env.subst("$PROJECT_DIR"))
    return KconfigSetup(
        component_kconfig=kconfig,
        out_dir=Path(env.subst("$BUILD_DIR")) / "executorch" / "config",
        sdkconfig=project / f"sdkconfig.{env['PIOENV']}",
        defaults=project / "sdkconfig.defaults",
        has_psram=board_has_psram(env),
        platform_dir=platform_dir,
        python=env.subst("$PYTHONEXE"),
        profile=profile,
    )


def run_menuconfig(setup: KconfigSetup) -> int:
    """kconfiglib's menuconfig in this terminal over the same Kconfig, saved to sdkconfig.<env>
    (started from sdkconfig.defaults, as ESP-IDF does: executorch_espnn.kconfig.menuconfig)."""
    return subprocess.call(
        setup.command("menuconfig", "--out-dir", str(setup.out_dir), "--sdkconfig", str(setup.sdkconfig))
    )


def add_menuconfig_target(env: Any, setup: KconfigSetup | None) -> None:
    from SCons.Script import AlwaysBuild

    def action(target: Any, source: Any, env: Any) -> int:
        if setup is None:
            sys.stderr.write("Error: espnn_component/Kconfig not found in the platform folder\n")
            return 1
        return run_menuconfig(setup)

    AlwaysBuild(env.Alias("menuconfig", None, env.VerboseAction(action, "Running menuconfig...")))


def apply(env: Any, setup: KconfigSetup | None) -> None:
    """Write espnn_sdkconfig.h for this env and put it on the include path."""
    if setup is None:
        return
    header = setup.write_header()
    env.Append(CPPPATH=[str(header.parent)])
