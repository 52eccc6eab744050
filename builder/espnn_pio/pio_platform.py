"""The executorch-espnn PlatformIO platform class (loaded by the top-level platform.py): espressif32, plus the host board and the model step.

Real boards are the official espressif32 platform's business (toolchains, ESP-IDF, Arduino,
upload, menuconfig); this class extends the installed, pinned espressif32 class so that all of
that keeps working, and adds:
  * the `host` board (boards/host.json): the system compiler, no packages, not "embedded", so
    `pio run -t exec` and `pio test` run the program on this computer;
  * builder/main.py's model step before handing ESP boards to espressif32's builder.

Without espressif32 installed the class falls back to PlatformBase: the host board still works,
and asking for an ESP board raises one error that says how to install the base.

PlatformIO loads this file several times per run, so importing it must stay cheap.
"""

from __future__ import annotations

import json
import os
from typing import Any

from platformio.exception import UserSideException
from platformio.package.manager.platform import PlatformPackageManager
from platformio.package.meta import PackageSpec
from platformio.platform.base import PlatformBase
from platformio.platform.factory import PlatformFactory

HERE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOST_BOARD = "host"
# Chips ESP-NN serves that the pinned espressif32's builder cannot build for: 6.13 compiles
# RISC-V only for esp32c3/esp32c6 (its builder/main.py and espidf.py pick the toolchain that
# way) and has no ESP32-P4 board, although its ESP-IDF 5.5 supports the chip.
BASE_CANNOT_BUILD = {"esp32p4": "ESP32-P4"}


def _load_manifest() -> dict[str, Any]:
    with open(os.path.join(HERE, "platform.json"), encoding="utf8") as fp:
        data: dict[str, Any] = json.load(fp)
    return data


def _base_spec(manifest: dict[str, Any]) -> tuple[str, str, str]:
    base = manifest["base_platform"]
    return base["owner"], base["name"], base["version"]


def _install_command(manifest: dict[str, Any]) -> str:
    owner, name, version = _base_spec(manifest)
    return f"pio pkg install -g -p {owner}/{name}@{version}"


def _find_base_dir(manifest: dict[str, Any]) -> str | None:
    """The installed espressif32 folder matching our pin, from PlatformIO's package manager.

    Local lookup only: nothing here touches the network.  The owner is left out of the spec so
    that a platform installed from a folder or a git URL (no registry owner recorded) is found.
    """
    _, name, version = _base_spec(manifest)
    pkg = PlatformPackageManager().get_package(PackageSpec(name=name, requirements=version))
    if pkg is None or not os.path.isfile(os.path.join(pkg.path, "platform.json")):
        return None
    return str(pkg.path)


def _load_base_class(base_dir: str | None) -> type[PlatformBase]:
    if base_dir is None or not os.path.isfile(os.path.join(base_dir, "platform.py")):
        base: type[PlatformBase] = PlatformBase
        return base
    module = PlatformFactory.load_platform_module(
        "espressif32", os.path.join(base_dir, "platform.py")
    )
    cls: type[PlatformBase] = getattr(module, PlatformFactory.get_clsname("espressif32"))
    return cls


_MANIFEST = _load_manifest()
_BASE_DIR = _find_base_dir(_MANIFEST)
_Base = _load_base_class(_BASE_DIR)


class ExecutorchespnnPlatform(_Base):  # type: ignore[misc,valid-type]
    """espressif32 (when installed) + the host board + the model step."""

    BASE_DIR = _BASE_DIR

    def __init__(self, manifest_path: str) -> None:
        super().__init__(manifest_path)
        self._merge_base_manifest()

    # -- manifest -------------------------------------------------------------------------

    def _merge_base_manifest(self) -> None:
        """Take the base's packages and frameworks so its own code finds what it expects.

        Our `frameworks` entries keep our scripts (they add the component, then run the
        base's script, recorded as `base_script`) and take the base's framework package.
        """
        if self.BASE_DIR is None:
            return
        with open(os.path.join(self.BASE_DIR, "platform.json"), encoding="utf8") as fp:
            base = json.load(fp)
        packages = dict(base.get("packages", {}))
        packages.update(self._manifest.get("packages", {}))
        self._manifest["packages"] = packages
        frameworks = self._manifest.setdefault("frameworks", {})
        for name, opts in base.get("frameworks", {}).items():
            ours = frameworks.setdefault(name, {"script": opts["script"]})
            if "package" in opts:
                ours["package"] = opts["package"]
            ours["base_script"] = os.path.join(self.BASE_DIR, opts["script"])
        self._manifest["base_version"] = base.get("version")

    @property
    def base_dir(self) -> str | None:
        return self.BASE_DIR

    def base_install_command(self) -> str:
        return _install_command(self._manifest)

    def base_requirement(self) -> str:
        owner, name, version = _base_spec(self._manifest)
        return f"{owner}/{name}@{version}"

    # -- boards ---------------------------------------------------------------------------

    def get_boards(self, id_: str | None = None) -> Any:
        if id_ is None:
            boards = super().get_boards()
            if self.BASE_DIR is not None:
                self._preload_base_boards(boards)
            return boards
        if id_ in self._BOARDS_CACHE:
            return self._BOARDS_CACHE[id_]
        if id_ != HOST_BOARD and self.BASE_DIR is None:
            # Project-level or core-level board files may still define it; only the lookup
            # of a board that nobody provides turns into the install hint.
            try:
                return super().get_boards(id_)
            except Exception as exc:  # UnknownBoard, raised by PlatformBase
                raise UserSideException(
                    f"Board '{id_}' comes from the espressif32 platform, which is not installed. "
                    f"Install it once with: {self.base_install_command()}"
                ) from exc
        try:
            return super().get_boards(id_)
        except Exception:
            if self.BASE_DIR is None:
                raise
            self._preload_base_boards(self._BOARDS_CACHE, only=id_)
            if id_ not in self._BOARDS_CACHE:
                raise
            return self._BOARDS_CACHE[id_]

    def _preload_base_boards(self, boards: dict[str, Any], only: str | None = None) -> None:
        from platformio.platform.board import PlatformBoardConfig

        assert self.BASE_DIR is not None
        bdir = os.path.join(self.BASE_DIR, "boards")
        if not os.path.isdir(bdir):
            return
        names = [f"{only}.json"] if only else sorted(os.listdir(bdir))
        for item in names:
            path = os.path.join(bdir, item)
            board_id = item[:-5]
            if not item.endswith(".json") or board_id in boards or not os.path.isfile(path):
                continue
            config = PlatformBoardConfig(path)
            config.manifest["platform"] = self.name
            if hasattr(self, "_add_dynamic_options"):  # espressif32's upload/debug defaults
                config = self._add_dynamic_options(config)
            boards[board_id] = config
            self._BOARDS_CACHE[board_id] = config

    def is_host_env(self) -> bool:
        if not self.project_env:
            return False
        board = self.config.get(f"env:{self.project_env}", "board", None)
        return bool(board == HOST_BOARD)

    # -- packages -------------------------------------------------------------------------

    def configure_default_packages(self, options: dict[str, Any], targets: list[str]) -> Any:
        board = options.get("board")
        if board == HOST_BOARD or not board:
            # The host board builds with the system compiler: nothing to install.
            for opts in self.packages.values():
                opts["optional"] = True
            return None
        if self.BASE_DIR is None:
            raise UserSideException(
                f"Board '{board}' needs the espressif32 platform "
                f"({self.base_requirement()}), which is not installed. "
                f"Install it once with: {self.base_install_command()}"
            )
        mcu = str(options.get("board_build.mcu")
                  or self.board_config(board).get("build.mcu", "")).lower()
        if mcu in BASE_CANNOT_BUILD:
            raise UserSideException(
                f"Board '{board}' is an {BASE_CANNOT_BUILD[mcu]}, which {self.base_requirement()}"
                "'s builder cannot build (it compiles RISC-V only for esp32c3 and esp32c6); build "
                f"{mcu} firmware with ESP-IDF's idf.py and the executorch_espnn component "
                f"(docs/component.md), lowering with `executorch-espnn build MODEL --target {mcu}`"
            )
        return super().configure_default_packages(options, targets)

    def is_embedded(self) -> bool:
        if self.is_host_env():
            return False
        return bool(super().is_embedded())

    def get_lib_storages(self) -> Any:
        if self.is_host_env():
            return []
        return super().get_lib_storages()
