"""The pinned source trees an ESP build compiles: ExecuTorch's runtime, the flatbuffers headers
and ESP-NN, obtained the way a user's machine can.

Each tree is either a local folder the user names (an option in platformio.ini or an
environment variable: offline and pinned setups) or the GitHub source archive of the pinned
commit, downloaded once per machine with PlatformIO's own FileDownloader, verified, unpacked
with PlatformIO's FileUnpacker and kept in PlatformIO's cache folder:

    <platformio cache_dir>/executorch-espnn/sources/<repo>-<commit>/

`cache_dir` is `[platformio] cache_dir`, by default `$PLATFORMIO_CORE_DIR/.cache`: the folder
where PlatformIO itself keeps what it downloaded and can download again (`downloads/`, `tmp/`),
which `pio system prune` empties and whose user setting (a per-project cache, a shared one)
this follows.  Not `packages/`: that folder belongs to PlatformIO's package manager, which
lists, updates and prunes what it finds there as packages with manifests, and these trees are
none.  A tree is complete only once its marker file is written, so an interrupted unpack is
redone, never used.

The check that a download is the pinned commit: GitHub makes its archives with `git archive`,
which writes the commit id into the tar's pax global header (`git get-tar-commit-id` reads it
back); GitHub guarantees the content of a commit's archive, not its compressed bytes, so a
byte digest would break whenever GitHub recompresses.  A local tree is checked for the files a
build needs and, where it can tell, its version (version.txt, the flatbuffers version macros,
esp-nn's idf_component.yml) and its git HEAD.

Every failure is a `SourceError` whose text is the one line the build prints: the problem, then
the fix (the option or variable to set, or the URL to fetch by hand).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tarfile
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from . import esp_nn_sources
from .options import ESPNN_DIR, FLATBUFFERS_DIR, RUNTIME_DIR, SOURCES_URL_BASE

GITHUB = "https://github.com"
URL_BASE_ENV = "ESPNN_SOURCES_URL_BASE"  # e.g. a mirror, or file:///dir in tests
CACHE_SUBDIR = Path("executorch-espnn") / "sources"
MARKER = ".executorch-espnn-source.json"

# ExecuTorch's flatbuffers submodule (third-party/flatbuffers) per ExecuTorch release line; the
# wheel's flatc is the same version.  A new ExecuTorch release needs its pin looked up here.
FLATBUFFERS_FOR_EXECUTORCH = {"1.5": ("595bf0007ab1929570c7671f091313c8fc20644e", "24.3.25")}
# ESP-NN 1.2.3 (espressif/esp-nn master, "Bump version to 1.2.3" merged): the release the
# engine, executorch_espnn/scratch.py and esp_nn_sources.py are checked against.
ESPNN_COMMIT, ESPNN_VERSION = "d45b843ca5f873ca9d0706ab0e7f14eafd132e98", "1.2.3"

Log = Callable[[str], None]


class SourceError(Exception):
    """A source tree cannot be had; str() is the one line the build prints."""


@dataclass(frozen=True)
class SourcePin:
    """One pinned tree: where it comes from, how a user overrides it, what a good one has."""

    key: str  # "executorch", "flatbuffers", "esp-nn"
    title: str  # for messages: "ExecuTorch 1.5.1 sources"
    owner: str
    repo: str
    commit: str  # 40 hex digits
    version: str
    option: str  # platformio.ini option naming a local tree
    env_var: str  # environment variable naming a local tree
    required: tuple[str, ...]  # files (relative) a usable tree has

    @property
    def short(self) -> str:
        return self.commit[:7]

    def archive_url(self, base: str = GITHUB) -> str:
        return f"{base.rstrip('/')}/{self.owner}/{self.repo}/archive/{self.commit}.tar.gz"

    def override_hint(self) -> str:
        return (f"set {self.option} = <a checkout of {self.owner}/{self.repo} at {self.short}> "
                f"in platformio.ini (or the environment variable {self.env_var})")


@dataclass(frozen=True)
class SourceTree:
    pin: SourcePin
    root: Path  # the tree's top folder
    origin: str  # "download", "cache", "option" or "env"

    @property
    def include_root(self) -> Path | None:
        """ExecuTorch: the folder to put on the include path for <executorch/...>, when the
        tree is named `executorch` (a checkout, or the cache's layout); None otherwise."""
        return self.root.parent if self.root.name == self.pin.repo else None

    @property
    def include_dir(self) -> Path:
        """flatbuffers: the folder holding flatbuffers/*.h (a checkout's include/, or the
        include folder itself when that is what was given)."""
        return self.root / "include" if (self.root / "include" / "flatbuffers").is_dir() else self.root


@dataclass(frozen=True)
class SourceSet:
    executorch: SourceTree
    flatbuffers: SourceTree
    esp_nn: SourceTree | None  # None: an ESP-IDF build whose ESP-NN the component manager fetches
    notes: tuple[str, ...] = field(default=())

    def trees(self) -> tuple[SourceTree, ...]:
        return tuple(t for t in (self.executorch, self.flatbuffers, self.esp_nn) if t is not None)


# --- the pins ---------------------------------------------------------------------------------

_VERSION_RE = re.compile(r"""^__version__\s*=\s*['"]([^'"]+)['"]""", re.M)
_GIT_VERSION_RE = re.compile(r"""^git_version\b[^=]*=\s*['"]([0-9a-f]{40})['"]""", re.M)


def wheel_executorch() -> tuple[str, str]:
    """(version, commit) of the installed executorch wheel, read from executorch/version.py
    without importing the package."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("executorch")
    except (ImportError, ValueError):
        spec = None
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for loc in locations:
        vfile = Path(loc) / "version.py"
        if vfile.is_file():
            text = vfile.read_text(encoding="utf8", errors="replace")
            version, commit = _VERSION_RE.search(text), _GIT_VERSION_RE.search(text)
            if version and commit:
                return version.group(1).split("+")[0], commit.group(1)
    raise SourceError(
        "the executorch wheel (its executorch/version.py with git_version) is not installed in "
        "PlatformIO's Python; install the pinned one: pip install executorch==1.5.1"
    )


def pins(executorch_version: str, executorch_commit: str) -> tuple[SourcePin, SourcePin, SourcePin]:
    """The three pins for an ExecuTorch wheel of this version and commit."""
    line = ".".join(executorch_version.split(".")[:2])
    if line not in FLATBUFFERS_FOR_EXECUTORCH:
        raise SourceError(
            f"no flatbuffers pin is recorded for ExecuTorch {executorch_version} (known: "
            f"{', '.join(sorted(FLATBUFFERS_FOR_EXECUTORCH))}); install executorch==1.5.1, or add "
            "ExecuTorch's third-party/flatbuffers commit to FLATBUFFERS_FOR_EXECUTORCH in "
            "executorch_espnn/firmware/sources.py"
        )
    fb_commit, fb_version = FLATBUFFERS_FOR_EXECUTORCH[line]
    executorch = SourcePin(
        "executorch", f"ExecuTorch {executorch_version} sources", "pytorch", "executorch",
        executorch_commit, executorch_version, RUNTIME_DIR, "EXECUTORCH_SOURCE_DIR",
        ("runtime/executor/program.cpp", "runtime/executor/method.cpp",
         "runtime/core/portable_type/tensor_impl.cpp", "runtime/platform/platform.h",
         "schema/program.fbs", "schema/scalar_type.fbs"))
    flatbuffers = SourcePin(
        "flatbuffers", f"flatbuffers {fb_version} headers", "google", "flatbuffers", fb_commit,
        fb_version, FLATBUFFERS_DIR, "FLATBUFFERS_SOURCE_DIR",
        ("include/flatbuffers/flatbuffers.h", "include/flatbuffers/base.h"))
    esp_nn = SourcePin(
        "esp-nn", f"ESP-NN {ESPNN_VERSION} sources", "espressif", "esp-nn", ESPNN_COMMIT,
        ESPNN_VERSION, ESPNN_DIR, "ESPNN_ESP_NN_DIR",
        ("include/esp_nn.h", "include/esp_nn_defs.h", "src/common/common_functions.h",
         "CMakeLists.txt", "idf_component.yml"))
    return executorch, flatbuffers, esp_nn


# --- checking a tree --------------------------------------------------------------------------

def _git_head(root: Path) -> str | None:
    """The commit a git checkout has checked out, or None when `root` is not one (or git is
    not installed: then the commit cannot be told and is not checked)."""
    if not (root / ".git").exists() or shutil.which("git") is None:
        return None
    proc = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=False, timeout=30)
    head = proc.stdout.strip()
    return head if proc.returncode == 0 and re.fullmatch(r"[0-9a-f]{40}", head) else None


def _flatbuffers_version(include_dir: Path) -> str | None:
    base = include_dir / "flatbuffers" / "base.h"
    text = base.read_text(encoding="utf8", errors="replace") if base.is_file() else ""
    parts = [re.search(rf"#define FLATBUFFERS_VERSION_{k}\s+(\d+)", text)
             for k in ("MAJOR", "MINOR", "REVISION")]
    return ".".join(m.group(1) for m in parts if m) if all(parts) else None


def check_tree(pin: SourcePin, root: Path, named_by: str) -> list[str]:
    """Raise SourceError if `root` cannot serve as `pin`'s tree; returns notes (things that
    could not be checked).  `named_by` is how the user named it, for the message."""
    notes: list[str] = []
    if not root.is_dir():
        raise SourceError(f"{named_by}: no such folder ({root}); {pin.override_hint()}, "
                          f"or unset it to download {pin.archive_url()}")
    required = pin.required
    if pin.key == "flatbuffers" and (root / "flatbuffers" / "base.h").is_file():
        required = tuple(r.removeprefix("include/") for r in required)  # an include dir
    missing = [r for r in required if not (root / r).is_file()]
    if missing:
        raise SourceError(f"{named_by}: {root} is not a {pin.owner}/{pin.repo} tree (no "
                          f"{missing[0]}); {pin.override_hint()}")
    head = _git_head(root)
    if head is not None and head != pin.commit:
        raise SourceError(
            f"{named_by}: the checkout {root} is at commit {head[:7]}, not the pinned "
            f"{pin.short} ({pin.title}); run `git -C {root} checkout {pin.commit}`, or "
            f"{pin.override_hint()}")
    if head is None:
        notes.append(f"{pin.key}: {root} is not a git checkout, its commit is not checked")
    if pin.key == "executorch":
        vfile = root / "version.txt"
        if vfile.is_file():
            found = vfile.read_text(encoding="utf8", errors="replace").strip()
            if found.split(".")[:2] != pin.version.split(".")[:2]:
                raise SourceError(
                    f"{named_by}: {root} is ExecuTorch {found} (version.txt), but the installed "
                    f"wheel is {pin.version}; {pin.override_hint()}")
    elif pin.key == "flatbuffers":
        fb_version = _flatbuffers_version(SourceTree(pin, root, "").include_dir)
        if fb_version != pin.version:
            raise SourceError(
                f"{named_by}: {root} has flatbuffers {fb_version or 'of unknown version'} "
                f"(include/flatbuffers/base.h), not {pin.version}, ExecuTorch's pin and the "
                f"wheel's flatc; {pin.override_hint()}")
    elif pin.key == "esp-nn":
        problem = esp_nn_sources.version_problem(root)
        if problem is not None:
            raise SourceError(f"{named_by}: {problem}; {pin.override_hint()}")
    return notes


# --- downloading ------------------------------------------------------------------------------

def _short_reason(exc: BaseException) -> str:
    text = str(exc)
    m = re.search(r"\[Errno -?\d+\] ([^'\")\]]+)", text)
    if m:
        return m.group(1).strip()
    return text.splitlines()[0][:160] if text else type(exc).__name__


def _local_path(url: str) -> Path | None:
    if not url.startswith("file://"):
        return None
    from urllib.parse import unquote, urlparse

    return Path(unquote(urlparse(url).path))


def _download(pin: SourcePin, url: str, dest: Path, log: Log) -> Path:
    """The archive at `url` as a local file: file:// is used in place (as PlatformIO's package
    manager does), http(s) goes through PlatformIO's FileDownloader into `dest`."""
    local = _local_path(url)
    fetch_hint = (f"fetch {pin.archive_url()} by hand, unpack it and {pin.override_hint()}")
    if local is not None:
        if not local.is_file():
            raise SourceError(f"{pin.title}: no archive at {url}; check {URL_BASE_ENV} / "
                              f"{SOURCES_URL_BASE}, or {fetch_hint}")
        return local
    from platformio import app
    from platformio.package.download import FileDownloader

    log(f"executorch-espnn: downloading {pin.title} ({pin.owner}/{pin.repo} at {pin.short}, "
        f"once per machine) from {url}")
    part = dest.with_name(dest.name + ".part")
    try:
        fd = FileDownloader(url)
        fd.set_destination(str(part))
        fd.start(with_progress=not app.is_disabled_progressbar(), silent=False)
        fd.verify()  # the size the server announced
    except Exception as exc:  # requests' connection errors, PackageException (HTTP status)
        part.unlink(missing_ok=True)
        raise SourceError(f"could not download {pin.title} from {url} ({_short_reason(exc)}); "
                          f"check the network (and {URL_BASE_ENV} for a mirror), or "
                          f"{fetch_hint}") from exc
    part.replace(dest)
    return dest


def archive_commit(archive: Path) -> str | None:
    """The commit id `git archive` (and so GitHub) embeds in a tar's pax global header."""
    with tarfile.open(archive, "r:*") as tf:
        tf.next()  # reading the first member makes tarfile parse the global header
        comment = tf.pax_headers.get("comment")
    return comment if comment and re.fullmatch(r"[0-9a-f]{40}", comment) else None


_CORRUPT = (tarfile.TarError, EOFError, zlib.error, OSError)


def _unpack(pin: SourcePin, archive: Path, url: str, dest: Path) -> None:
    """Verify `archive` is `pin`'s commit, unpack it with PlatformIO's FileUnpacker and move
    its single top folder (GitHub: <repo>-<commit>) to `dest`."""
    from platformio.package.exception import PackageException
    from platformio.package.unpack import FileUnpacker

    local = _local_path(url) is not None
    where = url if local else f"downloaded from {url}"
    again = "replace it" if local else "rebuild to download it again"
    corrupt = (f"{pin.title}: the archive {where} is corrupt or not a tar.gz ({{}}); {again}, "
               f"or fetch {pin.archive_url()} by hand, unpack it and {pin.override_hint()}")
    try:
        commit = archive_commit(archive)
    except _CORRUPT as exc:
        raise SourceError(corrupt.format(_short_reason(exc))) from exc
    if commit is None:
        raise SourceError(
            f"{pin.title}: the archive {where} carries no commit id (not a `git archive` / "
            f"GitHub source archive); use {pin.archive_url()}, or {pin.override_hint()}")
    if commit != pin.commit:
        raise SourceError(
            f"{pin.title}: the archive {where} is commit {commit[:7]}, not the pinned "
            f"{pin.short}; check {URL_BASE_ENV} / {SOURCES_URL_BASE}, or {pin.override_hint()}")
    tmp = dest.with_name(dest.name + ".unpacking")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        with FileUnpacker(str(archive)) as fu:
            fu.unpack(str(tmp), with_progress=False, silent=True)
        tops = [p for p in tmp.iterdir()]
        if len(tops) != 1 or not tops[0].is_dir():
            raise SourceError(
                f"{pin.title}: the archive {where} does not hold one top folder (GitHub's "
                f"<repo>-<commit>/); use {pin.archive_url()}, or {pin.override_hint()}")
        shutil.rmtree(dest, ignore_errors=True)
        tops[0].replace(dest)
    except (PackageException, *_CORRUPT) as exc:
        raise SourceError(corrupt.format(_short_reason(exc))) from exc
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def acquire(pin: SourcePin, cache_dir: Path, url_base: str = GITHUB,
            log: Log = print) -> SourceTree:
    """The pinned tree from the cache, or downloaded, verified and unpacked into it."""
    from platformio.package.lockfile import LockFile

    root = cache_dir / CACHE_SUBDIR
    # <repo>-<commit>/<repo>/: the tree keeps its repository's name, so for ExecuTorch the
    # folder above it is an include root for <executorch/runtime/...> as in a checkout
    home = root / f"{pin.repo}-{pin.commit}"
    dest = home / pin.repo
    marker = home / MARKER
    if _marker_ok(marker, pin) and dest.is_dir():
        return SourceTree(pin, dest, "cache")
    root.mkdir(parents=True, exist_ok=True)
    url = pin.archive_url(url_base)
    with LockFile(str(home)):  # a second build waiting here finds the tree done
        if _marker_ok(marker, pin) and dest.is_dir():
            return SourceTree(pin, dest, "cache")
        home.mkdir(parents=True, exist_ok=True)
        archive = _download(pin, url, root / f"{pin.repo}-{pin.commit}.tar.gz", log)
        try:
            _unpack(pin, archive, url, dest)
        finally:
            if _local_path(url) is None:
                archive.unlink(missing_ok=True)  # the unpacked tree is what is kept
        missing = [r for r in pin.required if not (dest / r).is_file()]
        if missing:
            shutil.rmtree(home, ignore_errors=True)
            raise SourceError(f"{pin.title}: the archive from {url} has no {missing[0]}; "
                              f"{pin.override_hint()}")
        marker.write_text(json.dumps({"repo": f"{pin.owner}/{pin.repo}", "commit": pin.commit,
                                      "version": pin.version, "url": url}, indent=1),
                          encoding="utf8")
    log(f"executorch-espnn: {pin.title} verified (commit {pin.short}), kept in {dest}")
    return SourceTree(pin, dest, "download")


def _marker_ok(marker: Path, pin: SourcePin) -> bool:
    try:
        data = json.loads(marker.read_text(encoding="utf8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("commit") == pin.commit


# --- resolving a build's three trees ----------------------------------------------------------

def resolve_one(pin: SourcePin, option_value: str | None, environ: Mapping[str, str],
                project_dir: Path, cache_dir: Path, url_base: str, log: Log) -> tuple[SourceTree, list[str]]:
    """The option wins over the environment variable, which wins over the download."""
    for raw, named_by, origin in ((option_value, pin.option, "option"),
                                  (environ.get(pin.env_var), pin.env_var, "env")):
        value = (raw or "").strip()
        if value:
            path = Path(value).expanduser()
            if not path.is_absolute():
                path = project_dir / path
            notes = check_tree(pin, path, f"{named_by} = {value}")
            return SourceTree(pin, path.resolve(), origin), notes
    return acquire(pin, cache_dir, url_base, log), []


def resolve(get_option: Callable[[str], str | None], environ: Mapping[str, str],
            project_dir: Path, cache_dir: Path, log: Log = print,
            esp_nn: bool = True) -> SourceSet:
    """The three trees of an ESP build, from platformio.ini options (`get_option`), the
    environment, or the cache/download; raises SourceError with one line.  esp_nn=False (an
    ESP-IDF build, whose component manager fetches espressif/esp-nn): ESP-NN only when the user
    names a tree, never downloaded."""
    version, commit = wheel_executorch()
    url_base = ((get_option(SOURCES_URL_BASE) or "").strip()
                or environ.get(URL_BASE_ENV, "").strip() or GITHUB)
    notes: list[str] = []
    found: list[SourceTree | None] = []
    for pin in pins(version, commit):
        named = (get_option(pin.option) or "").strip() or environ.get(pin.env_var, "").strip()
        if pin.key == "esp-nn" and not esp_nn and not named:
            found.append(None)
            continue
        tree, tree_notes = resolve_one(pin, get_option(pin.option), environ, project_dir,
                                       cache_dir, url_base, log)
        found.append(tree)
        notes += tree_notes
    et, fb, nn = found
    assert et is not None and fb is not None
    return SourceSet(et, fb, nn, tuple(notes))

