"""The pinned source trees of an ESP build (executorch_espnn/firmware/sources.py), offline: archives of
tiny git repositories served as file:// or from a loopback HTTP server, and local trees.

Checked: download + commit check + unpack, the cache hit (the served archive gone, nothing
fetched), a corrupt archive, a wrong commit, an archive without commit id, no network, a
missing archive, and the local-tree overrides with their version checks; each failure is one
line naming the problem and the fix.
"""

from __future__ import annotations

import functools
import http.server
import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from builder.espnn_pio import source_step
from devkit import source_helpers as sh
from executorch_espnn.firmware import sources

FILES = {"include/widget.h": "#define WIDGET 1\n", "src/widget.c": "int widget;\n",
         "README": "a test tree\n"}


@pytest.fixture(autouse=True)
def _quiet_platformio(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # PlatformIO's downloader reads its settings from a core folder: a fresh one, no telemetry
    monkeypatch.setenv("PLATFORMIO_CORE_DIR", str(tmp_path / "pio-core"))
    monkeypatch.setenv("PLATFORMIO_DISABLE_PROGRESSBAR", "true")
    monkeypatch.setenv("PLATFORMIO_SETTING_ENABLE_TELEMETRY", "No")


def _pin(commit: str, required: tuple[str, ...] = ("include/widget.h",)) -> Any:
    return sources.SourcePin("widget", "widget 1.0 sources", "acme", "widget", commit, "1.0",
                             "custom_executorch_widget_dir", "WIDGET_SOURCE_DIR", required)


@pytest.fixture()
def served(tmp_path: Path) -> tuple[str, Path, Path]:
    """(commit, the repository, the archive base folder) of a test repository."""
    repo = tmp_path / "repo"
    commit = sh.make_repo(repo, FILES)
    base = tmp_path / "mirror"
    sh.archive_as_github(repo, base, "acme", "widget", commit)
    return commit, repo, base


def _one_line(exc: pytest.ExceptionInfo[Any]) -> str:
    text = str(exc.value)
    assert "\n" not in text and text, repr(text)
    return text


# --- download, check, unpack, cache ----------------------------------------------------------

def test_file_archive_is_verified_unpacked_and_cached(served: tuple[str, Path, Path],
                                                       tmp_path: Path) -> None:
    commit, _, base = served
    archive = base / "acme" / "widget" / "archive" / f"{commit}.tar.gz"
    assert sh.tar_commit_id(archive) == commit  # what GitHub's archives carry, read by git
    assert sources.archive_commit(archive) == commit
    log: list[str] = []
    tree = sources.acquire(_pin(commit), tmp_path / "cache", f"file://{base}", log.append)
    assert tree.origin == "download"
    assert tree.root == tmp_path / "cache" / "executorch-espnn" / "sources" / f"widget-{commit}" / "widget"
    for rel, text in FILES.items():
        assert (tree.root / rel).read_text() == text
    assert any("verified (commit " + commit[:7] in line for line in log), log

    archive.unlink()  # the second build must not need it
    log.clear()
    again = sources.acquire(_pin(commit), tmp_path / "cache", f"file://{base}", log.append)
    assert again.origin == "cache" and again.root == tree.root and log == []


class _CountingHandler(http.server.SimpleHTTPRequestHandler):
    requests: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        type(self).requests.append(self.path)
        super().do_GET()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture()
def http_base(served: tuple[str, Path, Path]) -> Iterator[tuple[str, list[str]]]:
    _, _, base = served
    handler = type("Handler", (_CountingHandler,), {"requests": []})
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(handler, directory=str(base)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler.requests
    finally:
        server.shutdown()
        server.server_close()


def test_http_download_goes_through_platformio_once(served: tuple[str, Path, Path],
                                                     http_base: tuple[str, list[str]],
                                                     tmp_path: Path) -> None:
    commit, _, _ = served
    url, requests = http_base
    log: list[str] = []
    tree = sources.acquire(_pin(commit), tmp_path / "cache", url, log.append)
    assert tree.origin == "download" and (tree.root / "src" / "widget.c").is_file()
    assert requests == [f"/acme/widget/archive/{commit}.tar.gz"]
    assert any(line.startswith("executorch-espnn: downloading widget 1.0 sources") for line in log)
    # the downloaded archive was only the transport: the unpacked tree is what is kept
    assert not list((tmp_path / "cache" / "executorch-espnn" / "sources").glob("*.tar.gz*"))
    again = sources.acquire(_pin(commit), tmp_path / "cache", url)
    assert again.origin == "cache" and requests == [f"/acme/widget/archive/{commit}.tar.gz"]


# --- what goes wrong, one line each ------------------------------------------------------------

def test_corrupt_archive(served: tuple[str, Path, Path], tmp_path: Path) -> None:
    commit, _, base = served
    archive = base / "acme" / "widget" / "archive" / f"{commit}.tar.gz"
    good = archive.read_bytes()
    archive.write_bytes(good[: len(good) // 2])  # a download cut short
    with pytest.raises(sources.SourceError) as exc:
        sources.acquire(_pin(commit), tmp_path / "cache", f"file://{base}")
    line = _one_line(exc)
    assert f"the archive file://{base}" in line and "is corrupt or not a tar.gz" in line
    assert f"https://github.com/acme/widget/archive/{commit}.tar.gz" in line
    assert "set custom_executorch_widget_dir = " in line and "WIDGET_SOURCE_DIR" in line
    archive.write_bytes(b"<html>not found</html>")  # what a wrong mirror serves
    with pytest.raises(sources.SourceError) as exc:
        sources.acquire(_pin(commit), tmp_path / "cache", f"file://{base}")
    assert "is corrupt or not a tar.gz" in _one_line(exc)
    archive.write_bytes(good)  # nothing half-unpacked was kept as a finished tree
    tree = sources.acquire(_pin(commit), tmp_path / "cache", f"file://{base}")
    assert tree.origin == "download" and (tree.root / "README").read_text() == FILES["README"]


def test_wrong_commit(served: tuple[str, Path, Path], tmp_path: Path) -> None:
    commit, repo, base = served
    (repo / "README").write_text("changed\n")
    sh._git(repo, "commit", "-qam", "another")
    other = sh._git(repo, "rev-parse", "HEAD")
    archive = base / "acme" / "widget" / "archive" / f"{commit}.tar.gz"
    sh.archive_as_github(repo, tmp_path / "other", "acme", "widget", other).replace(archive)
    with pytest.raises(sources.SourceError) as exc:
        sources.acquire(_pin(commit), tmp_path / "cache", f"file://{base}")
    line = _one_line(exc)
    assert f"is commit {other[:7]}, not the pinned {commit[:7]}" in line
    assert "ESPNN_SOURCES_URL_BASE" in line and "custom_executorch_widget_dir" in line
    assert not (tmp_path / "cache" / "executorch-espnn" / "sources" / f"widget-{commit}" / "widget").exists()


def test_archive_without_commit_id(tmp_path: Path) -> None:
    import tarfile

    commit = "1" * 40
    archive = tmp_path / "mirror" / "acme" / "widget" / "archive" / f"{commit}.tar.gz"
    archive.parent.mkdir(parents=True)
    (tmp_path / "widget-x" / "include").mkdir(parents=True)
    (tmp_path / "widget-x" / "include" / "widget.h").write_text("")
    with tarfile.open(archive, "w:gz") as tf:  # a plain tar, as a hand-made mirror might be
        tf.add(tmp_path / "widget-x", arcname="widget-x")
    with pytest.raises(sources.SourceError) as exc:
        sources.acquire(_pin(commit), tmp_path / "cache", f"file://{tmp_path / 'mirror'}")
    assert "carries no commit id" in _one_line(exc)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_no_network(tmp_path: Path) -> None:
    commit = "2" * 40
    url = f"http://127.0.0.1:{_closed_port()}"
    with pytest.raises(sources.SourceError) as exc:
        sources.acquire(_pin(commit), tmp_path / "cache", url, log=lambda _: None)
    line = _one_line(exc)
    assert line.startswith(f"could not download widget 1.0 sources from {url}/acme/widget/archive/")
    assert "Connection refused" in line and "check the network" in line
    assert f"fetch https://github.com/acme/widget/archive/{commit}.tar.gz by hand" in line
    assert "set custom_executorch_widget_dir = <a checkout of acme/widget at 2222222>" in line


def test_missing_file_archive(tmp_path: Path) -> None:
    with pytest.raises(sources.SourceError) as exc:
        sources.acquire(_pin("3" * 40), tmp_path / "cache", f"file://{tmp_path / 'nowhere'}")
    line = _one_line(exc)
    assert "no archive at file://" in line and "by hand" in line


# --- local trees ---------------------------------------------------------------------------------

def _resolve_one(pin: Any, option: str | None, environ: dict[str, str], tmp_path: Path) -> Any:
    return sources.resolve_one(pin, option, environ, tmp_path, tmp_path / "cache",
                               "file:///nonexistent-mirror", print)


def test_local_tree_option_wins_over_env(served: tuple[str, Path, Path], tmp_path: Path) -> None:
    commit, repo, _ = served
    other = tmp_path / "elsewhere"
    sh.make_repo(other, FILES)
    tree, _ = _resolve_one(_pin(commit), str(repo), {"WIDGET_SOURCE_DIR": str(other)}, tmp_path)
    assert tree.root == repo.resolve() and tree.origin == "option"
    tree, notes = _resolve_one(_pin(commit), None, {"WIDGET_SOURCE_DIR": "repo"}, tmp_path)
    assert tree.root == repo.resolve() and tree.origin == "env" and notes == []  # relative: project


def test_local_tree_problems(served: tuple[str, Path, Path], tmp_path: Path) -> None:
    commit, repo, _ = served
    with pytest.raises(sources.SourceError) as exc:
        _resolve_one(_pin(commit), "missing-dir", {}, tmp_path)
    line = _one_line(exc)
    assert line.startswith("custom_executorch_widget_dir = missing-dir: no such folder")
    assert f"https://github.com/acme/widget/archive/{commit}.tar.gz" in line
    with pytest.raises(sources.SourceError) as exc:
        _resolve_one(_pin(commit, ("include/gadget.h",)), None, {"WIDGET_SOURCE_DIR": str(repo)},
                     tmp_path)
    line = _one_line(exc)
    assert f"WIDGET_SOURCE_DIR = {repo}: {repo} is not a acme/widget tree (no include/gadget.h)" in line
    (repo / "README").write_text("moved on\n")
    sh._git(repo, "commit", "-qam", "newer")
    head = sh._git(repo, "rev-parse", "HEAD")
    with pytest.raises(sources.SourceError) as exc:
        _resolve_one(_pin(commit), str(repo), {}, tmp_path)
    line = _one_line(exc)
    assert f"is at commit {head[:7]}, not the pinned {commit[:7]}" in line
    assert f"git -C {repo} checkout {commit}" in line


def _real_pins() -> Any:
    return sources.pins("1.5.1", "3b60683923245cf472b7323426920e15623ba361")


def test_executorch_tree_version(tmp_path: Path) -> None:
    et, _, _ = _real_pins()
    tree, notes = _resolve_one(et, str(sh.executorch_tree(tmp_path / "et")), {}, tmp_path)
    assert tree.include_root is None  # not named executorch: the compile step makes an include root
    assert notes == [f"executorch: {tmp_path / 'et'} is not a git checkout, its commit is not checked"]
    named = sh.executorch_tree(tmp_path / "src" / "executorch")
    tree, _ = _resolve_one(et, str(named), {}, tmp_path)
    assert tree.include_root == (tmp_path / "src").resolve()
    old = sh.executorch_tree(tmp_path / "old", version="1.4.0")
    with pytest.raises(sources.SourceError) as exc:
        _resolve_one(et, None, {"EXECUTORCH_SOURCE_DIR": str(old)}, tmp_path)
    line = _one_line(exc)
    assert "is ExecuTorch 1.4.0 (version.txt), but the installed wheel is 1.5.1" in line
    assert "set custom_executorch_runtime_dir = <a checkout of pytorch/executorch at 3b60683>" in line


def test_flatbuffers_tree_version_and_include_dir(tmp_path: Path) -> None:
    _, fb, _ = _real_pins()
    checkout = sh.flatbuffers_tree(tmp_path / "fb")
    tree, _ = _resolve_one(fb, str(checkout), {}, tmp_path)
    assert tree.include_dir == checkout.resolve() / "include"
    tree, _ = _resolve_one(fb, None, {"FLATBUFFERS_SOURCE_DIR": str(checkout / "include")}, tmp_path)
    assert tree.include_dir == (checkout / "include").resolve()  # an include dir works too
    newer = sh.flatbuffers_tree(tmp_path / "fb25", version="25.2.10")
    with pytest.raises(sources.SourceError) as exc:
        _resolve_one(fb, str(newer), {}, tmp_path)
    line = _one_line(exc)
    assert ("has flatbuffers 25.2.10 (include/flatbuffers/base.h), not 24.3.25, ExecuTorch's pin "
            "and the wheel's flatc") in line
    assert "custom_executorch_flatbuffers_dir" in line and "FLATBUFFERS_SOURCE_DIR" in line


def test_esp_nn_tree_version(tmp_path: Path) -> None:
    _, _, nn = _real_pins()
    tree, _ = _resolve_one(nn, str(sh.esp_nn_tree(tmp_path / "nn")), {}, tmp_path)
    assert tree.origin == "option"
    old = sh.esp_nn_tree(tmp_path / "nn120", version="1.2.0")
    with pytest.raises(sources.SourceError) as exc:
        _resolve_one(nn, None, {"ESPNN_ESP_NN_DIR": str(old)}, tmp_path)
    line = _one_line(exc)
    from executorch_espnn.firmware import esp_nn_sources as table
    assert f"is ESP-NN 1.2.0, outside the range the engine is checked against ({table.declared_range()}" in line
    assert "set custom_executorch_espnn_dir = <a checkout of espressif/esp-nn at d45b843>" in line


def test_resolve_hands_over_three_trees(tmp_path: Path) -> None:
    environ = {"EXECUTORCH_SOURCE_DIR": str(sh.executorch_tree(tmp_path / "a" / "executorch")),
               "FLATBUFFERS_SOURCE_DIR": str(sh.flatbuffers_tree(tmp_path / "fb")),
               "ESPNN_ESP_NN_DIR": str(sh.esp_nn_tree(tmp_path / "nn"))}
    found = sources.resolve(lambda name: None, environ, tmp_path, tmp_path / "cache")
    entries = source_step.env_entries(found)
    assert entries == {
        "ESPNN_ET_SOURCE_DIR": str((tmp_path / "a" / "executorch").resolve()),
        "ESPNN_ET_INCLUDE_ROOT": str((tmp_path / "a").resolve()),
        "ESPNN_FLATBUFFERS_DIR": str((tmp_path / "fb").resolve()),
        "ESPNN_FLATBUFFERS_INCLUDE_DIR": str((tmp_path / "fb" / "include").resolve()),
        "ESPNN_ESPNN_DIR": str((tmp_path / "nn").resolve()),
    }
    assert set(entries) == set(source_step.ENV_KEYS)


def test_espidf_builds_download_no_esp_nn(tmp_path: Path) -> None:
    """An ESP-IDF build's ESP-NN comes from the component manager (espressif/esp-nn) unless a
    tree is named: nothing is downloaded for it (the download URL refuses every connection),
    and the builder hands over no ESP-NN folder; a named tree is still checked and handed over."""
    environ = {"EXECUTORCH_SOURCE_DIR": str(sh.executorch_tree(tmp_path / "a" / "executorch")),
               "FLATBUFFERS_SOURCE_DIR": str(sh.flatbuffers_tree(tmp_path / "fb")),
               sources.URL_BASE_ENV: f"http://127.0.0.1:{_closed_port()}"}
    lines: list[str] = []
    found = sources.resolve(lambda name: None, environ, tmp_path, tmp_path / "cache",
                            log=lines.append, esp_nn=False)
    assert found.esp_nn is None and lines == []
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").rglob("*esp-nn*"))
    assert "ESPNN_ESPNN_DIR" not in source_step.env_entries(found)
    # the same build with no esp_nn=False would have gone to the network for it
    with pytest.raises(sources.SourceError, match="could not download ESP-NN"):
        sources.resolve(lambda name: None, environ, tmp_path, tmp_path / "cache", log=lines.append)
    named = {**environ, "ESPNN_ESP_NN_DIR": str(sh.esp_nn_tree(tmp_path / "nn"))}
    found = sources.resolve(lambda name: None, named, tmp_path, tmp_path / "cache", esp_nn=False)
    assert found.esp_nn is not None and found.esp_nn.origin == "env"


def test_fetch_sources_prints_the_lines_the_workflow_reads(tmp_path: Path) -> None:
    """scripts/fetch_sources.py (idf.py users, .github/workflows/esp-idf.yml): one line per tree,
    `<owner>/<repo> <version> at <commit>: <folder> (<origin>)`; the workflow takes each folder
    from it with the same grep/sed, so that format is checked here with the local trees."""
    import re
    import subprocess
    import sys

    environ = {"EXECUTORCH_SOURCE_DIR": str(sh.executorch_tree(tmp_path / "a" / "executorch")),
               "FLATBUFFERS_SOURCE_DIR": str(sh.flatbuffers_tree(tmp_path / "fb")),
               "ESPNN_ESP_NN_DIR": str(sh.esp_nn_tree(tmp_path / "nn"))}
    script = Path(__file__).resolve().parents[1] / "scripts" / "fetch_sources.py"
    proc = subprocess.run([sys.executable, str(script), "--project-dir", str(tmp_path)],
                          capture_output=True, text=True, env={**os.environ, **environ},
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    folders = {}
    for line in proc.stdout.splitlines():
        m = re.fullmatch(r"(\S+/\S+) \S+ at [0-9a-f]{7,}: (.*) \((env)\)", line)
        if m:  # the workflow's `sed -e 's/^[^:]*: //' -e 's/ (.*)$//'`
            folders[m.group(1)] = m.group(2)
    assert folders == {"pytorch/executorch": str((tmp_path / "a" / "executorch").resolve()),
                       "google/flatbuffers": str((tmp_path / "fb").resolve()),
                       "espressif/esp-nn": str((tmp_path / "nn").resolve())}, proc.stdout


def test_pins_follow_the_installed_wheel() -> None:
    import executorch.version as ev  # the wheel itself, imported: what the builder reads as text

    version, commit = sources.wheel_executorch()
    assert (version, commit) == (ev.__version__.split("+")[0], ev.git_version)
    et, fb, nn = sources.pins(version, commit)
    assert et.archive_url() == f"https://github.com/pytorch/executorch/archive/{commit}.tar.gz"
    assert fb.archive_url().endswith("/google/flatbuffers/archive/"
                                     "595bf0007ab1929570c7671f091313c8fc20644e.tar.gz")
    assert nn.repo == "esp-nn" and nn.version == "1.2.3"
    with pytest.raises(sources.SourceError) as exc:
        sources.pins("1.6.0", commit)
    assert "no flatbuffers pin is recorded for ExecuTorch 1.6.0" in _one_line(exc)


@pytest.mark.skipif(not os.environ.get("ESPNN_ESP_NN_DIR"),
                    reason="set ESPNN_ESP_NN_DIR to an espressif/esp-nn checkout to check it as a tree")
def test_real_esp_nn_tree_is_accepted_or_refused_by_version(tmp_path: Path) -> None:
    _, _, nn = _real_pins()
    root = Path(os.environ["ESPNN_ESP_NN_DIR"])
    from executorch_espnn.firmware import esp_nn_sources as table
    version = table.tree_version(root)
    if table.in_range(version, table.declared_range()):
        tree, _ = _resolve_one(nn, str(root), {}, tmp_path)
        assert tree.root == root.resolve()
    else:
        with pytest.raises(sources.SourceError) as exc:
            _resolve_one(nn, str(root), {}, tmp_path)
        assert f"is ESP-NN {version}, outside the range" in _one_line(exc)


def test_http_corrupt_and_missing_archives(served: tuple[str, Path, Path],
                                           http_base: tuple[str, list[str]],
                                           tmp_path: Path) -> None:
    commit, _, base = served
    url, _ = http_base
    archive = base / "acme" / "widget" / "archive" / f"{commit}.tar.gz"
    archive.write_bytes(archive.read_bytes()[:200])  # the server has a broken copy
    with pytest.raises(sources.SourceError) as exc:
        sources.acquire(_pin(commit), tmp_path / "cache", url, log=lambda _: None)
    line = _one_line(exc)
    assert f"the archive downloaded from {url}/acme/widget/archive/{commit}.tar.gz is corrupt" in line
    assert "rebuild to download it again" in line
    assert not list((tmp_path / "cache").rglob("*.tar.gz*"))  # nothing broken is kept
    with pytest.raises(sources.SourceError) as exc:  # a commit the server does not have
        sources.acquire(_pin("4" * 40), tmp_path / "cache", url, log=lambda _: None)
    line = _one_line(exc)
    assert line.startswith(f"could not download widget 1.0 sources from {url}/acme/widget/archive/")
    assert "404" in line and "by hand" in line
