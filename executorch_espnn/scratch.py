"""ESP-NN scratch-buffer sizes, computed ahead of time for the payload's target.

ESP-NN asks the caller for a scratch buffer before conv, depthwise conv and softmax
(``esp_nn_get_*_scratch_size``).  The engine calls those kernels only for dense
convolutions (groups = 1, dilation 1), depthwise convolutions with dilation 1 and
softmax; every other op, and the engine's own kernels (grouped/dilated conv, LUT,
data movement), needs none.  The sizes below re-implement the size functions of
ESP-NN 1.2.3 (``espressif/esp-nn`` at d45b843, ``src/convolution/esp_nn_conv_esp32s3.c``,
``esp_nn_depthwise_conv_s8_esp32s3.c``, ``esp_nn_conv_esp32p4.c``, ``*_opt.c``,
``*_ansi.c`` and ``src/softmax``), selected the way ``esp_nn.h`` selects them:

* ``generic`` (host simulator, ANSI kernels): 0 everywhere;
* ``esp32s3``: the S3 formulas;
* ``esp32p4``: the P4 conv formula, depthwise 0;
* ``esp32``, ``esp32s2``, ``esp32c3``, ``esp32c6``: the generic "opt" kernels (conv and
  depthwise 0, softmax 4 bytes per row element).

When ESP-NN is upgraded, re-check these against the new sources.
"""

from __future__ import annotations

from dataclasses import dataclass

from .payload.format import Target

_OPT_TARGETS = frozenset({Target.ESP32, Target.ESP32S2, Target.ESP32C3, Target.ESP32C6})


@dataclass(frozen=True)
class ConvGeometry:
    """What ESP-NN's size functions read from ``data_dims_t``/``conv_params_t``."""

    in_w: int
    in_h: int
    in_ch: int
    filter_w: int
    filter_h: int
    out_w: int
    out_h: int
    out_ch: int
    pad_w: int  # left padding (ESP-NN takes only top/left)
    pad_h: int  # top padding
    stride_w: int
    stride_h: int
    ch_mult: int = 1


def _conv_s3(g: ConvGeometry) -> int:
    align_buf = 64  # alignment (16) + the assembly kernels' over-read margin (48)
    if g.filter_w == 1 and g.filter_h == 1 and g.pad_w == 0 and g.pad_h == 0 and g.stride_w == 1 and g.stride_h == 1:
        ch8 = (g.in_ch + 7) & ~7
        transpose = 0 if g.in_w * g.in_h < 8 else 2 * 8 * ch8
        inp = g.in_w * g.in_h * ch8 if g.in_ch % 8 else 0
        return inp + ch8 * g.out_ch + transpose + align_buf
    row = g.filter_w * g.in_ch
    window = g.filter_w * g.filter_h * g.in_ch
    if row < 16 and window >= 16:  # im2col path
        window_aligned = (window + 15) & ~15
        return g.out_ch * 4 + 16 + g.out_ch * window_aligned + 16 + window_aligned + align_buf
    ch16 = (g.in_ch + 15) & ~15
    inp = 0 if g.pad_w == 0 and g.pad_h == 0 else (g.in_w + 2 * g.pad_w) * (g.in_h + 2 * g.pad_h) * g.in_ch
    filt = g.filter_w * g.filter_h * ch16 * g.out_ch
    filt_align = ((row + 15) // 16) * 16 * g.filter_h * g.out_ch
    pad_right = max(0, g.out_w * g.stride_w + g.filter_w - 1 - g.in_w)
    pad_bottom = max(0, g.out_h * g.stride_h + g.filter_h - 1 - g.in_h)
    boundary = (g.in_w + pad_right) * (g.in_h + pad_bottom) * g.in_ch if pad_right > 0 or pad_bottom > 0 else 0
    return inp + filt + filt_align + boundary + align_buf + g.out_ch * 4


_P4_L1D_BUDGET = 32768


def _conv_p4(g: ConvGeometry) -> int:
    align_buf = 32
    if g.filter_w == 1 and g.filter_h == 1 and g.pad_w == 0 and g.pad_h == 0 and g.stride_w == 1 and g.stride_h == 1:
        if g.in_ch < 16:
            return g.out_ch * 4 + 16 * g.out_ch + 32 + align_buf
        ch8 = (g.in_ch + 7) & ~7
        transpose = 0 if g.in_w * g.in_h < 8 else 2 * 8 * ch8
        inp = g.in_w * g.in_h * ch8 if g.in_ch % 8 else 0
        return inp + ch8 * g.out_ch + transpose + align_buf
    ch16 = (g.in_ch + 15) & ~15
    acc = g.out_ch * 4
    if g.pad_w == 0 and g.pad_h == 0 and g.filter_w * g.in_ch >= 16:
        return g.filter_w * g.filter_h * ch16 * g.out_ch + align_buf + acc
    window = g.filter_w * g.filter_h * g.in_ch
    if window >= 16:
        return acc + window + align_buf
    if g.pad_w == 0 and g.pad_h == 0:
        eff_ch = ((16 + g.filter_w - 1) // g.filter_w + 15) & ~15
        return acc + g.filter_w * g.filter_h * eff_ch * g.out_ch + g.in_w * g.in_h * eff_ch + align_buf
    padded_w = g.in_w + 2 * g.pad_w
    full = padded_w * (g.in_h + 2 * g.pad_h) * g.in_ch
    if full + acc > _P4_L1D_BUDGET:
        eff_ch = g.in_ch
        filt = 0
        if g.filter_w * g.in_ch < 16:
            eff_ch = ((16 + g.filter_w - 1) // g.filter_w + 15) & ~15
            filt = g.filter_w * g.filter_h * eff_ch * g.out_ch
        row_bytes = padded_w * eff_ch
        budget = _P4_L1D_BUDGET - acc - filt
        tile = 1
        if budget > 0 and g.filter_h * row_bytes <= budget:
            # C's int division truncates toward zero; both operands are positive here
            tile = (budget - g.filter_h * row_bytes) // (g.stride_h * row_bytes) + 1
            tile = min(tile, g.out_h)
        rows = (tile - 1) * g.stride_h + g.filter_h + 2 * g.pad_h
        return rows * row_bytes + filt + align_buf + acc
    return full + g.filter_w * g.filter_h * ch16 * g.out_ch + align_buf + acc


def _depthwise_s3(g: ConvGeometry) -> int:
    ch = g.in_ch
    filt = g.filter_w * g.filter_h * ch * g.ch_mult
    if g.ch_mult == 1 and ch % 8 == 0:
        if g.filter_w == 3 and g.filter_h == 3:
            if ch % 16 == 0:
                if g.pad_w or g.pad_h:
                    pw, ph = 2 * g.pad_w, 2 * g.pad_h
                else:
                    pw = g.out_w * g.stride_w + g.filter_w - 1 - g.in_w
                    ph = g.out_h * g.stride_h + g.filter_h - 1 - g.in_h
                if pw or ph:
                    full = (g.in_w + pw) * (g.in_h + ph) * ch
                    if full <= 40 * 1024:
                        return filt + full + 16
                    return filt + (g.in_w + pw) * g.filter_h * ch + 16
                return filt + 16
            if ch >= 12:
                ch16 = (ch + 15) & ~15
                tpw = 2 * g.pad_w + max(0, g.out_w * g.stride_w + 2 - g.in_w)
                tph = 2 * g.pad_h + max(0, g.out_h * g.stride_h + 2 - g.in_h)
                return 9 * ch16 + (g.in_w + tpw) * (g.in_h + tph) * ch16 + g.out_w * g.out_h * ch16 + 64
            return 2 * (filt + g.in_w * g.in_h * ch) + 32
        s16 = 2 * (filt + g.in_w * g.in_h * ch)
        if s16 <= 48 * 1024:
            return s16 + 32
        return 2 * filt + 2 * g.in_w * g.filter_h * ch + 32
    if g.ch_mult == 1 and ch > 3:
        ch8 = (ch + 7) & ~7

        def a16(n: int) -> int:
            return (n + 15) & ~15

        input_start = a16(g.filter_w * g.filter_h * ch8 * 2)
        out_start = a16(input_start + g.in_w * g.in_h * ch8 * 2)
        bias_start = a16(out_start + g.out_w * g.out_h * ch8)
        return bias_start + 3 * ch8 * 4 + 16
    if g.ch_mult % 4 == 0:
        return 2 * (filt + g.in_w * g.in_h * ch) + 32
    return 32


def conv_scratch(target: Target, g: ConvGeometry) -> int:
    """Bytes ``esp_nn_get_conv_scratch_size`` asks for on ``target``."""
    if target == Target.ESP32S3:
        return _conv_s3(g)
    if target == Target.ESP32P4:
        return _conv_p4(g)
    return 0  # ANSI and the generic optimised kernels need none


def depthwise_scratch(target: Target, g: ConvGeometry) -> int:
    """Bytes ``esp_nn_get_depthwise_conv_scratch_size`` asks for on ``target``."""
    if target == Target.ESP32S3:
        return _depthwise_s3(g)
    return 0


# Longer rows run on the engine's own softmax (ESP-NN's final shift would reach 32 bits
# there, see docs/engine.md), which needs no scratch.
SOFTMAX_ESPNN_MAX_ROW = 511


def softmax_scratch(target: Target, row_len: int) -> int:
    """Bytes ``esp_nn_get_softmax_scratch_size(width, height)`` asks for (width = row length)."""
    if target == Target.GENERIC or row_len > SOFTMAX_ESPNN_MAX_ROW:
        return 0
    if target == Target.ESP32S3 or target == Target.ESP32P4 or target in _OPT_TARGETS:
        return 4 * row_len
    return 0  # pragma: no cover - every Target is listed above
