/*
 * Host implementation of the ESP-NN 1.2.x kernel API (the subset executorch-espnn calls).
 *
 * Function names, argument order and arithmetic are those of ESP-NN's public API (its ANSI
 * reference kernels), so host builds of the engine produce the bytes a device produces.
 * Written for this project; a build with ESPNN_ESP_NN_DIR set compiles the real ESP-NN
 * sources instead of these, and tests/test_engine.py checks the two agree bit for bit.
 *
 * Conventions (as in ESP-NN): activations int8 NHWC without a batch dimension,
 * in_offset = -input zero point, out_offset = +output zero point added after
 * requantisation, then clamp to [activation min, max].  Requantisation is TFLite's
 * saturating rounding doubling high multiply followed by a rounding right shift.
 */
#ifndef ESPNN_HOST_ESP_NN_H
#define ESPNN_HOST_ESP_NN_H

#include <stdint.h>

#include "esp_nn_defs.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- basic math ---------------------------------------------------------------------- */

/* out = clamp(RDBP(SRDHM(RDBP(SRDHM((a+a_off)<<ls, a_mult), -a_shift) + (same for b),
 *                        out_mult), -out_shift) + out_offset); every shift <= 0. */
void esp_nn_add_elementwise_s8(const int8_t *input1_data, const int8_t *input2_data,
                               const int32_t input1_offset, const int32_t input2_offset,
                               const int32_t input1_mult, const int32_t input2_mult,
                               const int32_t input1_shift, const int32_t input2_shift,
                               const int32_t left_shift, int8_t *output,
                               const int32_t out_offset, const int32_t out_mult,
                               const int32_t out_shift, const int32_t activation_min,
                               const int32_t activation_max, const int32_t size);

/* out = clamp(requant((a+a_off)*(b+b_off), out_mult, out_shift) + out_offset) */
void esp_nn_mul_elementwise_s8(const int8_t *input1_data, const int8_t *input2_data,
                               const int32_t input1_offset, const int32_t input2_offset,
                               int8_t *output, const int32_t out_offset,
                               const int32_t out_mult, const int32_t out_shift,
                               const int32_t activation_min, const int32_t activation_max,
                               const int32_t size);

/* As esp_nn_mul_elementwise_s8 for input1 [total_spatial][channels] times a per-channel
 * input2 [channels] (the squeeze-and-excite pattern). */
void esp_nn_mul_broadcast_channel_s8(const int8_t *input1, const int8_t *input2_per_ch,
                                     const int32_t input1_offset,
                                     const int32_t input2_offset, int8_t *output,
                                     const int32_t output_offset, const int32_t output_mult,
                                     const int32_t output_shift,
                                     const int32_t activation_min,
                                     const int32_t activation_max,
                                     const int32_t total_spatial, const int32_t channels);

/* ---- convolution ---------------------------------------------------------------------- */

/* filter [out_ch][fh][fw][filter_dims->channels]; filter_dims->channels < input channels
 * means grouped convolution (0 means "equal to the input channels").  Dilation ignored. */
void esp_nn_conv_s8(const data_dims_t *input_dims, const int8_t *input_data,
                    const data_dims_t *filter_dims, const int8_t *filter_data,
                    const int32_t *bias, const data_dims_t *output_dims, int8_t *out_data,
                    const conv_params_t *conv_params, const quant_data_t *quant_data);

int esp_nn_get_conv_scratch_size(const data_dims_t *input_dims, const data_dims_t *filter_dims,
                                 const data_dims_t *output_dims,
                                 const conv_params_t *conv_params);
void esp_nn_set_conv_scratch_buf(const void *buf);

/* filter [fh][fw][channels * ch_mult]; output channel c*ch_mult + m reads input channel c. */
void esp_nn_depthwise_conv_s8(const data_dims_t *input_dims, const int8_t *input_data,
                              const data_dims_t *filter_dims, const int8_t *filter_data,
                              const int32_t *bias, const data_dims_t *output_dims,
                              int8_t *out_data, const dw_conv_params_t *conv_params,
                              const quant_data_t *quant_data);

int esp_nn_get_depthwise_conv_scratch_size(const data_dims_t *input_dims,
                                           const data_dims_t *filter_dims,
                                           const data_dims_t *output_dims,
                                           const dw_conv_params_t *conv_params);
void esp_nn_set_depthwise_conv_scratch_buf(const void *buf);

/* ---- pooling (no requantisation: input and output share scale and zero point) --------- */

void esp_nn_max_pool_s8(const int8_t *input, const uint16_t input_wd, const uint16_t input_ht,
                        int8_t *output, const uint16_t output_wd, const uint16_t output_ht,
                        const uint16_t stride_wd, const uint16_t stride_ht,
                        const uint16_t filter_wd, const uint16_t filter_ht,
                        const uint16_t pad_wd, const uint16_t pad_ht,
                        const int32_t activation_min, const int32_t activation_max,
                        const uint16_t channels);

/* Divides by the number of window taps inside the input, rounding half away from zero. */
void esp_nn_avg_pool_s8(const int8_t *input, const uint16_t input_wd, const uint16_t input_ht,
                        int8_t *output, const uint16_t output_wd, const uint16_t output_ht,
                        const uint16_t stride_wd, const uint16_t stride_ht,
                        const uint16_t filter_wd, const uint16_t filter_ht,
                        const uint16_t pad_wd, const uint16_t pad_ht,
                        const int32_t activation_min, const int32_t activation_max,
                        const uint16_t channels);

/* ---- fully connected (note: shift before mult) ---------------------------------------- */

void esp_nn_fully_connected_s8(const int8_t *input_data, const int32_t input_offset,
                               const uint16_t row_len, const int8_t *filter_data,
                               const int32_t filter_offset, const int32_t *bias,
                               int8_t *out_data, const uint16_t out_channels,
                               const int32_t out_offset, const int32_t out_shift,
                               const int32_t out_mult, const int32_t activation_min,
                               const int32_t activation_max);

void esp_nn_fully_connected_per_ch_s8(const int8_t *input_data, const int32_t input_offset,
                                      const uint16_t row_len, const int8_t *filter_data,
                                      const int32_t filter_offset, const int32_t *bias,
                                      int8_t *out_data, const uint16_t out_channels,
                                      const int32_t out_offset, const int32_t *out_shift,
                                      const int32_t *out_mult, const int32_t activation_min,
                                      const int32_t activation_max);

/* ---- softmax (output scale 1/256, zero point -128) ------------------------------------ */

int32_t esp_nn_get_softmax_scratch_size(const int32_t width, const int32_t height);
void esp_nn_set_softmax_scratch_buf(void *buffer);
void esp_nn_softmax_s8(const int8_t *input_data, const int32_t height, const int32_t width,
                       const int32_t mult, const int32_t shift, const int32_t diff_min,
                       int8_t *output_data);

#ifdef ESPNN_HOST_S3_CONTRACTS
/* Test builds only (tests/test_s3_contracts.py, with ESPNN_S3_KERNELS=1): stand-ins for the
 * names ESP-NN's ESP32-S3 build has for its S3 and ANSI kernels.  Both compute with the host
 * kernels above; the _esp32s3 ones abort on any operand outside the S3 kernel's contract
 * (engine/src/espnn_s3_kernels.h), so a run proves the engine never hands one over. */
#define HN_POOL_PARAMS \
    const int8_t *input, const uint16_t input_wd, const uint16_t input_ht, int8_t *output, \
        const uint16_t output_wd, const uint16_t output_ht, const uint16_t stride_wd, \
        const uint16_t stride_ht, const uint16_t filter_wd, const uint16_t filter_ht, \
        const uint16_t pad_wd, const uint16_t pad_ht, const int32_t activation_min, \
        const int32_t activation_max, const uint16_t channels
#define HN_S3_AND_ANSI(name, params) \
    void name##_esp32s3 params; \
    void name##_ansi params;
HN_S3_AND_ANSI(esp_nn_mul_elementwise_s8,
               (const int8_t *input1_data, const int8_t *input2_data,
                const int32_t input1_offset, const int32_t input2_offset, int8_t *output,
                const int32_t out_offset, const int32_t out_mult, const int32_t out_shift,
                const int32_t activation_min, const int32_t activation_max, const int32_t size))
HN_S3_AND_ANSI(esp_nn_conv_s8,
               (const data_dims_t *input_dims, const int8_t *input_data,
                const data_dims_t *filter_dims, const int8_t *filter_data, const int32_t *bias,
                const data_dims_t *output_dims, int8_t *out_data,
                const conv_params_t *conv_params, const quant_data_t *quant_data))
HN_S3_AND_ANSI(esp_nn_depthwise_conv_s8,
               (const data_dims_t *input_dims, const int8_t *input_data,
                const data_dims_t *filter_dims, const int8_t *filter_data, const int32_t *bias,
                const data_dims_t *output_dims, int8_t *out_data,
                const dw_conv_params_t *conv_params, const quant_data_t *quant_data))
HN_S3_AND_ANSI(esp_nn_max_pool_s8, (HN_POOL_PARAMS))
HN_S3_AND_ANSI(esp_nn_avg_pool_s8, (HN_POOL_PARAMS))
HN_S3_AND_ANSI(esp_nn_fully_connected_s8,
               (const int8_t *input_data, const int32_t input_offset, const uint16_t row_len,
                const int8_t *filter_data, const int32_t filter_offset, const int32_t *bias,
                int8_t *out_data, const uint16_t out_channels, const int32_t out_offset,
                const int32_t out_shift, const int32_t out_mult, const int32_t activation_min,
                const int32_t activation_max))
HN_S3_AND_ANSI(esp_nn_fully_connected_per_ch_s8,
               (const int8_t *input_data, const int32_t input_offset, const uint16_t row_len,
                const int8_t *filter_data, const int32_t filter_offset, const int32_t *bias,
                int8_t *out_data, const uint16_t out_channels, const int32_t out_offset,
                const int32_t *out_shift, const int32_t *out_mult,
                const int32_t activation_min, const int32_t activation_max))
#undef HN_S3_AND_ANSI
#undef HN_POOL_PARAMS
/* the scratch buffers last set, for the S3 stand-ins' NULL-scratch contract */
const void *hn_conv_scratch_buf(void);
const void *hn_depthwise_conv_scratch_buf(void);
#endif

#ifdef __cplusplus
}
#endif

#endif /* ESPNN_HOST_ESP_NN_H */
