/*
 * Host implementation of the ESP-NN 1.2.x API: parameter structs.
 *
 * Same type and field names as ESP-NN's public esp_nn_defs.h, so the engine compiles
 * unchanged against either this directory or a real ESP-NN source tree.  Written for
 * executorch-espnn; see espnn_component/host_espnn/README.md.
 */
#ifndef ESPNN_HOST_ESP_NN_DEFS_H
#define ESPNN_HOST_ESP_NN_DEFS_H

#include <stdint.h>

/* Shape of an NHWC activation or filter (no batch: `extra` is free for the caller). */
typedef struct data_dims {
    int32_t width;
    int32_t height;
    int32_t channels;
    int32_t extra;
} data_dims_t;

typedef struct data_2d {
    int32_t width;
    int32_t height;
} data_2d_t;

/* Output clamp, applied after the output offset. */
typedef struct act_params {
    int32_t min;
    int32_t max;
} act_params_t;

/* Per output channel requantisation; both arrays have one entry per output channel. */
typedef struct quant_data {
    int32_t *shift;
    int32_t *mult;
} quant_data_t;

typedef struct conv_params {
    int32_t in_offset;
    int32_t out_offset;
    data_2d_t stride;
    data_2d_t padding;  /* left (width) and top (height) only */
    data_2d_t dilation; /* not read by the kernels: callers handle dilation themselves */
    act_params_t activation;
} conv_params_t;

typedef struct dw_conv_params {
    int32_t in_offset;
    int32_t out_offset;
    int32_t ch_mult; /* out_ch = in_ch * ch_mult */
    data_2d_t stride;
    data_2d_t padding;
    data_2d_t dilation; /* not read */
    act_params_t activation;
} dw_conv_params_t;

#endif /* ESPNN_HOST_ESP_NN_DEFS_H */
