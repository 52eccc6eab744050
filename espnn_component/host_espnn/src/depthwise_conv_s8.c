/* Host ESP-NN kernel: int8 depthwise 2-D convolution with a channel multiplier. */
#include <stddef.h>

#include "esp_nn.h"
#include "esp_nn_host_guard.h"
#include "hn_common.h"

static const void *dw_scratch;

int esp_nn_get_depthwise_conv_scratch_size(const data_dims_t *input_dims,
                                           const data_dims_t *filter_dims,
                                           const data_dims_t *output_dims,
                                           const dw_conv_params_t *conv_params)
{
    (void)input_dims;
    (void)filter_dims;
    (void)output_dims;
    (void)conv_params;
    return HN_TEST_SCRATCH_BYTES;
}

void esp_nn_set_depthwise_conv_scratch_buf(const void *buf)
{
    dw_scratch = buf;
}

#ifdef ESPNN_HOST_S3_CONTRACTS
const void *hn_depthwise_conv_scratch_buf(void)
{
    return dw_scratch;
}
#endif

#if defined(ESPNN_HOST_SCRATCH_GUARD) && HN_GUARD_S3
#include <string.h>

static void put(void *at, size_t n)
{
    memset(at, HN_GUARD_WRITE, n);
}

static uint8_t *up16(uint8_t *p)
{
    return (uint8_t *)(((uintptr_t)p + 15u) & ~(uintptr_t)15u);
}

/* Guard mode: the scratch writes of ESP-NN 1.2.3's esp_nn_depthwise_conv_s8_esp32s3
 * (src/convolution/esp_nn_depthwise_conv_s8_esp32s3.c), branch by branch of its dispatcher
 * and at the pointers it computes (mirrors the kernel's writes; not derived from scratch.py). */
static void s3_scratch_writes(int16_t *scratch_buffer, int32_t in_w, int32_t in_h, int32_t ch,
                              int32_t f_w, int32_t f_h, int32_t out_w, int32_t out_h,
                              int32_t m, int32_t pad_w, int32_t pad_h, int32_t stride_w,
                              int32_t stride_h)
{
    const int32_t filter_size = f_w * f_h * ch * m;
    const int32_t align_len = 16 - (filter_size & 15);
    const int32_t input_size = in_w * in_h * ch;
    int16_t *filter_data16 = scratch_buffer;
    int16_t *input_data16 = scratch_buffer + filter_size + align_len;
    if (scratch_buffer == NULL) {
        /* "scratch_buffer not set!": returns without computing, whichever branch follows */
        hn_guard_null("esp_nn_depthwise_conv_s8_esp32s3");
    }
    uint8_t *s8 = (uint8_t *)scratch_buffer;
    if (m == 1 && ch % 8 == 0) {
        if (f_w == 3 && f_h == 3) {
            if (ch % 16 == 0 && pad_w == 1 && pad_h == 1) {
                uint8_t *input_padded = s8 + filter_size + align_len;
                put(s8, (size_t)filter_size); /* memcpy(filter_aligned, ...) */
                const int32_t padded_wd = in_w + 2 * pad_w;
                const int32_t padded = padded_wd * (in_h + 2 * pad_h) * ch;
                /* full padding, or one tile of filter_ht padded rows reused per output row */
                put(input_padded, (size_t)(padded <= 40 * 1024 ? padded : padded_wd * f_h * ch));
            } else if (ch % 16 == 0 && pad_w == 0 && pad_h == 0) {
                uint8_t *input_padded = s8 + filter_size + align_len;
                const int32_t pad_right = (out_w * stride_w + f_w - 1) - in_w;
                const int32_t pad_bottom = (out_h * stride_h + f_h - 1) - in_h;
                if (pad_right != 0 || pad_bottom != 0) {
                    put(input_padded, (size_t)((in_w + pad_right) * (in_h + pad_bottom) * ch));
                }
                put(s8, (size_t)filter_size);
            } else if (ch >= 12) {
                const int32_t new_ch = (ch + 15) & ~15;
                uint8_t *filter_padded = s8;
                put(filter_padded, (size_t)(9 * new_ch));
                int32_t new_w = in_w + 2 * pad_w, new_h = in_h + 2 * pad_h;
                const int32_t pr = (out_w * stride_w + 3 - 1) - new_w;
                const int32_t pb = (out_h * stride_h + 3 - 1) - new_h;
                new_w += pr > 0 ? pr : 0;
                new_h += pb > 0 ? pb : 0;
                uint8_t *input_padded = filter_padded + 9 * new_ch + 16;
                const int32_t total = new_w * new_h * new_ch;
                put(input_padded, (size_t)total);
                put(input_padded + total, (size_t)(out_w * out_h * new_ch)); /* out_padded */
            } else {
                put(filter_data16, 2u * (size_t)filter_size);
                put(input_data16, 2u * (size_t)input_size);
            }
        } else {
            put(filter_data16, 2u * (size_t)filter_size);
            if (2 * (filter_size + input_size) <= 48 * 1024) {
                put(input_data16, 2u * (size_t)input_size);
            } else {
                put(input_data16, 2u * (size_t)(f_h * in_w * ch)); /* tile_buf: filter_ht rows */
            }
        }
    } else if (m == 1 && ch > 3) {
        const int32_t pc = (ch + 7) & ~7;
        uint8_t *pf = s8;
        uint8_t *pi = up16(pf + 2 * f_w * f_h * pc);
        uint8_t *po = up16(pi + 2 * in_w * in_h * pc);
        uint8_t *pbias = up16(po + out_w * out_h * pc);
        put(pbias, 3u * 4u * (size_t)pc); /* padded bias, shift, mult */
        put(pf, 2u * (size_t)(f_w * f_h * pc));
        put(pi, 2u * (size_t)(in_w * in_h * pc));
        put(po, (size_t)(out_w * out_h * pc)); /* the mult1 kernel's padded output */
    } else if (m % 8 == 0 || m % 4 == 0) {
        put(filter_data16, 2u * (size_t)filter_size);
        put(input_data16, 2u * (size_t)input_size);
    }
    /* else esp_nn_depthwise_conv_s8_opt: no scratch */
}
#endif

void esp_nn_depthwise_conv_s8(const data_dims_t *input_dims, const int8_t *input_data,
                              const data_dims_t *filter_dims, const int8_t *filter_data,
                              const int32_t *bias, const data_dims_t *output_dims,
                              int8_t *out_data, const dw_conv_params_t *conv_params,
                              const quant_data_t *quant_data)
{
    const int32_t in_w = (uint16_t)input_dims->width;
    const int32_t in_h = (uint16_t)input_dims->height;
    const int32_t ch = (uint16_t)input_dims->channels;
    const int32_t f_w = (uint16_t)filter_dims->width;
    const int32_t f_h = (uint16_t)filter_dims->height;
    const int32_t out_w = (uint16_t)output_dims->width;
    const int32_t out_h = (uint16_t)output_dims->height;
    const int32_t mult = (uint16_t)conv_params->ch_mult;
    const int32_t stride_w = (uint16_t)conv_params->stride.width;
    const int32_t stride_h = (uint16_t)conv_params->stride.height;
    const int32_t pad_w = (uint16_t)conv_params->padding.width;
    const int32_t pad_h = (uint16_t)conv_params->padding.height;
    const int32_t in_offset = conv_params->in_offset;
    const int32_t out_ch = ch * mult;
    int8_t *out = out_data;

    /* ESP-NN's reference kernel keeps window origins in int16 */
    HN_REQUIRE(conv_params->dilation.width <= 1 && conv_params->dilation.height <= 1 &&
               (out_h - 1) * stride_h <= 32767 && (out_w - 1) * stride_w <= 32767 &&
               pad_h <= 32767 && pad_w <= 32767);
#if defined(ESPNN_HOST_SCRATCH_GUARD) && HN_GUARD_S3
    s3_scratch_writes((int16_t *)(uintptr_t)dw_scratch, in_w, in_h, ch, f_w, f_h, out_w, out_h,
                      mult, pad_w, pad_h, stride_w, stride_h);
#else
    (void)dw_scratch;
#endif
    for (int32_t oy = 0; oy < out_h; oy++) {
        const int32_t y0 = oy * stride_h - pad_h;
        const int32_t ky_lo = y0 < 0 ? -y0 : 0;
        const int32_t ky_hi = in_h - y0 < f_h ? in_h - y0 : f_h;
        for (int32_t ox = 0; ox < out_w; ox++) {
            const int32_t x0 = ox * stride_w - pad_w;
            const int32_t kx_lo = x0 < 0 ? -x0 : 0;
            const int32_t kx_hi = in_w - x0 < f_w ? in_w - x0 : f_w;
            for (int32_t c = 0; c < ch; c++) {
                for (int32_t m = 0; m < mult; m++) {
                    const int32_t oc = c * mult + m;
                    int32_t acc = 0;
                    for (int32_t ky = ky_lo; ky < ky_hi; ky++) {
                        for (int32_t kx = kx_lo; kx < kx_hi; kx++) {
                            int32_t x = input_data[((size_t)(y0 + ky) * in_w + (size_t)(x0 + kx)) * ch + c];
                            int32_t w = filter_data[((size_t)ky * f_w + (size_t)kx) * out_ch + oc];
                            acc += (x + in_offset) * w;
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
}
