/* Host ESP-NN kernel: int8 average pooling; the divisor counts only taps inside the input. */
#include <stddef.h>

#include "esp_nn.h"
#include "hn_common.h"

void esp_nn_avg_pool_s8(const int8_t *input, const uint16_t input_wd, const uint16_t input_ht,
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
            const int32_t cnt =
                ky_hi > ky_lo && kx_hi > kx_lo ? (ky_hi - ky_lo) * (kx_hi - kx_lo) : 0;
            for (int32_t c = 0; c < channels; c++) {
                int32_t sum = 0;
                for (int32_t ky = ky_lo; ky < ky_hi; ky++) {
                    for (int32_t kx = kx_lo; kx < kx_hi; kx++) {
                        sum += input[((size_t)(y0 + ky) * input_wd + (size_t)(x0 + kx)) * channels + c];
                    }
                }
                /* rounded to nearest, ties away from zero; a window with no tap inside the
                 * input (never produced by valid parameters) yields 0 instead of dividing */
                int32_t avg = 0;
                if (cnt > 0) {
                    avg = sum > 0 ? (sum + cnt / 2) / cnt : (sum - cnt / 2) / cnt;
                }
                *out++ = (int8_t)hn_clamp(avg, activation_min, activation_max);
            }
        }
    }
}
