"""Build and drive the C engine's ``espnn_run`` tool from tests.

Each build variant (plain 64-bit, ``-m32``, ASan+UBSan, against a real ESP-NN tree) is
compiled straight with the system compiler and cached by a hash of every source file and
flag, in a cache directory outside the repository (``$ESPNN_ENGINE_CACHE`` or
``<tmp>/executorch_espnn_engine``), so a test session compiles each variant once and later
sessions not at all until a source changes.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

from executorch_espnn import component_sources

ROOT = Path(__file__).resolve().parents[1]
COMPONENT = ROOT / "espnn_component"
ENGINE = COMPONENT / "engine"
HOST_ESPNN = COMPONENT / "host_espnn"

WARNINGS = ("-Wall", "-Wextra", "-Werror", "-std=c11", "-pedantic")
SANITIZE = ("-fsanitize=address,undefined", "-fno-sanitize-recover=all",
            "-fno-omit-frame-pointer", "-g", "-O1")
# the sanitizer runtime must not count the tool's own exit paths as failures
SANITIZER_ENV = {
    "ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0:exitcode=86",
    "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1:exitcode=87",
}
SANITIZER_EXIT_CODES = (86, 87)


@dataclass(frozen=True)
class Variant:
    name: str
    cflags: tuple[str, ...]
    esp_nn_dir: Path | None = None  # real ESP-NN sources instead of host_espnn/
    env: dict[str, str] = field(default_factory=dict)
    # more sources to compile and link (a model_pte_data.S: an embedded model's op selectors)
    # and flags for the link only (-Wl,--gc-sections)
    extra_sources: tuple[Path, ...] = ()
    ldflags: tuple[str, ...] = ()


HOST = Variant("host", ("-O2", "-DESPNN_HOST_STRICT"))
M32 = Variant("m32", ("-m32", "-O2", "-DESPNN_HOST_STRICT"))
ASAN64 = Variant("asan64", (*SANITIZE, "-DESPNN_HOST_STRICT"), env=SANITIZER_ENV)
ASAN32 = Variant("asan32", ("-m32", *SANITIZE, "-DESPNN_HOST_STRICT"), env=SANITIZER_ENV)
# what an ESP32-S3 build sees: the engine knows its chip, and ESP-NN asks for scratch
CHIP = Variant("chip", (*SANITIZE, "-DESPNN_HOST_STRICT", "-DESPNN_BUILD_TARGET=3",
                        "-DHN_TEST_SCRATCH_BYTES=64"), env=SANITIZER_ENV)
# the scratch guard mode: the host kernels write what ESP-NN's ESP32-S3 kernels write into a
# side buffer of each op's scratch_size followed by guard bytes (esp_nn_host_guard.h)
GUARD_S3 = Variant("guard_s3", (*SANITIZE, "-DESPNN_HOST_STRICT", "-DESPNN_HOST_SCRATCH_GUARD=3"),
                   env=SANITIZER_ENV)
# the same guards in an engine that knows its chip: it reads a short depthwise scratch as an S3
# build does (bands, docs/engine.md), where the plain guard build, which must let a short
# payload reach its guards, runs the whole map
GUARD_S3_CHIP = Variant("guard_s3_chip", (*SANITIZE, "-DESPNN_HOST_STRICT", "-DESPNN_HOST_SCRATCH_GUARD=3",
                                          "-DESPNN_BUILD_TARGET=3"), env=SANITIZER_ENV)
# an ESP32-S3 optimised build's routing (engine/src/espnn_s3_kernels.h) against host stand-ins
# of ESP-NN's _esp32s3/_ansi kernels that abort outside the S3 kernels' contracts
S3_CONTRACTS = Variant("s3_contracts", (*SANITIZE, "-DESPNN_HOST_STRICT", "-DESPNN_BUILD_TARGET=3",
                                        "-DESPNN_S3_KERNELS=1",
                                        "-DESPNN_HOST_S3_CONTRACTS"), env=SANITIZER_ENV)
GUARD_P4 = Variant("guard_p4", (*SANITIZE, "-DESPNN_HOST_STRICT", "-DESPNN_HOST_SCRATCH_GUARD=6"),
                   env=SANITIZER_ENV)


def esp_nn_variant(esp_nn_dir: Path) -> Variant:
    return Variant("espnn", ("-O2",), esp_nn_dir=esp_nn_dir)


def cache_dir() -> Path:
    env = os.environ.get("ESPNN_ENGINE_CACHE")
    base = Path(env) if env else Path(tempfile.gettempdir()) / "executorch_espnn_engine"
    base.mkdir(parents=True, exist_ok=True)
    return base


def _engine_sources(replace: dict[str, Path] | None = None) -> list[Path]:
    """The engine's C files; ``replace`` maps one (relative to engine/, "src/registry.c") to
    another file that takes its place."""
    lists = component_sources.load(COMPONENT)
    paths = sorted([*lists.engine_srcs, *lists.run_srcs])
    subs = replace or {}
    unknown = set(subs) - {p.relative_to(ENGINE).as_posix() for p in paths}
    if unknown:
        raise ValueError(f"no engine source {sorted(unknown)} to replace")
    return [subs.get(p.relative_to(ENGINE).as_posix(), p) for p in paths]


def _kernel_sources(v: Variant) -> list[Path]:
    lists = component_sources.load(COMPONENT)
    if v.esp_nn_dir is None:
        return sorted(lists.host_kernel_srcs)
    return [v.esp_nn_dir / rel for rel in lists.esp_nn_ansi_kernels]


def _hash(v: Variant, cc: str, sources: Sequence[Path]) -> str:
    h = hashlib.sha256()
    h.update(repr((v.name, v.cflags, str(v.esp_nn_dir), cc, v.ldflags)).encode())
    headers = [*(ENGINE / "include").glob("*.h"), *(ENGINE / "src").glob("*.h"),
               *(HOST_ESPNN / "include").glob("*.h"), *(HOST_ESPNN / "src").glob("*.h")]
    if v.esp_nn_dir is not None:
        headers += [*(v.esp_nn_dir / "include").glob("*.h"),
                    *(v.esp_nn_dir / "src" / "common").glob("*.h"),
                    *(v.esp_nn_dir / "src" / "softmax").glob("*.h")]
    for p in sorted({*sources, *_kernel_sources(v), *headers, *v.extra_sources}):
        h.update(str(p).encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


def _run(cmd: Sequence[str], cwd: Path) -> None:
    r = subprocess.run(list(cmd), cwd=cwd, capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"compile failed: {' '.join(cmd)}\n{r.stdout}\n{r.stderr}")


def build(v: Variant, cc: str = "gcc", replace: dict[str, Path] | None = None) -> Path:
    """Path of the ``espnn_run`` binary for variant ``v`` (built on first use), with the engine
    sources ``replace`` names swapped for other files."""
    sources = _engine_sources(replace)
    out = cache_dir() / f"espnn_run-{v.name}-{_hash(v, cc, sources)}"
    if out.exists():
        return out
    with tempfile.TemporaryDirectory(dir=cache_dir()) as tmp:
        work = Path(tmp)
        objs: list[str] = []
        lists = component_sources.load(COMPONENT)
        engine_inc = [x for d in (*lists.engine_include_dirs, *lists.engine_priv_include_dirs)
                      for x in ("-I", str(d))]
        if v.esp_nn_dir is None:
            kern_inc = [x for d in lists.host_kernel_include_dirs for x in ("-I", str(d))]
            kern_flags = [*WARNINGS, *v.cflags, *kern_inc]
        else:
            kern_inc = ["-I", str(v.esp_nn_dir / "include")]
            # third-party: GNU C and its own warnings
            kern_flags = ["-std=gnu11", "-w", *v.cflags, *kern_inc,
                          "-I", str(v.esp_nn_dir / "src" / "common")]
        for i, src in enumerate(_kernel_sources(v)):
            obj = work / f"k{i}.o"
            _run([cc, *kern_flags, "-c", str(src), "-o", str(obj)], work)
            objs.append(str(obj))
        for i, src in enumerate(sources):
            obj = work / f"e{i}.o"
            _run([cc, *WARNINGS, *v.cflags, *engine_inc, *kern_inc, "-c", str(src), "-o",
                  str(obj)], work)
            objs.append(str(obj))
        for i, src in enumerate(v.extra_sources):
            obj = work / f"x{i}.o"
            _run([cc, *v.cflags, "-c", str(src), "-o", str(obj)], work)
            objs.append(str(obj))
        exe = work / "espnn_run"
        _run([cc, *v.cflags, *v.ldflags, *objs, "-o", str(exe)], work)
        shutil.move(str(exe), out)  # same filesystem: atomic for concurrent sessions
    return out


@dataclass
class RunResult:
    returncode: int
    stdout: str
    stderr: str
    outputs: list[bytes]

    def error_fields(self) -> dict[str, str]:
        """The machine-readable ``error`` line: status, field, op, opcode, tensor, value, limit."""
        for line in self.stdout.splitlines():
            parts = line.split("\t")
            if parts[0] == "error" and len(parts) == 8:
                keys = ("status", "field", "op", "opcode", "tensor", "value", "limit")
                return dict(zip(keys, parts[1:], strict=True))
        return {}


def _env(v: Variant) -> dict[str, str]:
    return {**os.environ, **v.env}


def run(exe: Path, v: Variant, payload: bytes, inputs: Sequence[npt.NDArray[np.generic]],
        n_outputs: int, extra: Sequence[str] = ()) -> RunResult:
    """Run ``payload`` on ``inputs``; read back ``n_outputs`` raw outputs on success."""
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        (d / "payload.bin").write_bytes(payload)
        args = [str(exe), *extra, "-o", str(d / "out"), str(d / "payload.bin")]
        for k, x in enumerate(inputs):
            (d / f"in{k}.bin").write_bytes(np.ascontiguousarray(x).tobytes())
            args.append(str(d / f"in{k}.bin"))
        r = subprocess.run(args, capture_output=True, text=True, env=_env(v), timeout=300,
                           check=False)
        outs = []
        if r.returncode == 0:
            outs = [(d / f"out{k}.bin").read_bytes() for k in range(n_outputs)]
        return RunResult(r.returncode, r.stdout, r.stderr, outs)


def inspect(exe: Path, v: Variant, payload: bytes) -> dict[str, str]:
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / "payload.bin"
        p.write_bytes(payload)
        r = subprocess.run([str(exe), "--inspect", str(p)], capture_output=True, text=True,
                           env=_env(v), timeout=60, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"espnn_run --inspect failed ({r.returncode}): {r.stderr}")
    return dict(line.split("=", 1) for line in r.stdout.splitlines())


@dataclass(frozen=True)
class Verdict:
    status: str  # "ESPNN_OK" or the error status name
    field: str = "-"
    op: int = -1
    tensor: int = -1


def check_many(exe: Path, v: Variant, payloads: Sequence[bytes]) -> list[Verdict]:
    """``espnn_inspect`` verdict of each payload, in one process."""
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for i, data in enumerate(payloads):
            p = Path(tmp) / f"p{i:05d}.bin"
            p.write_bytes(data)
            paths.append(str(p))
        r = subprocess.run([str(exe), "--check", *paths], capture_output=True, text=True,
                           env=_env(v), timeout=600, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"espnn_run --check failed ({r.returncode}): {r.stderr[-4000:]}")
    verdicts = []
    for line in r.stdout.splitlines():
        parts = line.split("\t")
        if parts[1] == "ESPNN_OK":
            verdicts.append(Verdict("ESPNN_OK"))
        else:
            verdicts.append(Verdict(parts[1], parts[2], int(parts[3]), int(parts[4])))
    assert len(verdicts) == len(payloads), r.stdout[-2000:]
    return verdicts
