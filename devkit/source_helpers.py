"""Source trees and archives for the acquisition tests, made offline: tiny git repositories in a
temporary folder, archived with `git archive` (so the tar carries the commit id as GitHub's do)
and laid out as GitHub serves them (<base>/<owner>/<repo>/archive/<commit>.tar.gz); and stand-in
trees with the files a build checks for, for the ESP builds that must not download anything."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _git(repo: Path, *args: str) -> str:
    proc = subprocess.run(["git", "-C", str(repo), "-c", "user.name=test", "-c",
                           "user.email=test@example.invalid", *args],
                          capture_output=True, text=True, check=True)
    return proc.stdout.strip()


def make_repo(path: Path, files: dict[str, str]) -> str:
    """A git repository at `path` with `files` committed; returns the commit id."""
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    for rel, text in files.items():
        f = path / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text, encoding="utf8")
    _git(path, "add", "-A")
    _git(path, "commit", "-q", "-m", "test tree")
    return _git(path, "rev-parse", "HEAD")


def archive_as_github(repo: Path, base: Path, owner: str, name: str, commit: str) -> Path:
    """`git archive` of `commit` at <base>/<owner>/<name>/archive/<commit>.tar.gz, with GitHub's
    top folder <name>-<commit>/."""
    out = base / owner / name / "archive" / f"{commit}.tar.gz"
    out.parent.mkdir(parents=True, exist_ok=True)
    _git(repo, "archive", "--format=tar.gz", f"--prefix={name}-{commit}/", "-o", str(out), commit)
    return out


def tar_commit_id(archive: Path) -> str:
    """What `git get-tar-commit-id` says of a .tar.gz (independent of the code under test)."""
    import gzip

    proc = subprocess.run(["git", "get-tar-commit-id"], input=gzip.decompress(archive.read_bytes()),
                          capture_output=True, check=True)
    return proc.stdout.decode().strip()


# --- stand-in trees for the real pins (nothing to compile: only what the checks look at) ---------

def executorch_tree(path: Path, version: str = "1.5.1") -> Path:
    """The files the acquisition checks, every file of the runtime source list and the kernel
    source of every operator the wheel's kernel schemas name (empty: nothing compiles them); the
    kernel registry says it reads MAX_KERNEL_NUM, as ExecuTorch's does."""
    from executorch_espnn import runtime_sources as rs
    from executorch_espnn import selective
    from executorch_espnn.errors import RuntimeSourcesError
    from executorch_espnn.firmware import sources

    lists = rs.load()
    kernel_files = set()
    wheel = selective.KernelSources.from_wheel()
    for yaml_file in (wheel.portable_yaml, wheel.quantized_yaml):
        for entry in selective._load_yaml_list(yaml_file):
            try:
                kernel_files.add(lists.kernel_source(selective._canonical(entry)))
            except RuntimeSourcesError:
                pass  # a namespace with no kernel folder: no firmware compiles it
    for rel in {*sources.pins("1.5.1", "0" * 40)[0].required, *lists.runtime_srcs,
                *lists.header_only, *lists.schema_srcs, *lists.kernel_support_srcs,
                *kernel_files}:
        _touch(path / rel)
    for rel in lists.schema_srcs:  # flatc generates the schema headers from them (non-empty)
        (path / rel).write_text(f"// stand-in\ntable {Path(rel).stem.title().replace('_', '')} {{}}\n")
    (path / "runtime" / "kernel" / "operator_registry.cpp").write_text(
        "// stand-in: the kernel table of MAX_KERNEL_NUM slots\n")
    (path / "version.txt").write_text(version + "\n")
    return path


def flatbuffers_tree(path: Path, version: str = "24.3.25") -> Path:
    major, minor, rev = version.split(".")
    _touch(path / "include" / "flatbuffers" / "flatbuffers.h")
    (path / "include" / "flatbuffers" / "base.h").write_text(
        f"#define FLATBUFFERS_VERSION_MAJOR {major}\n#define FLATBUFFERS_VERSION_MINOR {minor}\n"
        f"#define FLATBUFFERS_VERSION_REVISION {rev}\n")
    return path


def esp_nn_tree(path: Path, version: str = "1.2.3") -> Path:
    """An ESP-NN tree with the files the builder's table names (empty: the stand-in compiles
    nothing), ESP-NN's public headers' names and its manifest."""
    from executorch_espnn.firmware import esp_nn_sources as table

    for rel in ("include/esp_nn.h", "include/esp_nn_defs.h", "src/common/common_functions.h",
                "CMakeLists.txt", *table.COMMON_SRCS,
                *(s for srcs in table.CHIP_SRCS.values() for s in srcs)):
        _touch(path / rel)
    (path / "idf_component.yml").write_text(f'version: "{version}"\n')
    return path


def _touch(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("")


# --- ESP-NN's own build, read independently of the builder's table ------------------------------

def esp_nn_cmake_selection(esp_nn: Path) -> dict[str, list[str]]:
    """The source lists of ESP-NN's CMakeLists.txt: {"c_srcs": [...], "s3_srcs": [...], ...}."""
    text = (esp_nn / "CMakeLists.txt").read_text()
    lists: dict[str, list[str]] = {}
    for m in re.finditer(r"set\((\w+_srcs)\s+(.*?)\)", text, re.S):
        lists[m.group(1)] = re.findall(r'"([^"]+)"', m.group(2))
    return lists


def esp_nn_cmake_options(esp_nn: Path) -> dict[str, list[str]]:
    """ESP-NN's target_compile_options: {"esp32s3": [...], "other": [...]}."""
    text = (esp_nn / "CMakeLists.txt").read_text()
    found = re.findall(r"target_compile_options\(\$\{COMPONENT_LIB\}\s+PRIVATE\s+([^)]*)\)", text)
    return {"esp32s3": found[0].split(), "other": found[1].split()} if len(found) == 2 else {}
