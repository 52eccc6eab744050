"""The component's Kconfig for builds that are not ESP-IDF (host, Arduino).

ESP-IDF resolves espnn_component/Kconfig itself (and shows it in its menuconfig).  Elsewhere
kconfiglib resolves the same file from the project's sdkconfig.<env> (written by
`pio run -t menuconfig`), else sdkconfig.defaults, else the Kconfig defaults, into the same
CONFIG_ESPNN_ET_* macros.  ESP-IDF's SPIRAM symbol, which our options depend on, is supplied
by a small wrapper (templates/Kconfig.standalone.j2) from the board's PSRAM flag.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PREFIX = "ESPNN_ET_"
WRAPPER_TEMPLATE = "Kconfig.standalone.j2"


@dataclass(frozen=True)
class KconfigSetup:
    component_kconfig: Path
    wrapper: Path  # rendered into $BUILD_DIR/executorch/Kconfig
    sdkconfig: Path  # project/sdkconfig.<env>
    defaults: Path  # project/sdkconfig.defaults
    has_psram: bool

    def config_file(self) -> Path | None:
        for p in (self.sdkconfig, self.defaults):
            if p.is_file():
                return p
        return None

    def load(self) -> Any:
        try:
            import kconfiglib
        except ImportError as exc:
            raise RuntimeError(
                f"PlatformIO's Python lacks kconfiglib; install with: "
                f'"{sys.executable}" -m pip install "kconfiglib>=14.1"'
            ) from exc
        self.render_wrapper()
        kconf = kconfiglib.Kconfig(str(self.wrapper), warn_to_stderr=False)
        cfg = self.config_file()
        if cfg is not None:
            kconf.load_config(str(cfg))
        return kconf

    def render_wrapper(self) -> None:
        import jinja2

        from .render import TEMPLATES

        text = (
            jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), keep_trailing_newline=True)
            .get_template(WRAPPER_TEMPLATE)
            .render(component_kconfig=str(self.component_kconfig).replace("\\", "/"),
                    has_psram=self.has_psram)
        )
        self.wrapper.parent.mkdir(parents=True, exist_ok=True)
        if not self.wrapper.is_file() or self.wrapper.read_text(encoding="utf8") != text:
            self.wrapper.write_text(text, encoding="utf8")

    def macros(self) -> dict[str, str]:
        """CONFIG_ESPNN_ET_* as sdkconfig.h would define them (bool n: absent)."""
        import kconfiglib

        kconf = self.load()
        out: dict[str, str] = {}
        for sym in kconf.unique_defined_syms:
            if not sym.name.startswith(PREFIX):
                continue
            value = sym.str_value
            if sym.type in (kconfiglib.BOOL, kconfiglib.TRISTATE):
                if value == "y":
                    out["CONFIG_" + sym.name] = "1"
            elif sym.type == kconfiglib.STRING:
                out["CONFIG_" + sym.name] = '"' + value.replace('"', '\\"') + '"'
            elif value:
                out["CONFIG_" + sym.name] = value
        return out

    def placement(self) -> str:
        m = self.macros()
        for name, policy in (("INTERNAL", "internal"), ("PSRAM", "psram"), ("AUTO", "auto")):
            if f"CONFIG_{PREFIX}PLACEMENT_{name}" in m:
                return policy
        return "auto"

    def internal_cap(self) -> int:
        m = self.macros()
        for key in ("INTERNAL_RAM_CAP", "INTERNAL_RAM_LIMIT", "MAX_INTERNAL_BYTES"):
            v = m.get(f"CONFIG_{PREFIX}{key}")
            if v:
                return int(v, 0)
        return 0


def board_has_psram(env: Any) -> bool:
    if "BOARD" not in env:
        return False
    board = env.BoardConfig()
    flags = board.get("build.extra_flags", "")
    text = " ".join(flags) if isinstance(flags, list) else str(flags)
    return "BOARD_HAS_PSRAM" in text or "BOARD_HAS_PSRAM" in " ".join(
        str(f) for f in env.get("BUILD_FLAGS", [])
    )


def for_env(env: Any, platform_dir: Path) -> KconfigSetup | None:
    kconfig = platform_dir / "espnn_component" / "Kconfig"
    if not kconfig.is_file():
        return None
    project = Path(env.subst("$PROJECT_DIR"))
    return KconfigSetup(
        component_kconfig=kconfig,
        wrapper=Path(env.subst("$BUILD_DIR")) / "executorch" / "Kconfig",
        sdkconfig=project / f"sdkconfig.{env['PIOENV']}",
        defaults=project / "sdkconfig.defaults",
        has_psram=board_has_psram(env),
    )


def run_menuconfig(setup: KconfigSetup, python: str) -> int:
    """kconfiglib's menuconfig in this terminal, saving to sdkconfig.<env>."""
    kconf = setup.load()
    if not setup.sdkconfig.is_file():  # start from sdkconfig.defaults, as ESP-IDF does
        kconf.write_config(str(setup.sdkconfig), save_old=False)
    env = dict(os.environ)
    env["KCONFIG_CONFIG"] = str(setup.sdkconfig)
    env.setdefault("MENUCONFIG_STYLE", "aquatic")
    return subprocess.call([python, "-m", "menuconfig", str(setup.wrapper)], env=env)


def add_menuconfig_target(env: Any, setup: KconfigSetup | None) -> None:
    from SCons.Script import AlwaysBuild  # type: ignore[import-not-found]

    def action(target: Any, source: Any, env: Any) -> int:
        if setup is None:
            sys.stderr.write("Error: espnn_component/Kconfig not found in the platform folder\n")
            return 1
        return run_menuconfig(setup, env.subst("$PYTHONEXE"))

    AlwaysBuild(env.Alias("menuconfig", None, env.VerboseAction(action, "Running menuconfig...")))


def add_macros(env: Any, setup: KconfigSetup | None) -> dict[str, str]:
    if setup is None:
        return {}
    macros = setup.macros()
    env.Append(CPPDEFINES=[(k, v) if v != "1" else k for k, v in sorted(macros.items())])
    return macros
