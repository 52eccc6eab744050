"""The scratch rule has two homes, executorch_espnn/scratch.py (the lowering writes it into
each op's scratch_size) and espnn_component/engine/src/scratch_rules.c (prepare refuses a
payload that carries less): this keeps them one fact, over a sweep of geometries that
reaches every branch of both kernels' dispatchers, on every target."""

from __future__ import annotations

import ctypes
import hashlib
import random
import subprocess

import engine_helpers as eh
import pytest

from executorch_espnn.payload.format import Target
from executorch_espnn.scratch import (
    ConvGeometry,
    conv_scratch,
    depthwise_band_rows,
    depthwise_band_scratch,
    depthwise_bandable,
    depthwise_scratch,
)

RULES_C = eh.ENGINE / "src" / "scratch_rules.c"


class _Geom(ctypes.Structure):
    _fields_ = [(n, ctypes.c_int32) for n in (
        "in_w", "in_h", "in_ch", "filter_w", "filter_h", "out_w", "out_h", "out_ch",
        "pad_w", "pad_h", "stride_w", "stride_h", "ch_mult", "filter_aligned16")]


@pytest.fixture(scope="module")
def rules() -> ctypes.CDLL:
    """scratch_rules.c alone as a shared library (cached by its sources' hash)."""
    h = hashlib.sha256()
    for p in (RULES_C, eh.ENGINE / "src" / "espnn_scratch_rules.h", eh.ENGINE / "include" / "espnn_format.h"):
        h.update(p.read_bytes())
    lib = eh.cache_dir() / f"scratch_rules-{h.hexdigest()[:16]}.so"
    if not lib.exists():
        tmp = lib.with_suffix(".tmp.so")
        subprocess.run(["gcc", *eh.WARNINGS, "-O2", "-shared", "-fPIC", "-I", str(eh.ENGINE / "include"),
                        "-I", str(eh.ENGINE / "src"), str(RULES_C), "-o", str(tmp)], check=True)
        tmp.replace(lib)
    dll = ctypes.CDLL(str(lib))
    for name in ("espnn_conv_scratch_touched", "espnn_depthwise_scratch_touched"):
        fn = getattr(dll, name)
        fn.argtypes = [ctypes.c_int32, ctypes.POINTER(_Geom)]
        fn.restype = ctypes.c_uint32
    dll.espnn_depthwise_bandable.argtypes = [ctypes.c_int32, ctypes.POINTER(_Geom)]
    dll.espnn_depthwise_bandable.restype = ctypes.c_bool
    dll.espnn_depthwise_band_scratch.argtypes = [ctypes.c_int32, ctypes.POINTER(_Geom), ctypes.c_int32]
    dll.espnn_depthwise_band_scratch.restype = ctypes.c_uint32
    dll.espnn_depthwise_band_rows.argtypes = [ctypes.c_int32, ctypes.POINTER(_Geom), ctypes.c_uint32]
    dll.espnn_depthwise_band_rows.restype = ctypes.c_int32
    return dll


def _cg(g: ConvGeometry) -> _Geom:
    return _Geom(g.in_w, g.in_h, g.in_ch, g.filter_w, g.filter_h, g.out_w, g.out_h, g.out_ch,
                 g.pad_w, g.pad_h, g.stride_w, g.stride_h, g.ch_mult, int(g.filter_aligned16))


def _c(fn: ctypes._CFuncPtr, target: Target, g: ConvGeometry, *extra: int) -> int:
    return int(fn(int(target), ctypes.byref(_cg(g)), *extra))


def _geometry(rng: random.Random, depthwise: bool) -> ConvGeometry:
    k = rng.choice((1, 1, 3, 3, 3, 5, 7, 2))
    kw, kh = (k, k) if rng.random() < 0.8 else (k, rng.choice((1, 3)))
    pad = rng.choice((0, 0, 1, k // 2, 2))
    stride = rng.choice((1, 1, 2, 3))
    h, w = rng.randint(max(1, kh - 2 * pad), 40), rng.randint(max(1, kw - 2 * pad), 40)
    if rng.random() < 0.1:  # large maps: the row-tiled branches
        h, w = rng.randint(60, 130), rng.randint(60, 130)
    cin = rng.choice((1, 2, 3, 4, 5, 7, 8, 12, 16, 24, 32, 40, 48, 64, 96, 112, 256))
    mult = rng.choice((1, 1, 1, 2, 3, 4, 8)) if depthwise else 1
    cout = cin * mult if depthwise else rng.choice((1, 3, 8, 16, 17, 64, 1280))
    oh, ow = (h + 2 * pad - kh) // stride + 1, (w + 2 * pad - kw) // stride + 1
    return ConvGeometry(in_w=w, in_h=h, in_ch=cin, filter_w=kw, filter_h=kh, out_w=ow, out_h=oh,
                        out_ch=cout, pad_w=pad, pad_h=pad if rng.random() < 0.9 else 0,
                        stride_w=stride, stride_h=stride, ch_mult=mult,
                        filter_aligned16=rng.random() < 0.8)


@pytest.mark.parametrize("depthwise", [False, True], ids=["conv", "depthwise"])
def test_python_and_c_rules_agree(rules: ctypes.CDLL, depthwise: bool) -> None:
    rng = random.Random(1607 + depthwise)
    py, fn = (depthwise_scratch, rules.espnn_depthwise_scratch_touched) if depthwise else (
        conv_scratch, rules.espnn_conv_scratch_touched)
    nonzero = 0
    for _ in range(4000):
        g = _geometry(rng, depthwise)
        if g.out_w < 1 or g.out_h < 1:
            continue
        for target in Target:
            want = py(target, g)
            assert _c(fn, target, g) == want, (target.name, g)
            nonzero += want > 0
    assert nonzero > 1000  # the sweep reaches the kernels that use scratch


def test_python_and_c_band_rules_agree(rules: ctypes.CDLL) -> None:
    """Which depthwise geometries run in bands, what a band of n rows takes and how many rows
    a given scratch holds: the same in scratch.py and scratch_rules.c."""
    rng = random.Random(2412)
    bandable = 0
    for _ in range(3000):
        g = _geometry(rng, True)
        if rng.random() < 0.5:  # enough of the bandable shape to exercise the rest
            g = ConvGeometry(**{**g.__dict__, "filter_w": 3, "filter_h": 3, "ch_mult": 1,
                                "in_ch": 16 * rng.randint(1, 8), "pad_w": g.pad_h})
            g = ConvGeometry(**{**g.__dict__, "out_ch": g.in_ch,
                                "out_h": (g.in_h + 2 * g.pad_h - 3) // g.stride_h + 1,
                                "out_w": (g.in_w + 2 * g.pad_w - 3) // g.stride_w + 1})
        if g.out_w < 1 or g.out_h < 1:
            continue
        for target in Target:
            ok = depthwise_bandable(target, g)
            assert bool(_c(rules.espnn_depthwise_bandable, target, g)) == ok, (target.name, g)
            if not ok:
                assert _c(rules.espnn_depthwise_band_rows, target, g, 1 << 30) == 0
                continue
            bandable += 1
            for rows in {1, 2, g.out_h - 1}:
                assert _c(rules.espnn_depthwise_band_scratch, target, g, rows) == depthwise_band_scratch(
                    target, g, rows), (g, rows)
            for budget in (0, depthwise_band_scratch(target, g, 1) - 1, depthwise_band_scratch(target, g, 1),
                           rng.randint(0, depthwise_scratch(target, g)), 1 << 30):
                assert _c(rules.espnn_depthwise_band_rows, target, g, budget) == depthwise_band_rows(
                    target, g, budget), (g, budget)
    assert bandable > 300


def test_band_scratch_follows_the_kernel_writes() -> None:
    """By hand: DS-CNN's depthwise (25x5x64, 3x3, pad 1) in bands of one output row copies
    3 padded rows of 7 pixels x 64 channels, then ESP-NN copies the 3x3x64 filter after it
    (its no-padding s8 branch reads the band in place); bands of 24 rows take 26 such rows.
    A scratch just short of two rows' band holds one row."""
    s3 = Target.ESP32S3
    g = _g(in_w=5, in_h=25, in_ch=64, filter_w=3, filter_h=3, out_w=5, out_h=25, out_ch=64, pad_w=1, pad_h=1)
    assert depthwise_bandable(s3, g) and not depthwise_bandable(Target.ESP32, g)
    assert depthwise_band_scratch(s3, g, 1) == 7 * 3 * 64 + 9 * 64
    assert depthwise_band_scratch(s3, g, 24) == 7 * 26 * 64 + 9 * 64
    assert depthwise_band_rows(s3, g, 7 * 4 * 64 + 9 * 64 - 1) == 1
    assert depthwise_band_rows(s3, g, depthwise_scratch(s3, g)) == 24  # below out_h: never the whole map
    # 8 channels take the s16 path, whose scratch grows with the band: not banded
    assert not depthwise_bandable(s3, ConvGeometry(**{**g.__dict__, "in_ch": 8, "out_ch": 8}))


def _g(**kw: int) -> ConvGeometry:
    base = {"in_w": 3, "in_h": 3, "in_ch": 112, "filter_w": 1, "filter_h": 1, "out_w": 3, "out_h": 3,
            "out_ch": 1280, "pad_w": 0, "pad_h": 0, "stride_w": 1, "stride_h": 1}
    return ConvGeometry(**{**base, **kw})


def test_s3_rules_follow_the_kernel_writes() -> None:
    """Values worked out by hand from esp_nn_conv_esp32s3.c, independently of the code."""
    s3 = Target.ESP32S3
    # MobileNetV2's last 1x1 (112 -> 1280 on 3x3): the mult8 kernel's transpose buffer only
    assert conv_scratch(s3, _g()) == 8 * 112 * 2
    assert conv_scratch(s3, _g(in_w=2, in_h=3, out_w=2, out_h=3)) == 0  # < 8 positions
    # 3x3, 256 -> 256, pad 1 on 12x12: padded input 14*14*256 + one int32 per out channel;
    # the filter rows (3*256 bytes) are multiples of 16, so the filter is not copied
    g = _g(in_w=12, in_h=12, in_ch=256, filter_w=3, filter_h=3, out_w=12, out_h=12, out_ch=256,
           pad_w=1, pad_h=1)
    assert conv_scratch(s3, g) == 14 * 14 * 256 + 4 * 256
    # the same filter, misaligned: its copy comes first
    assert conv_scratch(s3, ConvGeometry(**{**g.__dict__, "filter_aligned16": False})) == (
        9 * 256 * 256 + 14 * 14 * 256 + 4 * 256)
    # 3x3 on 3 channels (row 9 < 16, window 27): im2col, 16 out channels
    g = _g(in_w=8, in_h=8, in_ch=3, filter_w=3, filter_h=3, out_w=6, out_h=6, out_ch=16)
    assert conv_scratch(s3, g) == 64 + 16 * 32 + 32


def test_p4_and_null_rules_follow_the_kernel_writes() -> None:
    p4 = Target.ESP32P4
    assert conv_scratch(p4, _g()) == 4 * 1280  # 1x1: filter sums only
    # 3x3 256 -> 256 pad 1: im2col (window 2304 >= 16): filter sums, one window
    g = _g(in_w=12, in_h=12, in_ch=256, filter_w=3, filter_h=3, out_w=12, out_h=12, out_ch=256,
           pad_w=1, pad_h=1)
    assert conv_scratch(p4, g) == 4 * 256 + 9 * 256
    # 3x3 on 1 channel, pad 1 (window 9 < 16): tiled; channels padded to 16 for rows of 3,
    # 8x8 map -> a 10x10 padded tile of 16 channels after the 4*4 sums and a 3*3*16*4 filter
    g = _g(in_w=8, in_h=8, in_ch=1, filter_w=3, filter_h=3, out_w=8, out_h=8, out_ch=4, pad_w=1, pad_h=1)
    assert conv_scratch(p4, g) == 16 + 3 * 3 * 16 * 4 + 10 * 10 * 16
    # the kernels that return on a NULL scratch get a region even where they write nothing
    assert conv_scratch(p4, _g(in_w=5, in_h=5, in_ch=1, filter_w=2, filter_h=2, out_w=4, out_h=4, out_ch=4)) == 16
    dw = _g(in_w=10, in_h=11, in_ch=6, out_w=5, out_h=6, out_ch=12, filter_w=3, filter_h=3, stride_w=2,
            stride_h=2, ch_mult=2)
    assert depthwise_scratch(Target.ESP32S3, dw) == 16  # ch_mult 2: the opt fallback
