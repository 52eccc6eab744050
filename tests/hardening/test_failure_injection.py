"""Allocation failure at init, and version mismatches, in every direction.

``cpp/failure_injection.cpp`` (ASan + UBSan + LeakSanitizer over the component's sources)
loads IslandNet (two delegates) and makes each allocation fail in turn:

- runtime-allocator backend: the Method's allocator fails its k-th allocate();
- memory-policy backend: the policy heap fails its k-th aligned_alloc();
- EspnnModel::begin() (firmware's path, memory policy): each of its pools and the delegates'
  blocks fails in turn.

Every attempt must fail with an error (the backend's own failures name the buffer and its
size), hold no memory afterwards (the policy's byte count returns to 0, and LeakSanitizer
finds nothing at exit), and a later load with enough memory must reproduce the clean run.
Version stamps of the model header and of the payload, older and newer than the runtime,
are refused with a message naming both sides; a newer patch is accepted.
"""

from __future__ import annotations

import re
import struct
from pathlib import Path

import numpy as np
import pytest

from executorch_espnn import host
from executorch_espnn.errors import HostRuntimeError
from executorch_espnn.payload import decode
from executorch_espnn.payload.format import FORMAT_MAJOR, FORMAT_MINOR
from executorch_espnn.pte import delegate_payloads
from executorch_espnn.version import __version__, version_tuple
from tests.hardening import cpp_build

SANITIZER_FINDINGS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:")


@pytest.fixture(scope="module")
def asan_build() -> Path:
    return cpp_build.build("address")


def _run(exe: Path, args: list[str]) -> str:
    r = cpp_build.run(exe, args, cpp_build.ASAN_ENV)
    log = r.stdout + r.stderr
    for finding in SANITIZER_FINDINGS:
        assert finding not in log, log[-6000:]
    assert r.returncode == 0, log[-6000:]
    return r.stdout


@pytest.mark.parametrize("program", ["failure_injection", "failure_injection_policy"])
def test_leak_sanitizer_is_live(asan_build: Path, program: str) -> None:
    """A leak in these binaries is reported at exit (so 'no report' above means no leak)."""
    r = cpp_build.run(asan_build / program, ["--leak-selftest"], cpp_build.ASAN_ENV)
    assert r.returncode == 86, r.stdout + r.stderr
    assert "ERROR: LeakSanitizer: detected memory leaks" in r.stderr
    assert "77 byte(s) leaked in 1 allocation(s)" in r.stderr


def _delegate_blocks(pte: Path) -> list[str]:
    """The blocks each delegate's init() allocates, in order (no arena when it needs none;
    weights stay in place: the harness keeps the .pte 16-aligned)."""
    blocks = []
    for p in delegate_payloads(pte.read_bytes()):
        blocks += ["handle", "state"] + (["arena"] if decode(p).arena_size > 0 else [])
    return blocks


def _failures(out: str, prefix: str) -> list[str]:
    lines = re.findall(rf"^{prefix} (\d+)/(\d+): (.*)$", out, flags=re.M)
    assert lines, out[-3000:]
    n = int(lines[0][1])
    assert [int(k) for k, _, _ in lines] == list(range(1, n + 1)), "one line per allocation"
    assert "UNEXPECTED" not in out, out
    return [msg for _, _, msg in lines]


def test_runtime_allocator_each_allocation_fails_cleanly(asan_build: Path, island_pte: Path) -> None:
    out = _run(asan_build / "failure_injection", [str(island_pte)])
    msgs = _failures(out, "fail")
    assert "recovered: outputs match" in out
    errors = [int(re.match(r"error 0x([0-9a-f]+):", m).group(1), 16) for m in msgs]  # type: ignore[union-attr]
    assert all(e != 0 for e in errors)
    ours = [m for m in msgs if "the method allocator cannot hold the delegate" in m]
    # exactly the backend's allocations fail with its own error, naming each block
    assert [re.search(r"delegate (\w+) of \d+ bytes", m).group(1) for m in ours] == \
        _delegate_blocks(island_pte)  # type: ignore[union-attr]
    assert all(m.startswith("error 0x31: init: ") for m in ours)  # DelegateMemoryAllocationFailed
    # the others are ExecuTorch's own (MemoryAllocationFailed)
    assert all(m.startswith("error 0x21") for m in msgs if m not in ours)


def test_memory_policy_each_allocation_fails_cleanly(asan_build: Path, island_pte: Path) -> None:
    out = _run(asan_build / "failure_injection_policy", [str(island_pte)])
    msgs = _failures(out, "fail")
    assert "recovered: outputs match" in out
    blocks = [re.search(r"EspNN delegate (\w+): \d+ bytes do not fit", m).group(1)  # type: ignore[union-attr]
              for m in msgs]
    assert blocks == _delegate_blocks(island_pte)
    assert all(m.startswith("error 0x31: ") for m in msgs)


def _stamp_args(variants: list[tuple[str, str, str, int, int]]) -> list[str]:
    args = []
    for flag, et, pkg, fmaj, fmin in variants:
        args += [flag, et, pkg, str(fmaj), str(fmin)]
    return args


def test_espnn_model_begin_each_allocation_fails_and_stamps_checked(asan_build: Path,
                                                                    island_pte: Path) -> None:
    sizes = host.measure(island_pte.read_bytes())
    et = host.executorch_version().split("+")[0]
    et_major, et_minor = (int(x) for x in et.split(".")[:2])
    major, minor, patch = version_tuple()
    older_et, newer_et = f"{et_major}.{et_minor - 1}.0", f"{et_major}.{et_minor + 1}.0"
    older_pkg = f"{major}.{minor - 1}.9" if minor > 0 else f"{major - 1}.9.0"
    newer_pkg = f"{major}.{minor + 1}.0"
    fmaj, fmin = FORMAT_MAJOR, FORMAT_MINOR
    variants = [
        ("--stamp", older_et, __version__, fmaj, fmin),
        ("--stamp", newer_et, __version__, fmaj, fmin),
        ("--stamp", et, older_pkg, fmaj, fmin),
        ("--stamp", et, newer_pkg, fmaj, fmin),
        ("--stamp", et, __version__, fmaj - 1, 0),
        ("--stamp", et, __version__, fmaj, fmin + 1),
        ("--stamp", et, __version__, fmaj + 1, 0),
        ("--stamp-ok", et, f"{major}.{minor}.{patch + 7}", fmaj, fmin),
    ]
    out = _run(asan_build / "failure_injection_policy",
               [str(island_pte), "--begin", str(sizes.planned_bytes),
                str(sizes.method_allocator_bytes), str(sizes.temp_allocator_bytes),
                *_stamp_args(variants)])
    msgs = _failures(out, "begin fail")
    assert "begin recovered: outputs match" in out
    # the model's own pools, then every delegate block, each named in the message
    pools = ["EspnnModel state", "ExecuTorch planned buffers", "ExecuTorch method allocator",
             "ExecuTorch temp allocator"]
    assert [m.split(":")[0] for m in msgs[: len(pools)]] == pools
    # the harness describes the program without io_arena's homes (in_arena 0): EspnnModel gives
    # the unplanned program I/O a block of its own, after the delegates' blocks
    rest = msgs[len(pools):]
    assert [m.split(":")[0] for m in rest[-1:]] == ["EspnnModel I/O buffers"]
    delegate = [re.search(r"EspNN delegate (\w+):", m).group(1)  # type: ignore[union-attr]
                for m in rest[:-1]]
    assert delegate == _delegate_blocks(island_pte)
    stamps = re.findall(r"^stamp (\S+) (\S+) (\d+\.\d+): (.*)$", out, flags=re.M)
    assert len(stamps) == len(variants)
    for (flag, v_et, v_pkg, fmaj, fmin), (s_et, s_pkg, s_fmt, msg) in zip(variants, stamps, strict=True):
        assert (s_et, s_pkg, s_fmt) == (v_et, v_pkg, f"{fmaj}.{fmin}")
        if flag == "--stamp-ok":
            assert msg == "ok"
            continue
        # both sides named: what the header says, what this runtime is
        assert (f"model header built by executorch-espnn {v_pkg} for ExecuTorch {v_et} "
                f"(payload format {fmaj}.{fmin})") in msg, msg
        assert f"this runtime is executorch-espnn {__version__} with ExecuTorch {et} " \
               f"(payload format {FORMAT_MAJOR}.{FORMAT_MINOR})" in msg, msg


def _patch_payload(pte: bytes, index: int, fmt: tuple[int, int] | None = None,
                   producer: tuple[int, int, int] | None = None) -> bytes:
    payload = delegate_payloads(pte)[index]
    at = pte.find(payload)
    data = bytearray(pte)
    if fmt is not None:
        struct.pack_into("<HH", data, at + 4, *fmt)
    if producer is not None:
        struct.pack_into("<BBB", data, at + 8, *producer)
    return bytes(data)


def test_payload_versions_each_direction_through_host_run(island_pte: Path) -> None:
    from devkit.zoo import ZOO

    pte = island_pte.read_bytes()
    x = ZOO["island_net"].example_inputs()[0].numpy().astype(np.float32)
    good = host.run(pte, [x])
    major, minor, patch = version_tuple()
    older = (major, minor - 1, 9) if minor > 0 else (major, minor, 0)
    refused: list[tuple[str, dict[str, object]]] = [
        ("producer older", {"producer": older}),
        ("producer newer", {"producer": (major, minor + 1, 0)}),
        ("format newer minor", {"fmt": (FORMAT_MAJOR, FORMAT_MINOR + 1)}),
        ("format older major", {"fmt": (FORMAT_MAJOR - 1, 0)}),
        ("format newer major", {"fmt": (FORMAT_MAJOR + 1, 0)}),
    ]
    for what, change in refused:
        if what == "producer older" and older == (major, minor, 0):
            continue  # no older producer with the same major exists for 0.0.x
        for index in (0, 1):
            bad = _patch_payload(pte, index, **change)  # type: ignore[arg-type]
            with pytest.raises(HostRuntimeError) as e:
                host.run(bad, [x])
            msg = str(e.value)
            fmt = change.get("fmt", (FORMAT_MAJOR, FORMAT_MINOR))
            prod = change.get("producer", (major, minor, patch))
            want = (f"payload format {fmt[0]}.{fmt[1]} / producer {prod[0]}.{prod[1]}.{prod[2]}, "  # type: ignore[index]
                    f"runtime reads format {FORMAT_MAJOR}.{FORMAT_MINOR} from producer {major}.{minor}.x")
            assert want in msg, (what, msg)
    # a newer patch of the same major.minor is compatible, and gives the same outputs
    ok = host.run(_patch_payload(pte, 0, producer=(major, minor, patch + 7)), [x])
    np.testing.assert_array_equal(ok[0], good[0])
    # an older minor of the format is refused only for what it lacks: this payload homes the
    # program's input in its arena (2.4's io-homes flag), which a 2.3 payload cannot carry
    with pytest.raises(HostRuntimeError) as e:
        host.run(_patch_payload(pte, 0, fmt=(FORMAT_MAJOR, FORMAT_MINOR - 1)), [x])
    assert "field 'flags'" in str(e.value)
