/* Host ESP-NN kernel: int8 2-D convolution, per-output-channel requantisation. */
#include <stddef.h>

#include "esp_nn.h"
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

static int32_t imax(int32_t a, int32_t b)
{
    return a > b ? a : b;
}

static int32_t imin(int32_t a, int32_t b)
{
    return a < b ? a : b;
}

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
    (void)conv_scratch;
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
