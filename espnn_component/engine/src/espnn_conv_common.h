/* Geometry shared by CONV2D and DEPTHWISE_CONV2D (private). */
#ifndef ESPNN_CONV_COMMON_H
#define ESPNN_CONV_COMMON_H

#include "espnn_internal.h"

/* Parameter indices common to both convolution opcodes. */
enum {
    CONV_P_STRIDE_H = 0,
    CONV_P_STRIDE_W,
    CONV_P_PAD_TOP,
    CONV_P_PAD_LEFT,
    CONV_P_PAD_BOTTOM,
    CONV_P_PAD_RIGHT,
    CONV_P_DIL_H,
    CONV_P_DIL_W,
    CONV_P_GROUPS, /* ch_mult for depthwise */
    CONV_P_IN_OFFSET,
    CONV_P_OUT_OFFSET,
    CONV_P_ACT_MIN,
    CONV_P_ACT_MAX,
};

typedef struct espnn_conv_geom {
    uint16_t n, h, w, cin;
    uint16_t oh, ow, cout, kh;
    uint16_t kw, stride_h, stride_w, pad_top;
    uint16_t pad_left, pad_bottom, pad_right, dil_h;
    uint16_t dil_w, groups; /* groups, or ch_mult for depthwise */
    int32_t in_offset, out_offset, act_min, act_max;
} espnn_conv_geom_t;
ESPNN_STATIC_ASSERT(sizeof(espnn_conv_geom_t) == 52, "conv geometry");

/* validate.py's _check_conv: shapes, geometry, offsets, activation, filter/bias, mult/shift */
espnn_status_t espnn_prep_conv(espnn_prep_t *p, bool depthwise, espnn_conv_geom_t *g);

#endif /* ESPNN_CONV_COMMON_H */
