"""ESP-NN scratch-buffer sizes, computed ahead of time for the payload's target.

ESP-NN takes a caller's scratch buffer for conv, depthwise conv and softmax
(``esp_nn_set_*_scratch_buf``).  The engine calls those kernels only for dense
convolutions (groups = 1, dilation 1), depthwise convolutions with dilation 1 and
softmax; every other op, and the engine's own kernels (grouped/dilated conv, LUT,
data movement), needs none.

The size is what the kernel really TOUCHES for the payload's operands: one past the
highest scratch byte it writes, branch by branch of the kernel's dispatcher, with the
regions at the offsets the kernel itself computes (its own align-ups included) -- not what
``esp_nn_get_*_scratch_size`` reserves, which always counts e.g. a filter copy that the
S3 conv writes only for rows that are not a multiple of 16 bytes or a misaligned filter.
The rules read ESP-NN 1.2.3 (``espressif/esp-nn`` master at d45b843; the pin is
``>=1.2.2,<1.2.4``, and 1.2.2 is not tagged upstream), each citing its source function:

* ``generic`` (host simulator, ANSI kernels): 0 everywhere;
* ``esp32s3``: ``esp_nn_conv_s8_esp32s3`` and ``esp_nn_depthwise_conv_s8_esp32s3``;
* ``esp32p4``: ``esp_nn_conv_s8_esp32p4``; depthwise 0;
* ``esp32``, ``esp32s2``, ``esp32c3``, ``esp32c6``: the generic "opt" kernels (conv and
  depthwise 0, softmax 4 bytes per row element).

Two assumptions the payload guarantees: constants start on 16-byte boundaries
(``CONST_ALIGN``) and so does each scratch region (``ARENA_ALIGN``, in an arena the caller
passes 16-byte aligned).  ``espnn_component/engine/src/scratch_rules.c`` is the C twin of
these rules (the engine checks a payload's ``scratch_size`` against it at prepare);
``tests/test_scratch_rules.py`` keeps the two in agreement.  A kernel that returns without
computing on a NULL scratch (P4 conv, S3 depthwise) always gets at least ``NON_NULL_SCRATCH``.  When ESP-NN is upgraded,
re-check these against the new sources.
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
    # the filter constant starts on a 16-byte boundary (always, in a payload: CONST_ALIGN)
    filter_aligned16: bool = True


def _a16(n: int) -> int:
    return (n + 15) & ~15


def _conv_s3(g: ConvGeometry) -> int:
    """Highest scratch byte ``esp_nn_conv_s8_esp32s3`` (``esp_nn_conv_esp32s3.c``) writes, +1."""
    if g.filter_w == 1 and g.filter_h == 1 and g.pad_w == 0 and g.pad_h == 0 and g.stride_w == 1 and g.stride_h == 1:
        # Both 1x1 kernels transpose blocks of 8 positions into scratch; the tail positions
        # run from registers/the stack, so a map of fewer than 8 positions writes nothing.
        if g.in_w * g.in_h < 8:
            return 0
        if g.in_ch % 8 == 0:
            # esp_nn_conv_s8_mult8_1x1_esp32s3 (esp_nn_conv_s8_mult8_1x1_esp32s3.S, the
            # transpose loop): in_ch/8 groups of 8 positions x 8 channels as int16 = 16*in_ch,
            # stored with ee.vst.128 from the scratch start (which must be 16-byte aligned).
            return 16 * g.in_ch
        # esp_nn_conv_s8_1x1 (esp_nn_conv_s8_1x1_esp32s3.c): tbuf = scratch aligned up to 16,
        # in_ch/8 (rounded down) channel groups x 128 bytes; the leftover channels go direct.
        return (g.in_ch // 8) * 128
    row = g.filter_w * g.in_ch
    window = g.filter_w * g.filter_h * g.in_ch
    if row < 16 and window >= 16:
        # esp_nn_conv_s8_im2col_s3: filter_sum[out_ch] int32, then (aligned up to 16) the
        # zero-padded filter copy out_ch x window_aligned, then (aligned) one im2col window.
        window_aligned = _a16(window)
        im2col_at = _a16(_a16(g.out_ch * 4) + g.out_ch * window_aligned)
        return im2col_at + window_aligned
    # The general path (esp_nn_conv_s8_esp32s3 after the im2col test): each region starts
    # where the previous WRITTEN one ends (scratch_data advances only past what it copies).
    end = 0
    if row % 16:
        # the filter with each row zero-padded to a multiple of 16 bytes
        end += _a16(row) * g.filter_h * g.out_ch
    elif not g.filter_aligned16:
        end += window * g.out_ch  # a plain copy only when the constant is not 16-byte aligned
    pad_right = max(0, g.out_w * g.stride_w + g.filter_w - 1 - g.in_w)
    pad_bottom = max(0, g.out_h * g.stride_h + g.filter_h - 1 - g.in_h)
    if g.pad_w or g.pad_h:
        # esp_nn_aligned_s8_pad_with_value (src/common/common_functions.h): the whole padded map
        end += (g.in_w + 2 * g.pad_w) * (g.in_h + 2 * g.pad_h) * g.in_ch
    elif pad_right or pad_bottom:
        # esp_nn_aligned_s8_pad_end_with_value: right/bottom padding only
        end += (g.in_w + pad_right) * (g.in_h + pad_bottom) * g.in_ch
    # esp_nn_conv_s8_filter_aligned_input_padded_esp32s3 (.S, the accumulate/bias-copy loops)
    # stores one int32 correction per output channel at the current scratch pointer (the C
    # precomputation for large filters writes the same table there).
    return end + 4 * g.out_ch


_P4_L1D_BUDGET = 32768
# esp_nn_conv_s8_esp32p4 and esp_nn_depthwise_conv_s8_esp32s3 return WITHOUT computing when
# their scratch pointer is NULL, which the engine passes for a scratch_size of 0: a kernel
# that writes nothing still gets a (minimal, one ARENA_ALIGN unit) region.
NON_NULL_SCRATCH = 16


def _conv_p4(g: ConvGeometry) -> int:
    """Highest scratch byte ``esp_nn_conv_s8_esp32p4`` (``esp_nn_conv_esp32p4.c``) writes, +1."""
    acc = 4 * g.out_ch  # every path's filter_sum[out_ch] (int32) at the scratch start
    window = g.filter_w * g.filter_h * g.in_ch
    if g.filter_w == 1 and g.filter_h == 1 and g.pad_w == 0 and g.pad_h == 0 and g.stride_w == 1 and g.stride_h == 1:
        return acc  # esp_nn_conv_s8_1x1 (the P4 file's own): filter_sum only
    if g.pad_w == 0 and g.pad_h == 0 and g.filter_w * g.in_ch >= 16:
        return acc  # esp_nn_conv_s8_padded: filter_sum only
    if window >= 16:
        return acc + window  # esp_nn_conv_s8_im2col: filter_sum, then one window
    if g.pad_w == 0 and g.pad_h == 0:
        return NON_NULL_SCRATCH  # esp_nn_conv_s8_opt: none, but the NULL check comes first
    # esp_nn_conv_s8_tiled: filter_sum, the channel-padded filter, then the largest tile of
    # padded input rows (its tile height computed as the kernel does, C int division)
    eff_ch, filt = g.in_ch, 0
    if g.filter_w * g.in_ch < 16:
        eff_ch = _a16((16 + g.filter_w - 1) // g.filter_w)
        filt = g.filter_w * g.filter_h * eff_ch * g.out_ch
    row_bytes = (g.in_w + 2 * g.pad_w) * eff_ch
    tile = g.out_h
    used = acc + filt
    if row_bytes * (g.in_h + 2 * g.pad_h) + used > _P4_L1D_BUDGET:
        budget = _P4_L1D_BUDGET - used
        if g.filter_h * row_bytes <= budget:
            tile = (budget - g.filter_h * row_bytes) // (g.stride_h * row_bytes) + 1
            tile = min(max(tile, 1), g.out_h)
    rows = (tile - 1) * g.stride_h + g.filter_h
    return max(used + rows * row_bytes, NON_NULL_SCRATCH)


def _depthwise_s3(g: ConvGeometry) -> int:
    return max(_depthwise_s3_writes(g), NON_NULL_SCRATCH)


def _depthwise_s3_writes(g: ConvGeometry) -> int:
    """Highest scratch byte ``esp_nn_depthwise_conv_s8_esp32s3``
    (``esp_nn_depthwise_conv_s8_esp32s3.c``) writes, +1, branch by branch of its dispatcher."""
    ch, m = g.in_ch, g.ch_mult
    filt = g.filter_w * g.filter_h * ch * m
    align_len = 16 - (filt & 15)  # 1..16: the kernel's own gap after the filter copy
    in_size = g.in_w * g.in_h * ch
    # s16 paths: input_data16 = (int16_t *)scratch + filter_size + align_len, i.e. at byte
    # 2*(filter_size + align_len); esp_nn_s8_to_s16_esp32s3 / esp_nn_aligned_s8_to_s16_with_offset_esp32s3
    # (src/common/esp_nn_common_functions_esp32s3.S) write exactly 2 bytes per element.
    s16_at = 2 * (filt + align_len)
    if m == 1 and ch % 8 == 0:
        if g.filter_w == 3 and g.filter_h == 3:
            if ch % 16 == 0 and g.pad_w == 1 and g.pad_h == 1:
                # filter copy at 0, padded input at filter_size + align_len (int8)
                padded_w = g.in_w + 2
                full = padded_w * (g.in_h + 2) * ch
                if full <= 40 * 1024:
                    return filt + align_len + full
                return filt + align_len + padded_w * g.filter_h * ch  # row tiles: 3 padded rows
            if ch % 16 == 0 and g.pad_w == 0 and g.pad_h == 0:
                pad_right = g.out_w * g.stride_w + g.filter_w - 1 - g.in_w
                pad_bottom = g.out_h * g.stride_h + g.filter_h - 1 - g.in_h
                if pad_right or pad_bottom:
                    return filt + align_len + (g.in_w + pad_right) * (g.in_h + pad_bottom) * ch
                return filt  # only the filter copy
            if ch >= 12:
                # channels padded to 16: filter 9*ch16, 16 bytes gap, padded input, padded output
                ch16 = _a16(ch)
                new_w, new_h = g.in_w + 2 * g.pad_w, g.in_h + 2 * g.pad_h
                new_w += max(0, g.out_w * g.stride_w + 2 - new_w)
                new_h += max(0, g.out_h * g.stride_h + 2 - new_h)
                return 9 * ch16 + 16 + new_w * new_h * ch16 + g.out_w * g.out_h * ch16
            return s16_at + 2 * in_size  # 8 channels: esp_nn_depthwise_conv_s16_mult1_3x3_esp32s3
        if 2 * (filt + in_size) <= 48 * 1024:
            return s16_at + 2 * in_size
        return s16_at + 2 * g.filter_h * g.in_w * ch  # row tiles of filter_ht input rows
    if m == 1 and ch > 3:
        # channels padded to 8, each region aligned up to 16 from the (16-aligned) scratch:
        # int16 filter, int16 input, int8 output, then bias/shift/mult int32 x ch8 each
        ch8 = (ch + 7) & ~7
        input_at = _a16(2 * g.filter_w * g.filter_h * ch8)
        out_at = _a16(input_at + 2 * g.in_w * g.in_h * ch8)
        bias_at = _a16(out_at + g.out_w * g.out_h * ch8)
        return bias_at + 3 * 4 * ch8
    if m % 4 == 0:  # the mult8 and mult4 s16 kernels: int16 filter and input
        return s16_at + 2 * in_size
    return 0  # esp_nn_depthwise_conv_s8_opt (esp_nn_depthwise_conv_opt.c) uses no scratch


def depthwise_bandable(target: Target, g: ConvGeometry) -> bool:
    """Whether the engine can run ``g`` in bands of output rows (docs/engine.md, "Depthwise
    bands"): on the S3, a 3x3 depthwise with channel multiplier 1, channels a multiple of 16
    and padding 1 or 0 on both axes, over more than one output row.  Each band is a pre-padded
    copy of its input rows that ESP-NN's dispatcher hands, unchanged, to the same s8 assembly
    (``esp_nn_depthwise_conv_s8_mult1_3x3_padded_esp32s3``) its own row tiles call for inputs
    over 40 KB; other geometries take s16 or channel-padded paths whose scratch grows with
    the band, so they are not banded."""
    return (target == Target.ESP32S3 and g.ch_mult == 1 and g.in_ch % 16 == 0 and g.filter_w == 3
            and g.filter_h == 3 and (g.pad_w, g.pad_h) in ((0, 0), (1, 1)) and g.out_h > 1)


def depthwise_band_geometry(g: ConvGeometry, rows: int) -> ConvGeometry:
    """The geometry ESP-NN sees for a band of ``rows`` output rows: exactly the padded input
    that band reads (``out * stride + filter - 1`` on each axis), with no padding left, so its
    dispatcher takes the no-padding s8 branch and reads the band where it lies."""
    return ConvGeometry(in_w=g.out_w * g.stride_w + g.filter_w - 1, in_h=rows * g.stride_h + g.filter_h - 1,
                        in_ch=g.in_ch, filter_w=g.filter_w, filter_h=g.filter_h, out_w=g.out_w, out_h=rows,
                        out_ch=g.out_ch, pad_w=0, pad_h=0, stride_w=g.stride_w, stride_h=g.stride_h,
                        ch_mult=g.ch_mult, filter_aligned16=g.filter_aligned16)


def depthwise_band_scratch(target: Target, g: ConvGeometry, rows: int) -> int:
    """Scratch of a banded depthwise with ``rows`` output rows per band: the band's padded
    input (aligned up to 16, where ESP-NN's own scratch pointer then starts) and what the
    kernel touches for the band (its filter copy)."""
    b = depthwise_band_geometry(g, rows)
    return _a16(b.in_w * b.in_h * b.in_ch) + depthwise_scratch(target, b)


def depthwise_band_rows(target: Target, g: ConvGeometry, scratch: int) -> int:
    """Output rows per band the engine runs ``g`` with when its payload gives ``scratch``
    bytes, fewer than the whole-map kernel touches: the most rows (below ``out_h``) whose band
    scratch fits; 0 when none does or ``g`` is not bandable (the engine then refuses it)."""
    if not depthwise_bandable(target, g):
        return 0
    for rows in range(g.out_h - 1, 0, -1):
        if depthwise_band_scratch(target, g, rows) <= scratch:
            return rows
    return 0


def conv_scratch(target: Target, g: ConvGeometry) -> int:
    """Scratch bytes ESP-NN's conv kernel for ``target`` needs for ``g`` (see the module doc)."""
    if target == Target.ESP32S3:
        return _conv_s3(g)
    if target == Target.ESP32P4:
        return _conv_p4(g)
    return 0  # ANSI and the generic optimised kernels need none


def depthwise_scratch(target: Target, g: ConvGeometry) -> int:
    """Scratch bytes ESP-NN's depthwise conv kernel for ``target`` touches for ``g``."""
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
