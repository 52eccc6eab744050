/*
 * Scratch bytes ESP-NN's kernels touch, per target: the C twin of executorch_espnn/scratch.py
 * (read its module doc for the why).  Each rule names the ESP-NN 1.2.3 function whose writes
 * it follows; regions sit at the offsets the kernel computes itself, its own align-ups
 * included, and the result is one past the highest byte written.  The scratch start and the
 * filter constant are 16-byte aligned in every payload (ESPNN_ARENA_ALIGN, ESPNN_CONST_ALIGN);
 * filter_aligned16 says whether the filter really is.
 */
#include "espnn_scratch_rules.h"

#include "espnn_format.h"

/* int64 throughout: uint16 dimensions multiply past int32 before the result is clamped */
static int64_t a16(int64_t n)
{
    return (n + 15) & ~(int64_t)15;
}

static int64_t max0(int64_t v)
{
    return v > 0 ? v : 0;
}

static uint32_t to_u32(int64_t v)
{
    return v <= 0 ? 0u : (v >= (int64_t)UINT32_MAX ? UINT32_MAX : (uint32_t)v);
}

/* esp_nn_conv_s8_esp32s3, in (src/convolution/esp_nn_conv_esp32s3.c) */
static int64_t conv_s3(const espnn_scratch_geom_t *g)
{
    const int64_t in_w = g->in_w, in_h = g->in_h, ch = g->in_ch, fw = g->filter_w,
                  fh = g->filter_h, out_ch = g->out_ch;
    if (fw == 1 && fh == 1 && g->pad_w == 0 && g->pad_h == 0 && g->stride_w == 1 &&
        g->stride_h == 1) {
        /* both 1x1 kernels transpose blocks of 8 positions; fewer positions write nothing */
        if (in_w * in_h < 8) {
            return 0;
        }
        if (ch % 8 == 0) {
            /* esp_nn_conv_s8_mult8_1x1_esp32s3, in (.S, transpose loop): 8 positions x in_ch int16 */
            return 16 * ch;
        }
        /* esp_nn_conv_s8_1x1, in (esp_nn_conv_s8_1x1_esp32s3.c): in_ch/8 groups x 128 bytes */
        return (ch / 8) * 128;
    }
    const int64_t row = fw * ch, window = fw * fh * ch;
    if (row < 16 && window >= 16) {
        /* esp_nn_conv_s8_im2col_s3: filter_sum[out_ch], aligned filter copy, im2col window */
        const int64_t wa = a16(window);
        return a16(a16(out_ch * 4) + out_ch * wa) + wa;
    }
    /* general path: each region starts where the previous written one ends */
    int64_t end = 0;
    if (row % 16 != 0) {
        end += a16(row) * fh * out_ch; /* filter rows zero-padded to 16 bytes */
    } else if (!g->filter_aligned16) {
        end += window * out_ch; /* plain copy of a misaligned filter */
    }
    const int64_t pad_right = max0((int64_t)g->out_w * g->stride_w + fw - 1 - in_w);
    const int64_t pad_bottom = max0((int64_t)g->out_h * g->stride_h + fh - 1 - in_h);
    if (g->pad_w != 0 || g->pad_h != 0) {
        /* esp_nn_aligned_s8_pad_with_value, in (src/common/common_functions.h) */
        end += (in_w + 2 * (int64_t)g->pad_w) * (in_h + 2 * (int64_t)g->pad_h) * ch;
    } else if (pad_right > 0 || pad_bottom > 0) {
        /* esp_nn_aligned_s8_pad_end_with_value */
        end += (in_w + pad_right) * (in_h + pad_bottom) * ch;
    }
    /* esp_nn_conv_s8_filter_aligned_input_padded_esp32s3, in (.S): one int32 per out channel */
    return end + 4 * out_ch;
}

/* esp_nn_conv_s8_esp32p4 and esp_nn_depthwise_conv_s8_esp32s3 return without computing on a
 * NULL scratch (what the engine passes for scratch_size 0): they always get a region */
#define NON_NULL_SCRATCH 16

/* esp_nn_conv_s8_esp32p4, in (src/convolution/esp_nn_conv_esp32p4.c) */
#define P4_L1D_BUDGET 32768
static int64_t conv_p4(const espnn_scratch_geom_t *g)
{
    const int64_t in_w = g->in_w, in_h = g->in_h, ch = g->in_ch, fw = g->filter_w,
                  fh = g->filter_h, out_ch = g->out_ch, pw = g->pad_w, ph = g->pad_h;
    const int64_t acc = 4 * out_ch; /* filter_sum[out_ch] at the start, on every path */
    const int64_t window = fw * fh * ch;
    if (fw == 1 && fh == 1 && pw == 0 && ph == 0 && g->stride_w == 1 && g->stride_h == 1) {
        return acc; /* esp_nn_conv_s8_1x1 */
    }
    if (pw == 0 && ph == 0 && fw * ch >= 16) {
        return acc; /* esp_nn_conv_s8_padded */
    }
    if (window >= 16) {
        return acc + window; /* esp_nn_conv_s8_im2col: filter_sum, one window */
    }
    if (pw == 0 && ph == 0) {
        return NON_NULL_SCRATCH; /* esp_nn_conv_s8_opt */
    }
    /* esp_nn_conv_s8_tiled: filter_sum, channel-padded filter, the largest input tile */
    int64_t eff = ch, filt = 0;
    if (fw * ch < 16) {
        eff = a16((16 + fw - 1) / fw);
        filt = fw * fh * eff * out_ch;
    }
    const int64_t row_bytes = (in_w + 2 * pw) * eff;
    const int64_t used = acc + filt;
    int64_t tile = g->out_h;
    if (row_bytes * (in_h + 2 * ph) + used > P4_L1D_BUDGET) {
        const int64_t budget = P4_L1D_BUDGET - used;
        if (fh * row_bytes <= budget) {
            tile = (budget - fh * row_bytes) / (g->stride_h * row_bytes) + 1;
            tile = tile < 1 ? 1 : (tile > g->out_h ? g->out_h : tile);
        }
    }
    const int64_t rows = (tile - 1) * g->stride_h + fh;
    const int64_t end = used + rows * row_bytes;
    return end > NON_NULL_SCRATCH ? end : NON_NULL_SCRATCH;
}

/* esp_nn_depthwise_conv_s8_esp32s3, in (src/convolution/esp_nn_depthwise_conv_s8_esp32s3.c),
 * branch by branch of its dispatcher */
static int64_t depthwise_s3_writes(const espnn_scratch_geom_t *g)
{
    const int64_t in_w = g->in_w, in_h = g->in_h, ch = g->in_ch, m = g->ch_mult,
                  fw = g->filter_w, fh = g->filter_h, out_w = g->out_w, out_h = g->out_h;
    const int64_t filt = fw * fh * ch * m;
    const int64_t align_len = 16 - (filt & 15);
    const int64_t in_size = in_w * in_h * ch;
    /* s16 paths: input_data16 = (int16_t *)scratch + filter_size + align_len */
    const int64_t s16_at = 2 * (filt + align_len);
    if (m == 1 && ch % 8 == 0) {
        if (fw == 3 && fh == 3) {
            if (ch % 16 == 0 && g->pad_w == 1 && g->pad_h == 1) {
                const int64_t padded_w = in_w + 2;
                const int64_t full = padded_w * (in_h + 2) * ch;
                if (full <= 40 * 1024) {
                    return filt + align_len + full;
                }
                return filt + align_len + padded_w * fh * ch; /* row tiles */
            }
            if (ch % 16 == 0 && g->pad_w == 0 && g->pad_h == 0) {
                const int64_t pad_right = out_w * g->stride_w + fw - 1 - in_w;
                const int64_t pad_bottom = out_h * g->stride_h + fh - 1 - in_h;
                if (pad_right != 0 || pad_bottom != 0) {
                    return filt + align_len + (in_w + pad_right) * (in_h + pad_bottom) * ch;
                }
                return filt;
            }
            if (ch >= 12) {
                const int64_t ch16 = a16(ch);
                int64_t new_w = in_w + 2 * (int64_t)g->pad_w, new_h = in_h + 2 * (int64_t)g->pad_h;
                new_w += max0(out_w * g->stride_w + 2 - new_w);
                new_h += max0(out_h * g->stride_h + 2 - new_h);
                return 9 * ch16 + 16 + new_w * new_h * ch16 + out_w * out_h * ch16;
            }
            return s16_at + 2 * in_size; /* esp_nn_depthwise_conv_s16_mult1_3x3_esp32s3 */
        }
        if (2 * (filt + in_size) <= 48 * 1024) {
            return s16_at + 2 * in_size;
        }
        return s16_at + 2 * fh * in_w * ch; /* row tiles */
    }
    if (m == 1 && ch > 3) {
        const int64_t ch8 = (ch + 7) & ~(int64_t)7;
        const int64_t input_at = a16(2 * fw * fh * ch8);
        const int64_t out_at = a16(input_at + 2 * in_w * in_h * ch8);
        const int64_t bias_at = a16(out_at + out_w * out_h * ch8);
        return bias_at + 3 * 4 * ch8;
    }
    if (m % 4 == 0) {
        return s16_at + 2 * in_size; /* the mult8 / mult4 s16 kernels */
    }
    return 0; /* esp_nn_depthwise_conv_s8_opt: no scratch */
}

uint32_t espnn_conv_scratch_touched(int32_t target, const espnn_scratch_geom_t *g)
{
    if (target == ESPNN_TARGET_ESP32S3) {
        return to_u32(conv_s3(g));
    }
    if (target == ESPNN_TARGET_ESP32P4) {
        return to_u32(conv_p4(g));
    }
    return 0u; /* ANSI and the generic optimised kernels need none */
}

uint32_t espnn_depthwise_scratch_touched(int32_t target, const espnn_scratch_geom_t *g)
{
    if (target != ESPNN_TARGET_ESP32S3) {
        return 0u;
    }
    const int64_t w = depthwise_s3_writes(g);
    return to_u32(w > NON_NULL_SCRATCH ? w : NON_NULL_SCRATCH);
}

/* Depthwise bands (executorch_espnn/scratch.py, depthwise_bandable and what follows): the S3
 * geometries whose pre-padded bands ESP-NN's dispatcher hands to the same s8 3x3 assembly
 * its own row tiles use; other paths' scratch grows with the band. */
bool espnn_depthwise_bandable(int32_t target, const espnn_scratch_geom_t *g)
{
    const bool pad_ok = (g->pad_w == 0 && g->pad_h == 0) || (g->pad_w == 1 && g->pad_h == 1);
    return target == ESPNN_TARGET_ESP32S3 && g->ch_mult == 1 && g->in_ch % 16 == 0 &&
           g->filter_w == 3 && g->filter_h == 3 && pad_ok && g->out_h > 1;
}

void espnn_depthwise_band_geom(const espnn_scratch_geom_t *g, int32_t rows,
                               espnn_scratch_geom_t *band)
{
    *band = *g;
    band->in_w = g->out_w * g->stride_w + g->filter_w - 1;
    band->in_h = rows * g->stride_h + g->filter_h - 1;
    band->out_h = rows;
    band->pad_w = 0;
    band->pad_h = 0;
}

uint32_t espnn_depthwise_band_scratch(int32_t target, const espnn_scratch_geom_t *g,
                                      int32_t rows)
{
    espnn_scratch_geom_t b;
    espnn_depthwise_band_geom(g, rows, &b);
    const int64_t copy = a16((int64_t)b.in_w * b.in_h * b.in_ch);
    return to_u32(copy + espnn_depthwise_scratch_touched(target, &b));
}

int32_t espnn_depthwise_band_rows(int32_t target, const espnn_scratch_geom_t *g,
                                  uint32_t scratch)
{
    if (!espnn_depthwise_bandable(target, g)) {
        return 0;
    }
    for (int32_t rows = g->out_h - 1; rows > 0; rows--) {
        if (espnn_depthwise_band_scratch(target, g, rows) <= scratch) {
            return rows;
        }
    }
    return 0;
}
