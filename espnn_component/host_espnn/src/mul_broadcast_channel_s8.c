/* Host ESP-NN kernel: [spatial][C] * [C] multiplication (squeeze-and-excite gating). */
#include "esp_nn.h"
#include "hn_common.h"

void esp_nn_mul_broadcast_channel_s8(const int8_t *input1, const int8_t *input2_per_ch,
                                     const int32_t input1_offset,
                                     const int32_t input2_offset, int8_t *output,
                                     const int32_t output_offset, const int32_t output_mult,
                                     const int32_t output_shift,
                                     const int32_t activation_min,
                                     const int32_t activation_max,
                                     const int32_t total_spatial, const int32_t channels)
{
    for (int32_t s = 0; s < total_spatial; s++) {
        const int8_t *a = input1 + (int64_t)s * channels;
        int8_t *o = output + (int64_t)s * channels;
        for (int32_t c = 0; c < channels; c++) {
            int32_t prod = (a[c] + input1_offset) * (input2_per_ch[c] + input2_offset);
            o[c] = hn_out(hn_requant(prod, output_mult, output_shift), output_offset,
                          activation_min, activation_max);
        }
    }
}
