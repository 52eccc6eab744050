/* Host ESP-NN kernel: int8 elementwise addition (TFLite int8 ADD arithmetic). */
#include "esp_nn.h"
#include "hn_common.h"

/* Rescale one input onto the common scale.  With TFLite's left_shift of 20 and int8
 * offsets nothing here can overflow; the wrap only keeps odd arguments well defined. */
static int32_t rescale_input(int32_t q, int32_t offset, int32_t left_shift, int32_t mult,
                             int32_t shift)
{
    int ls = left_shift < 0 ? 0 : (left_shift > 31 ? 31 : (int)left_shift);
    int32_t v = hn_wrap32((int64_t)(q + offset) * (int64_t)((uint32_t)1 << ls));
    return hn_rdbp_neg(hn_srdhm(v, mult), shift);
}

void esp_nn_add_elementwise_s8(const int8_t *input1_data, const int8_t *input2_data,
                               const int32_t input1_offset, const int32_t input2_offset,
                               const int32_t input1_mult, const int32_t input2_mult,
                               const int32_t input1_shift, const int32_t input2_shift,
                               const int32_t left_shift, int8_t *output,
                               const int32_t out_offset, const int32_t out_mult,
                               const int32_t out_shift, const int32_t activation_min,
                               const int32_t activation_max, const int32_t size)
{
    for (int32_t i = 0; i < size; i++) {
        int32_t a = rescale_input(input1_data[i], input1_offset, left_shift, input1_mult,
                                  input1_shift);
        int32_t b = rescale_input(input2_data[i], input2_offset, left_shift, input2_mult,
                                  input2_shift);
        int32_t sum = hn_rdbp_neg(hn_srdhm(hn_wrap32((int64_t)a + b), out_mult), out_shift);
        output[i] = hn_out(sum, out_offset, activation_min, activation_max);
    }
}
