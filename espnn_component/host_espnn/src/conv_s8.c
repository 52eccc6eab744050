/* Host ESP-NN kernel: int8 2-D convolution, per-output-channel requantisation. */
#include <stddef.h>

#include "esp_nn.h"
#include "esp_nn_host_guard.h"
#include "hn_common.h"

/* ESP-NN keeps the scratch pointer in a module global; the reference kernels need none,
 * but the pointer is stored so callers exercise the same set-before-call protocol. */
static const void *conv_scratch;

int esp_nn_get_conv_scratch_size(const data_dims_t *input_dims, const data_dims_t *filter_dims,
                                 const data_dims_t *output_dims,
                                 const conv_params_t *conv_params)
{
    (void)input_dims;
    (void)filter_dims;
    (void)output_dims;
    (void)conv_params;
    return HN_TEST_SCRATCH_BYTES;
}

void esp_nn_set_conv_scratch_buf(const void *buf)
{
    conv_scratch = buf;
}

#ifdef ESPNN_HOST_S3_CONTRACTS
const void *hn_conv_scratch_buf(void)
{
    return conv_scratch;
}
#endif

static int32_t imax(int32_t a, int32_t b)
{
    return a > b ? a : b;
}

static int32_t imin(int32_t a, int32_t b)
{
    return a < b ? a : b;
}

#if defined(ESPNN_HOST_SCRATCH_GUARD) && HN_GUARD_S3
#include <string.h>

static uint8_t *align16(uint8_t *p)
{
    return (uint8_t *)(((uintptr_t)p + 15u) & ~(uintptr_t)15u);
}

/* Guard mode: the scratch writes of ESP-NN 1.2.3's esp_nn_conv_s8_esp32s3
 * (src/convolution/esp_nn_conv_esp32s3.c), pointer by pointer as the kernel computes them
 * (mirrors the kernel's writes; written from its source, not from scratch.py). */
static void s3_scratch_writes(uint8_t *scratch, int32_t in_w, int32_t in_h, int32_t ch,
                              int32_t f_w, int32_t f_h, int32_t out_w, int32_t out_h,
                              int32_t out_ch, int32_t pad_w, int32_t pad_h, int32_t stride_w,
                              int32_t stride_h, const int8_t *filter)
{
    if (f_w == 1 && f_h == 1 && pad_w == 0 && pad_h == 0 && stride_w == 1 && stride_h == 1) {
        for (int32_t pos = 0; pos + 7 < in_w * in_h; pos += 8) {
            if (scratch == NULL) {
                hn_guard_null("esp_nn_conv_s8_esp32s3 (1x1)"); /* no NULL check */
            }
            if (ch % 8 == 0) {
                /* esp_nn_conv_s8_mult8_1x1_esp32s3 (.S): per 8 positions, in_ch/8 transposed
                 * groups of 128 bytes stored by ee.vst.128.ip from the buffer (whose low 4
                 * address bits the store ignores) */
                uint8_t *b = (uint8_t *)((uintptr_t)scratch & ~(uintptr_t)15u);
                memset(b, HN_GUARD_WRITE, (size_t)(ch / 8) * 128u);
            } else {
                /* esp_nn_conv_s8_1x1 (esp_nn_conv_s8_1x1_esp32s3.c): tbuf = align16(scratch),
                 * transpose_8x8_s16_* of each whole 8-channel group */
                memset(align16(scratch), HN_GUARD_WRITE, (size_t)(ch / 8) * 128u);
            }
        }
        return;
    }
    if (scratch == NULL) {
        /* the kernel prints "scratch_buffer not set" and returns without computing */
        hn_guard_null("esp_nn_conv_s8_esp32s3");
    }
    int32_t row = f_w * ch;
    const int32_t window = f_w * f_h * ch;
    if (row < 16 && window >= 16) {
        /* esp_nn_conv_s8_im2col_s3 */
        const int32_t wa = (window + 15) & ~15;
        int32_t *filter_sum = (int32_t *)(void *)scratch;
        uint8_t *aligned_filter = align16(scratch + out_ch * 4);
        uint8_t *im2col = align16(aligned_filter + out_ch * wa);
        memset(filter_sum, HN_GUARD_WRITE, (size_t)out_ch * 4u);
        memset(aligned_filter, HN_GUARD_WRITE, (size_t)out_ch * (size_t)wa);
        memset(im2col, HN_GUARD_WRITE, (size_t)wa);
        return;
    }
    uint8_t *sd = scratch;
    const int32_t align_pad = 16 - (row & 15);
    if (align_pad != 16) {
        const int32_t new_row = row + align_pad; /* filter rows padded with zeros */
        memset(sd, HN_GUARD_WRITE, (size_t)new_row * (size_t)f_h * (size_t)out_ch);
        sd += (size_t)new_row * (size_t)f_h * (size_t)out_ch;
        row = new_row;
    } else if (((uintptr_t)filter & 15u) != 0) {
        memset(sd, HN_GUARD_WRITE, (size_t)window * (size_t)out_ch); /* filter copy */
        sd += (size_t)window * (size_t)out_ch;
    }
    const int32_t pad_r = imax(0, out_w * stride_w + f_w - 1 - in_w);
    const int32_t pad_b = imax(0, out_h * stride_h + f_h - 1 - in_h);
    size_t padded = 0;
    if (pad_w != 0 || pad_h != 0) {
        /* esp_nn_aligned_s8_pad_with_value: the memset of the whole padded map */
        padded = (size_t)(in_w + 2 * pad_w) * (size_t)(in_h + 2 * pad_h) * (size_t)ch;
    } else if (pad_r > 0 || pad_b > 0) {
        /* esp_nn_aligned_s8_pad_end_with_value: rows + right pad, then bottom rows */
        padded = (size_t)(in_w + pad_r) * (size_t)(in_h + pad_b) * (size_t)ch;
    }
    memset(sd, HN_GUARD_WRITE, padded);
    sd += padded;
    /* esp_nn_conv_s8_filter_aligned_input_padded_esp32s3 (.S): s32i of one correction per
     * output channel from the scratch pointer it is passed */
    memset(sd, HN_GUARD_WRITE, (size_t)out_ch * 4u);
}
#endif

#if defined(ESPNN_HOST_SCRATCH_GUARD) && HN_GUARD_P4
#include <string.h>

/* Guard mode: the scratch writes of ESP-NN 1.2.3's esp_nn_conv_s8_esp32p4
 * (src/convolution/esp_nn_conv_esp32p4.c), path by path of its dispatcher, at the pointers
 * the kernel computes (mirrors the kernel's writes; written from its source, not from
 * scratch.py). */
static void p4_scratch_writes(uint8_t *scratch, int32_t in_w, int32_t in_h, int32_t ch,
                              int32_t f_w, int32_t f_h, int32_t out_h, int32_t out_ch,
                              int32_t pad_w, int32_t pad_h, int32_t stride_w, int32_t stride_h)
{
    if (scratch == NULL) {
        hn_guard_null("esp_nn_conv_s8_esp32p4"); /* checked before any path */
    }
    const int32_t window = f_w * f_h * ch;
    const size_t sums = (size_t)out_ch * 4u; /* int32_t *filter_sum = scratch */
    if (f_w == 1 && f_h == 1 && pad_w == 0 && pad_h == 0 && stride_w == 1 && stride_h == 1) {
        memset(scratch, HN_GUARD_WRITE, sums); /* esp_nn_conv_s8_1x1 */
    } else if (pad_w == 0 && pad_h == 0 && f_w * ch >= 16) {
        memset(scratch, HN_GUARD_WRITE, sums); /* esp_nn_conv_s8_padded */
    } else if (window >= 16) {
        /* esp_nn_conv_s8_im2col: im2col_buf = scratch + out_ch * 4, one window per pixel */
        memset(scratch, HN_GUARD_WRITE, sums + (size_t)window);
    } else if (pad_w != 0 || pad_h != 0) {
        /* esp_nn_conv_s8_tiled */
        int32_t new_ch = ch, need_ch_pad = 0;
        if (f_w * ch < 16) {
            new_ch = ((16 + f_w - 1) / f_w + 15) & ~15;
            need_ch_pad = 1;
        }
        const int32_t padded_w = in_w + 2 * pad_w;
        memset(scratch, HN_GUARD_WRITE, sums);
        int32_t aligned_filter_size = 0;
        if (need_ch_pad) {
            aligned_filter_size = f_w * f_h * new_ch * out_ch;
            memset(scratch + sums, HN_GUARD_WRITE, (size_t)aligned_filter_size);
        }
        uint8_t *tile_buf = scratch + sums + aligned_filter_size;
        const int32_t row_bytes = padded_w * new_ch;
        int32_t tile_t = out_h;
        const int32_t used = (int32_t)sums + aligned_filter_size;
        if (padded_w * (in_h + 2 * pad_h) * new_ch + used > 32768) {
            const int32_t budget = 32768 - used;
            if (f_h * row_bytes <= budget) {
                tile_t = (budget - f_h * row_bytes) / (stride_h * row_bytes) + 1;
                tile_t = tile_t < 1 ? 1 : (tile_t > out_h ? out_h : tile_t);
            }
        }
        for (int32_t ty = 0; ty < out_h; ty += tile_t) {
            const int32_t t = tile_t < out_h - ty ? tile_t : out_h - ty;
            const int32_t rows = (t - 1) * stride_h + f_h; /* in_row_end - in_row_start + 1 */
            memset(tile_buf, HN_GUARD_WRITE, (size_t)rows * (size_t)row_bytes);
            /* the tile's esp_nn_conv_s8_padded call rewrites filter_sum in place */
            memset(scratch, HN_GUARD_WRITE, sums);
        }
    }
    /* else esp_nn_conv_s8_opt: no scratch */
}
#endif

void esp_nn_conv_s8(const data_dims_t *input_dims, const int8_t *input_data,
                    const data_dims_t *filter_dims, const int8_t *filter_data,
                    const int32_t *bias, const data_dims_t *output_dims, int8_t *out_data,
                    const conv_params_t *conv_params, const quant_data_t *quant_data)
{
    /* ESP-NN takes every size as uint16 */
    const int32_t in_w = (uint16_t)input_dims->width;
    const int32_t in_h = (uint16_t)input_dims->height;
    const int32_t in_ch = (uint16_t)input_dims->channels;
    const int32_t f_w = (uint16_t)filter_dims->width;
    const int32_t f_h = (uint16_t)filter_dims->height;
    const int32_t out_w = (uint16_t)output_dims->width;
    const int32_t out_h = (uint16_t)output_dims->height;
    const int32_t out_ch = (uint16_t)output_dims->channels;
    const int32_t stride_w = (uint16_t)conv_params->stride.width;
    const int32_t stride_h = (uint16_t)conv_params->stride.height;
    const int32_t pad_w = (uint16_t)conv_params->padding.width;
    const int32_t pad_h = (uint16_t)conv_params->padding.height;
    const int32_t in_offset = conv_params->in_offset;
    /* a filter narrower than the input is a grouped convolution */
    const int32_t f_ch = (uint16_t)filter_dims->channels ? (uint16_t)filter_dims->channels : in_ch;
    const int32_t groups = f_ch ? in_ch / f_ch : 1;
    const int32_t per_group = groups ? out_ch / groups : out_ch;
    int8_t *out = out_data;

    HN_REQUIRE(f_ch == in_ch && conv_params->dilation.width <= 1 &&
               conv_params->dilation.height <= 1);
#if defined(ESPNN_HOST_SCRATCH_GUARD) && HN_GUARD_S3
    s3_scratch_writes((uint8_t *)(uintptr_t)conv_scratch, in_w, in_h, in_ch, f_w, f_h, out_w,
                      out_h, out_ch, pad_w, pad_h, stride_w, stride_h, filter_data);
#elif defined(ESPNN_HOST_SCRATCH_GUARD) && HN_GUARD_P4
    (void)out_w;
    p4_scratch_writes((uint8_t *)(uintptr_t)conv_scratch, in_w, in_h, in_ch, f_w, f_h, out_h,
                      out_ch, pad_w, pad_h, stride_w, stride_h);
#else
    (void)conv_scratch;
#endif
    for (int32_t oy = 0; oy < out_h; oy++) {
        const int32_t y0 = oy * stride_h - pad_h;
        const int32_t ky_lo = imax(0, -y0);
        const int32_t ky_hi = imin(f_h, in_h - y0);
        for (int32_t ox = 0; ox < out_w; ox++) {
            const int32_t x0 = ox * stride_w - pad_w;
            const int32_t kx_lo = imax(0, -x0);
            const int32_t kx_hi = imin(f_w, in_w - x0);
            for (int32_t oc = 0; oc < out_ch; oc++) {
                const int32_t ic0 = (per_group ? oc / per_group : 0) * f_ch;
                const int8_t *w_oc = filter_data + (size_t)oc * f_h * f_w * f_ch;
                int32_t acc = 0;
                for (int32_t ky = ky_lo; ky < ky_hi; ky++) {
                    for (int32_t kx = kx_lo; kx < kx_hi; kx++) {
                        const int8_t *x =
                            input_data + ((size_t)(y0 + ky) * in_w + (size_t)(x0 + kx)) * in_ch + ic0;
                        const int8_t *w = w_oc + ((size_t)ky * f_w + (size_t)kx) * f_ch;
                        for (int32_t ic = 0; ic < f_ch; ic++) {
                            acc += (x[ic] + in_offset) * w[ic];
                        }
                    }
                }
                if (bias != NULL) {
                    acc += bias[oc];
                }
                acc = hn_requant(acc, quant_data->mult[oc], quant_data->shift[oc]);
                *out++ = hn_out(acc, conv_params->out_offset, conv_params->activation.min,
                                conv_params->activation.max);
            }
        }
    }
}
