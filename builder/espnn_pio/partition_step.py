"""custom_executorch_storage = partition: the partition table and the `uploadmodel` target.

The model step has written $BUILD_DIR/executorch/model.img and chosen the partition's size
(model_info.json "storage", ModelInfo.storage).  ESP boards: this extends the board's partition table
(board_build.partitions, or the framework's default, found where espressif32's framework
scripts look) with a data partition for the model after the last one, 64 KiB aligned (a flash
MMU page: EspnnModel maps it), writes the table to $BUILD_DIR/partitions_espnn.csv and hands it
to espressif32 as board_build.partitions; `uploadmodel` writes the image at that offset with
esptool and the board's serial settings, and nothing else.  The host board: `uploadmodel`
copies the image to the file the program maps (the header names it).

Partition tables are read as espressif32's builder reads them (name, type, subtype, offset,
size, flags; an empty offset follows the previous partition: 64 KiB aligned for app
partitions, 4 KiB for data).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from executorch_espnn.firmware.model_info import PartitionInfo

TABLE_NAME = "partitions_espnn.csv"
TABLE_OFFSET = 0x8000  # where ESP-IDF's bootloader reads the table (one sector)
FIRST_OFFSET = 0x9000
MMU_PAGE = 0x10000
SECTOR = 0x1000
UPLOAD_TARGET = "uploadmodel"
# The framework defaults, where espressif32's framework scripts take them from.
DEFAULT_TABLES = {
    "arduino": ("framework-arduinoespressif32", ("tools", "partitions"), "default.csv"),
    "espidf": ("framework-espidf", ("components", "partition_table"), "partitions_singleapp.csv"),
}


class PartitionError(Exception):
    """One line for the build to print."""


@dataclass(frozen=True)
class Partition:
    name: str
    type: str
    subtype: str
    offset: int
    size: int


def parse_size(text: str, what: str) -> int:
    t = text.strip()
    try:
        if t.lower().startswith("0x"):
            return int(t, 16)
        if t[-1:].upper() in ("K", "M"):
            return int(t[:-1]) * (1024 if t[-1].upper() == "K" else 1024 * 1024)
        return int(t)
    except ValueError:
        raise PartitionError(f"{what}: '{text}' is not a size") from None


def read_table(csv: Path) -> list[Partition]:
    parts: list[Partition] = []
    next_offset = FIRST_OFFSET
    for n, raw in enumerate(csv.read_text(encoding="utf8").splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        tokens = [t.strip() for t in line.split(",")]
        if len(tokens) < 5:
            raise PartitionError(f"{csv}:{n}: expected name, type, subtype, offset, size")
        align = MMU_PAGE if tokens[1] in ("0", "app") else SECTOR
        offset = (parse_size(tokens[3], f"{csv}:{n} offset") if tokens[3]
                  else (next_offset + align - 1) // align * align)
        size = parse_size(tokens[4], f"{csv}:{n} size")
        parts.append(Partition(tokens[0], tokens[1], tokens[2], offset, size))
        next_offset = offset + size
    return parts


def find_base_table(env: Any) -> Path:
    """The table the board would use: board_build.partitions (a project file, or one of the
    framework's tables) or the framework's default."""
    board = env.BoardConfig()
    frameworks = [f.strip().lower() for f in env.get("PIOFRAMEWORK", []) or []]
    # "arduino, espidf" builds through espressif32's espidf.py, which owns the table then
    kind = "espidf" if "espidf" in frameworks else "arduino"
    package, subdir, default = DEFAULT_TABLES[kind]
    name = str(board.get("build.partitions", "") or "") or default
    if Path(name).is_absolute():
        candidates = [Path(name)]
    else:  # the framework's folder first, then the project folder, as they look
        candidates = [Path(env.subst("$PROJECT_DIR")) / name]
        pkg_dir = env.PioPlatform().get_package_dir(package)
        if pkg_dir:
            candidates.insert(0, Path(pkg_dir).joinpath(*subdir, name))
    for c in candidates:
        if c.is_file():
            return c
    raise PartitionError(
        f"custom_executorch_storage = partition: cannot find the partition table '{name}' to extend "
        f"(looked in {', '.join(str(c.parent) for c in candidates)}); set board_build.partitions "
        "to a CSV file of the project"
    )


def board_flash_size(env: Any) -> int:
    return parse_size(str(env.BoardConfig().get("upload.flash_size", "4MB")).replace("B", ""),
                      "board upload.flash_size")


def extend_table(base: Path, storage: PartitionInfo, flash_size: int) -> tuple[str, int]:
    """The table text with the model partition appended, and the partition's offset."""
    parts = read_table(base)
    label = storage.label
    if any(p.name == label for p in parts):
        raise PartitionError(f"the partition table {base} already has a partition named '{label}'; "
                             "remove it (the build adds the model partition itself)")
    end = max((p.offset + p.size for p in parts), default=FIRST_OFFSET)
    offset = (end + MMU_PAGE - 1) // MMU_PAGE * MMU_PAGE
    size = storage.size
    if offset + size > flash_size:
        raise PartitionError(
            f"custom_executorch_storage = partition: the model partition ({size // 1024} KiB at "
            f"0x{offset:x}) does not fit the board's {flash_size // (1024 * 1024)} MB flash after the "
            f"partition table {base.name} (which ends at 0x{end:x}); choose a table with room "
            "(board_build.partitions), a smaller custom_executorch_partition_size or a smaller model"
        )
    text = base.read_text(encoding="utf8").rstrip("\n")
    text += (f"\n# added by executorch-espnn (custom_executorch_storage = partition): the model image\n"
             f"{label}, data, 0x{storage.subtype:x}, 0x{offset:x}, 0x{size:x},\n")
    return text, offset


def setup_esp(env: Any, storage: PartitionInfo, image: Path) -> None:
    """Write the table, hand it to espressif32, define `uploadmodel`."""
    base = find_base_table(env)
    text, offset = extend_table(base, storage, board_flash_size(env))
    build = Path(env.subst("$BUILD_DIR"))
    build.mkdir(parents=True, exist_ok=True)
    table = build / TABLE_NAME
    if not table.is_file() or table.read_text(encoding="utf8") != text:
        table.write_text(text, encoding="utf8")
    env.BoardConfig().update("build.partitions", str(table))
    env["ESPNN_MODEL_PARTITION"] = {"table": str(table), "offset": offset, "size": storage.size,
                                    "label": storage.label, "image": str(image)}
    from SCons.Script import AlwaysBuild

    actions = []
    if hasattr(env, "AutodetectUploadPort"):
        actions.append(env.VerboseAction(env.AutodetectUploadPort, "Looking for upload port..."))
    actions.append(env.VerboseAction(" ".join(esptool_command(env, offset, image)),
                                     f"Uploading the model image to partition '{storage.label}' "
                                     f"at 0x{offset:x}"))
    AlwaysBuild(env.Alias(UPLOAD_TARGET, [str(image)], actions))


def esptool_command(env: Any, offset: int, image: Path) -> list[str]:
    """The board's upload settings (espressif32's esptool upload: same uploader, chip, port,
    speed, reset modes), writing only the model image.  SCons variables stay unexpanded, so a
    `--upload-port` given on the command line applies."""
    board = env.BoardConfig()
    uploader = env.get("UPLOADER") or str(Path(env.PioPlatform().get_package_dir("tool-esptoolpy") or "")
                                          / "esptool.py")
    return [
        '"$PYTHONEXE"', f'"{uploader}"',
        "--chip", str(board.get("build.mcu", "esp32")),
        "--port", '"$UPLOAD_PORT"',
        "--baud", "$UPLOAD_SPEED",
        "--before", str(board.get("upload.before_reset", "default_reset")),
        "--after", str(board.get("upload.after_reset", "hard_reset")),
        "write_flash", "-z", f"0x{offset:x}", f'"{image}"',
    ]


def setup_host(env: Any, storage: PartitionInfo, image: Path) -> None:
    """The host board: `uploadmodel` copies the image to the file the program maps."""
    from SCons.Script import AlwaysBuild

    dest = Path(storage.host_image_path)

    def upload(target: Any, source: Any, env: Any) -> int:  # SCons passes these by name
        tmp = dest.with_suffix(".tmp")
        shutil.copyfile(image, tmp)
        tmp.replace(dest)  # a running program keeps its mapping of the old file
        print(f"Wrote the model image ({image.stat().st_size} bytes) to {dest}")
        return 0

    AlwaysBuild(env.Alias(UPLOAD_TARGET, [str(image)], env.VerboseAction(
        upload, f"Uploading the model image to partition '{storage.label}' ({dest})")))
