/* Geometry shared by CONV2D and DEPTHWISE_CONV2D (private). */
#ifndef ESPNN_CONV_COMMON_H
#define ESPNN_CONV_COMMON_H

#include "espnn_internal.h"
#include "espnn_scratch_rules.h"

/* The convolution opcodes share their parameter layout (groups and ch_mult at one index):
 * the code common to both reads CONV2D's indices. */
ESPNN_STATIC_ASSERT(ESPNN_PARAMS_CONV2D == ESPNN_PARAMS_DEPTHWISE_CONV2D &&
                        ESPNN_P_CONV2D_STRIDE_H == ESPNN_P_DEPTHWISE_CONV2D_STRIDE_H &&
                        ESPNN_P_CONV2D_STRIDE_W == ESPNN_P_DEPTHWISE_CONV2D_STRIDE_W &&
                        ESPNN_P_CONV2D_PAD_TOP == ESPNN_P_DEPTHWISE_CONV2D_PAD_TOP &&
                        ESPNN_P_CONV2D_PAD_LEFT == ESPNN_P_DEPTHWISE_CONV2D_PAD_LEFT &&
                        ESPNN_P_CONV2D_PAD_BOTTOM == ESPNN_P_DEPTHWISE_CONV2D_PAD_BOTTOM &&
                        ESPNN_P_CONV2D_PAD_RIGHT == ESPNN_P_DEPTHWISE_CONV2D_PAD_RIGHT &&
                        ESPNN_P_CONV2D_DILATION_H == ESPNN_P_DEPTHWISE_CONV2D_DILATION_H &&
                        ESPNN_P_CONV2D_DILATION_W == ESPNN_P_DEPTHWISE_CONV2D_DILATION_W &&
                        ESPNN_P_CONV2D_GROUPS == ESPNN_P_DEPTHWISE_CONV2D_CH_MULT &&
                        ESPNN_P_CONV2D_IN_OFFSET == ESPNN_P_DEPTHWISE_CONV2D_IN_OFFSET &&
                        ESPNN_P_CONV2D_OUT_OFFSET == ESPNN_P_DEPTHWISE_CONV2D_OUT_OFFSET &&
                        ESPNN_P_CONV2D_ACT_MIN == ESPNN_P_DEPTHWISE_CONV2D_ACT_MIN &&
                        ESPNN_P_CONV2D_ACT_MAX == ESPNN_P_DEPTHWISE_CONV2D_ACT_MAX,
                    "convolution parameter layouts diverged (executorch_espnn/payload/format.py)");

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

/* The operands of a prepared CONV2D/DEPTHWISE_CONV2D as scratch_rules.c reads them; the
 * filter alignment is that of the filter constant where the engine will read it. */
void espnn_scratch_geom_of(const espnn_prep_t *p, const espnn_conv_geom_t *cg,
                           espnn_scratch_geom_t *g);
/* prepare's check: a payload's scratch_size below what this build's kernels touch
 * (ESPNN_BUILD_TARGET; none on the host, whose kernels need no scratch) is refused */
espnn_status_t espnn_prep_scratch(espnn_prep_t *p, uint32_t need);

#endif /* ESPNN_CONV_COMMON_H */
