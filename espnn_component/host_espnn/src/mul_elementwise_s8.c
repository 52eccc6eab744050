/* Host ESP-NN kernel: int8 elementwise multiplication. */
#include "esp_nn.h"
#include "hn_common.h"

void esp_nn_mul_elementwise_s8(const int8_t *input1_data, const int8_t *input2_data,
                               const int32_t input1_offset, const int32_t input2_offset,
                               int8_t *output, const int32_t out_offset,
                               const int32_t out_mult, const int32_t out_shift,
                               const int32_t activation_min, const int32_t activation_max,
                               const int32_t size)
{
    for (int32_t i = 0; i < size; i++) {
        int32_t prod = (input1_data[i] + input1_offset) * (input2_data[i] + input2_offset);
        output[i] = hn_out(hn_requant(prod, out_mult, out_shift), out_offset, activation_min,
                           activation_max);
    }
}
