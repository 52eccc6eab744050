/*
 * MUL.  Same shapes: esp_nn_mul_elementwise_s8.  A per-channel operand ([.., C] times
 * [1, .., 1, C], the squeeze-and-excite gate): esp_nn_mul_broadcast_channel_s8, operands
 * swapped if needed (the product commutes).  Other broadcasts: the elementwise kernel on each
 * shared contiguous run, or the engine's own loop for short runs.
 *
 * ESP-NN 1.2.x's ESP32-S3 assembly for the broadcast-channel kernel rounds with a constant
 * nudge (not TFLite's), so on S3 optimised builds the per-channel case uses the elementwise
 * kernel per run instead, keeping results bit-exact with the reference.
 */
#include "espnn_s3_kernels.h"
#include "espnn_broadcast.h"
#include "espnn_fixedpoint.h"

#ifndef ESPNN_USE_MUL_BROADCAST_CHANNEL
#if defined(CONFIG_IDF_TARGET_ESP32S3) && defined(CONFIG_NN_OPTIMIZED)
#define ESPNN_USE_MUL_BROADCAST_CHANNEL 0
#else
#define ESPNN_USE_MUL_BROADCAST_CHANNEL 1
#endif
#endif

enum {
    MUL_KERNEL_ELEMENTWISE = 1,
    MUL_KERNEL_CHANNEL_B = 2, /* b per channel */
    MUL_KERNEL_CHANNEL_A = 3, /* a per channel: swap */
    MUL_KERNEL_RUNS = 4,
    MUL_KERNEL_OWN = 5
};
#define MIN_KERNEL_RUN 4u

typedef struct mul_state {
    int32_t p[ESPNN_PARAMS_MUL];
    uint32_t channels; /* per-channel kernels */
    espnn_bcast_t plan;
} mul_state_t;
ESPNN_FAMILY_STATE(mul_state_t, ESPNN_STATE_BYTES_MUL);

static espnn_status_t prepare(espnn_prep_t *p)
{
    mul_state_t *s = (mul_state_t *)p->data;
    espnn_bcast_shape_t shape;
    espnn_status_t st = espnn_prep_broadcast(p, &s->plan, &shape);
    if (st == ESPNN_OK) {
        st = espnn_prep_in_offset(p, ESPNN_P_MUL_A_OFFSET);
    }
    if (st == ESPNN_OK) {
        st = espnn_prep_in_offset(p, ESPNN_P_MUL_B_OFFSET);
    }
    if (st == ESPNN_OK) {
        st = espnn_prep_out_offset(p, ESPNN_P_MUL_OUT_OFFSET);
    }
    if (st == ESPNN_OK) {
        st = espnn_prep_param(p, ESPNN_P_MUL_OUT_MULT, 0, INT32_MAX, NULL);
    }
    if (st == ESPNN_OK) {
        st = espnn_prep_param(p, ESPNN_P_MUL_OUT_SHIFT, ESPNN_SHIFT_MIN, ESPNN_SHIFT_MAX, NULL);
    }
    if (st == ESPNN_OK) {
        st = espnn_prep_act(p, ESPNN_P_MUL_ACT_MIN, ESPNN_P_MUL_ACT_MAX);
    }
    if (st != ESPNN_OK) {
        return st;
    }
    for (int i = 0; i < ESPNN_PARAMS_MUL; i++) {
        s->p[i] = p->params[i];
    }
    espnn_tview_t o;
    espnn_prep_tensor(p, p->n_inputs, &o);
    s->channels = o.rank > 0 ? o.dims[o.rank - 1] : 1u;
    if (shape == ESPNN_BCAST_SAME) {
        p->kernel = MUL_KERNEL_ELEMENTWISE;
    } else if (ESPNN_USE_MUL_BROADCAST_CHANNEL && shape == ESPNN_BCAST_B_PER_CH) {
        p->kernel = MUL_KERNEL_CHANNEL_B;
    } else if (ESPNN_USE_MUL_BROADCAST_CHANNEL && shape == ESPNN_BCAST_A_PER_CH) {
        p->kernel = MUL_KERNEL_CHANNEL_A;
    } else {
        p->kernel = s->plan.run >= MIN_KERNEL_RUN ? MUL_KERNEL_RUNS : MUL_KERNEL_OWN;
    }
    return ESPNN_OK;
}

static void run_kernel(const espnn_exec_t *x, uint32_t a, uint32_t b, uint32_t o, uint32_t n)
{
    const int32_t *p = ((const mul_state_t *)x->data)->p;
    espnn_mul_s8((const int8_t *)x->in[0] + a, (const int8_t *)x->in[1] + b,
                 p[ESPNN_P_MUL_A_OFFSET], p[ESPNN_P_MUL_B_OFFSET], (int8_t *)x->out + o,
                 p[ESPNN_P_MUL_OUT_OFFSET], p[ESPNN_P_MUL_OUT_MULT], p[ESPNN_P_MUL_OUT_SHIFT],
                 p[ESPNN_P_MUL_ACT_MIN], p[ESPNN_P_MUL_ACT_MAX], (int32_t)n);
}

static void run_own(const espnn_exec_t *x, uint32_t a, uint32_t b, uint32_t o, uint32_t n)
{
    const int32_t *p = ((const mul_state_t *)x->data)->p;
    const int8_t *pa = (const int8_t *)x->in[0];
    const int8_t *pb = (const int8_t *)x->in[1];
    int8_t *out = (int8_t *)x->out;
    for (uint32_t i = 0; i < n; i++) {
        const int32_t prod =
            (pa[a + i] + p[ESPNN_P_MUL_A_OFFSET]) * (pb[b + i] + p[ESPNN_P_MUL_B_OFFSET]);
        const int32_t v = espnn_requant(prod, p[ESPNN_P_MUL_OUT_MULT], p[ESPNN_P_MUL_OUT_SHIFT]) +
                          p[ESPNN_P_MUL_OUT_OFFSET];
        out[o + i] = (int8_t)espnn_clamp(v, p[ESPNN_P_MUL_ACT_MIN], p[ESPNN_P_MUL_ACT_MAX]);
    }
}

static void eval(const espnn_exec_t *x)
{
    const mul_state_t *s = (const mul_state_t *)x->data;
    const uint32_t n = x->tensors[x->op->output].nbytes;
    switch (x->op->kernel) {
    case MUL_KERNEL_ELEMENTWISE:
        run_kernel(x, 0, 0, 0, n);
        break;
#if ESPNN_USE_MUL_BROADCAST_CHANNEL
    case MUL_KERNEL_CHANNEL_B:
    case MUL_KERNEL_CHANNEL_A: {
        const int32_t *p = s->p;
        const bool swap = x->op->kernel == MUL_KERNEL_CHANNEL_A;
        esp_nn_mul_broadcast_channel_s8(
            (const int8_t *)x->in[swap ? 1 : 0], (const int8_t *)x->in[swap ? 0 : 1],
            p[swap ? ESPNN_P_MUL_B_OFFSET : ESPNN_P_MUL_A_OFFSET],
            p[swap ? ESPNN_P_MUL_A_OFFSET : ESPNN_P_MUL_B_OFFSET], (int8_t *)x->out,
            p[ESPNN_P_MUL_OUT_OFFSET], p[ESPNN_P_MUL_OUT_MULT], p[ESPNN_P_MUL_OUT_SHIFT],
            p[ESPNN_P_MUL_ACT_MIN], p[ESPNN_P_MUL_ACT_MAX], (int32_t)(n / s->channels),
            (int32_t)s->channels);
        break;
    }
#endif
    case MUL_KERNEL_RUNS:
        espnn_bcast_for_each(x, &s->plan, run_kernel);
        break;
    default:
        espnn_bcast_for_each(x, &s->plan, run_own);
        break;
    }
}

const espnn_op_family_t espnn_family_mul = {prepare, eval, ESPNN_STATE_BYTES_MUL};
