/* Host ESP-NN kernel: int8 max pooling over the taps inside the input. */
#include <stddef.h>

#include "esp_nn.h"
#include "hn_common.h"

void esp_nn_max_pool_s8(const int8_t *input, const uint16_t input_wd, const uint16_t input_ht,
                        int8_t *output, const uint16_t output_wd, const uint16_t output_ht,
                        const uint16_t stride_wd, const uint16_t stride_ht,
                        const uint16_t filter_wd, const uint16_t filter_ht,
                        const uint16_t pad_wd, const uint16_t pad_ht,
                        const int32_t activation_min, const int32_t activation_max,
                        const uint16_t channels)
{
    int8_t *out = output;
    for (int32_t oy = 0; oy < output_ht; oy++) {
        const int32_t y0 = oy * stride_ht - pad_ht;
        const int32_t ky_lo = y0 < 0 ? -y0 : 0;
        const int32_t ky_hi = input_ht - y0 < filter_ht ? input_ht - y0 : filter_ht;
        for (int32_t ox = 0; ox < output_wd; ox++) {
            const int32_t x0 = ox * stride_wd - pad_wd;
            const int32_t kx_lo = x0 < 0 ? -x0 : 0;
            const int32_t kx_hi = input_wd - x0 < filter_wd ? input_wd - x0 : filter_wd;
            for (int32_t c = 0; c < channels; c++) {
                int32_t m = INT8_MIN;
                for (int32_t ky = ky_lo; ky < ky_hi; ky++) {
                    for (int32_t kx = kx_lo; kx < kx_hi; kx++) {
                        int32_t v = input[((size_t)(y0 + ky) * input_wd + (size_t)(x0 + kx)) * channels + c];
                        m = v > m ? v : m;
                    }
                }
                *out++ = (int8_t)hn_clamp(m, activation_min, activation_max);
            }
        }
    }
}
