/* Host ESP-NN kernel: int8 fully connected layer with one multiplier for all outputs. */
#include <stddef.h>

#include "esp_nn.h"
#include "hn_common.h"

void esp_nn_fully_connected_s8(const int8_t *input_data, const int32_t input_offset,
                               const uint16_t row_len, const int8_t *filter_data,
                               const int32_t filter_offset, const int32_t *bias,
                               int8_t *out_data, const uint16_t out_channels,
                               const int32_t out_offset, const int32_t out_shift,
                               const int32_t out_mult, const int32_t activation_min,
                               const int32_t activation_max)
{
    for (int32_t o = 0; o < out_channels; o++) {
        const int8_t *w = filter_data + (size_t)o * row_len;
        int32_t acc = 0;
        for (int32_t k = 0; k < row_len; k++) {
            acc += (w[k] + filter_offset) * (input_data[k] + input_offset);
        }
        if (bias != NULL) {
            acc += bias[o];
        }
        out_data[o] = hn_out(hn_requant(acc, out_mult, out_shift), out_offset, activation_min,
                             activation_max);
    }
}
