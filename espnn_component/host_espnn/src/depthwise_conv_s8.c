/* Host ESP-NN kernel: int8 depthwise 2-D convolution with a channel multiplier. */
#include <stddef.h>

#include "esp_nn.h"
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
    (void)dw_scratch;
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
