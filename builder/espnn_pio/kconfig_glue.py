"""The component's Kconfig for builds that are not ESP-IDF (host, Arduino): glue around
executorch_espnn.kconfig, which owns the resolution and the header format.

ESP-IDF resolves espnn_component/Kconfig itself and shows it in its menuconfig.  Elsewhere the
project's sdkconfig.<env> (written by `pio run -t menuconfig`) or, when there is none,
sdkconfig.defaults, is resolved by kconfiglib into the same CONFIG_ESPNN_ET_* macros, written
as $BUILD_DIR/executorch/config/espnn_sdkconfig.h, which espnn_config.h includes.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
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


class KconfigGlueError(Exception):
    """One line for the build to print."""


def _kconfig_module() -> Any:
    try:
        from executorch_espnn import kconfig
    except ImportError as exc:
        raise KconfigGlueError(
            f"PlatformIO's Python cannot import executorch_espnn.kconfig ({exc}); install with: "
            f'"{sys.executable}" -m pip install executorch-espnn'
        ) from exc
    return kconfig


def _resolver_files() -> list[Path]:
    """executorch_espnn/kconfig.py and its templates, found without importing them."""
    spec = importlib.util.find_spec("executorch_espnn")
    if spec is None or not spec.submodule_search_locations:
        return []
    pkg = Path(next(iter(spec.submodule_search_locations)))
    templates = pkg.parent / "templates" / "kconfig"
    return [pkg / "kconfig.py", *sorted(templates.glob("*.j2"))]


@dataclass
class KconfigSetup:
    component_kconfig: Path
    out_dir: Path  # $BUILD_DIR/executorch/config
    sdkconfig: Path  # <project>/sdkconfig.<env>
    defaults: Path  # <project>/sdkconfig.defaults
    has_psram: bool
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
        return {"SPIRAM": self.has_psram}

    def _inputs_key(self) -> str:
        """Hash of everything the resolution and the header depend on, so that a no-op build
        neither imports kconfiglib and jinja2 nor parses the Kconfig."""
        h = hashlib.sha256()
        inputs = [self.component_kconfig, *_resolver_files(), *self.config_files()]
        for path in inputs:
            h.update(str(path).encode() + b"\0")
            h.update(path.read_bytes() if path.is_file() else b"<missing>")
            h.update(b"\0")
        h.update(json.dumps(self.overrides(), sort_keys=True).encode())
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
        except (OSError, ValueError):
            return None
        if data.get("key") != self._inputs_key() or not self.header.is_file():
            return None
        values: dict[str, Any] = data["values"]
        return values

    def values(self) -> dict[str, Any]:
        if self._values is None:
            self._values = self._cached()
        if self._values is None:
            kconfig = _kconfig_module()
            try:
                self._values = dict(
                    kconfig.resolve(self.component_kconfig, self.config_files(), self.overrides())
                )
            except Exception as exc:  # KconfigError: already one line naming file and fix
                message = str(exc)
                if not self.has_psram and "CONFIG_SPIRAM" in message:
                    message += f" (this board declares no PSRAM; {PSRAM_HINT})"
                raise KconfigGlueError(message) from exc
        return self._values

    def write_header(self) -> Path:
        """espnn_sdkconfig.h for this env; rendered only when its inputs changed."""
        if self._cached() is not None:
            self._values = self._cached()
            return self.header
        values = self.values()
        kconfig = _kconfig_module()
        kconfig.render_header(
            values, self.header, kconfig=self.component_kconfig, sources=self.config_files()
        )
        self._stamp.write_text(
            json.dumps({"key": self._inputs_key(), "values": values}, sort_keys=True),
            encoding="utf8",
        )
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

    def macros(self) -> dict[str, str]:
        out = {}
        for name, value in self.values().items():
            if isinstance(value, bool):
                if value:
                    out[name] = "1"
            else:
                out[name] = str(value)
        return out


def board_has_psram(env: Any) -> bool:
    if "BOARD" not in env:
        return False
    flags = env.BoardConfig().get("build.extra_flags", "")
    text = " ".join(flags) if isinstance(flags, list) else str(flags)
    text += " " + " ".join(str(f) for f in env.get("BUILD_FLAGS", []))
    return "BOARD_HAS_PSRAM" in text


def for_env(env: Any, platform_dir: Path) -> KconfigSetup | None:
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
    )


def run_menuconfig(setup: KconfigSetup, python: str) -> int:
    """kconfiglib's menuconfig in this terminal over the same Kconfig, saved to sdkconfig.<env>."""
    import kconfiglib

    kconfig = _kconfig_module()
    wrapper = Path(
        kconfig.standalone_kconfig(
            setup.component_kconfig, setup.out_dir, spiram_default=setup.has_psram
        )
    )
    if not setup.sdkconfig.is_file():  # start from sdkconfig.defaults, as ESP-IDF does
        kconf = kconfiglib.Kconfig(str(wrapper), warn_to_stderr=False)
        kconf.warn_assign_undef = False
        for p in setup.config_files():
            kconf.load_config(str(p))
        for name, value in setup.overrides().items():
            kconf.syms[name].set_value("y" if value else "n")
        kconf.write_config(str(setup.sdkconfig), save_old=False)
    env = dict(os.environ)
    env["KCONFIG_CONFIG"] = str(setup.sdkconfig)
    env.setdefault("MENUCONFIG_STYLE", "aquatic")
    return subprocess.call([python, "-m", "menuconfig", str(wrapper)], env=env)


def add_menuconfig_target(env: Any, setup: KconfigSetup | None) -> None:
    from SCons.Script import AlwaysBuild  # type: ignore[import-not-found]

    def action(target: Any, source: Any, env: Any) -> int:
        if setup is None:
            sys.stderr.write("Error: espnn_component/Kconfig not found in the platform folder\n")
            return 1
        return run_menuconfig(setup, env.subst("$PYTHONEXE"))

    AlwaysBuild(env.Alias("menuconfig", None, env.VerboseAction(action, "Running menuconfig...")))


def apply(env: Any, setup: KconfigSetup | None) -> None:
    """Write espnn_sdkconfig.h for this env and put it on the include path."""
    if setup is None:
        return
    header = setup.write_header()
    env.Append(CPPPATH=[str(header.parent)])
