/*
 * ADD (TFLite/ESP-NN int8 addition, and subtraction: a negative input multiplier).  Same
 * shapes: one esp_nn_add_elementwise_s8 call.
 * Broadcasting: the kernel runs on every contiguous run both inputs share (e.g. per spatial
 * position for a per-channel operand); runs shorter than MIN_KERNEL_RUN use the engine's own
 * loop with the same arithmetic.
 */
#include "espnn_esp_nn.h"
#include "espnn_broadcast.h"
#include "espnn_fixedpoint.h"

enum { ADD_KERNEL_ELEMENTWISE = 1, ADD_KERNEL_RUNS = 2, ADD_KERNEL_OWN = 3 };
#define MIN_KERNEL_RUN 4u

typedef struct add_state {
    int32_t p[ESPNN_PARAMS_ADD];
    espnn_bcast_t plan;
} add_state_t;
ESPNN_FAMILY_STATE(add_state_t, ESPNN_STATE_BYTES_ADD);

static espnn_status_t prepare(espnn_prep_t *p)
{
    add_state_t *s = (add_state_t *)p->data;
    espnn_bcast_shape_t shape;
    espnn_status_t st = espnn_prep_broadcast(p, &s->plan, &shape);
    const uint32_t offsets[3] = {ESPNN_P_ADD_A_OFFSET, ESPNN_P_ADD_B_OFFSET,
                                 ESPNN_P_ADD_OUT_OFFSET};
    const uint32_t mults[3] = {ESPNN_P_ADD_A_MULT, ESPNN_P_ADD_B_MULT, ESPNN_P_ADD_OUT_MULT};
    const uint32_t shifts[3] = {ESPNN_P_ADD_A_SHIFT, ESPNN_P_ADD_B_SHIFT, ESPNN_P_ADD_OUT_SHIFT};
    for (int i = 0; st == ESPNN_OK && i < 3; i++) {
        st = i < 2 ? espnn_prep_in_offset(p, offsets[i]) : espnn_prep_out_offset(p, offsets[i]);
    }
    /* a negative input multiplier subtracts that operand (format 2.1); -INT32_MAX keeps
     * INT32_MIN, the one operand SRDHM saturates on, out of every product */
    for (int i = 0; st == ESPNN_OK && i < 3; i++) {
        st = espnn_prep_param(p, mults[i], i < 2 ? -INT32_MAX : 0, INT32_MAX, NULL);
    }
    for (int i = 0; st == ESPNN_OK && i < 3; i++) {
        st = espnn_prep_param(p, shifts[i], ESPNN_SHIFT_MIN, ESPNN_SHIFT_MAX, NULL);
    }
    if (st == ESPNN_OK) {
        st = espnn_prep_param(p, ESPNN_P_ADD_LEFT_SHIFT, 0, ESPNN_ADD_LEFT_SHIFT_MAX, NULL);
    }
    if (st == ESPNN_OK) {
        st = espnn_prep_act(p, ESPNN_P_ADD_ACT_MIN, ESPNN_P_ADD_ACT_MAX);
    }
    if (st != ESPNN_OK) {
        return st;
    }
    for (int i = 0; i < ESPNN_PARAMS_ADD; i++) {
        s->p[i] = p->params[i];
    }
    p->kernel = shape == ESPNN_BCAST_SAME
                    ? ADD_KERNEL_ELEMENTWISE
                    : (s->plan.run >= MIN_KERNEL_RUN ? ADD_KERNEL_RUNS : ADD_KERNEL_OWN);
    return ESPNN_OK;
}

static void run_kernel(const espnn_exec_t *x, uint32_t a, uint32_t b, uint32_t o, uint32_t n)
{
    const int32_t *p = ((const add_state_t *)x->data)->p;
    esp_nn_add_elementwise_s8((const int8_t *)x->in[0] + a, (const int8_t *)x->in[1] + b,
                              p[ESPNN_P_ADD_A_OFFSET], p[ESPNN_P_ADD_B_OFFSET],
                              p[ESPNN_P_ADD_A_MULT], p[ESPNN_P_ADD_B_MULT], p[ESPNN_P_ADD_A_SHIFT],
                              p[ESPNN_P_ADD_B_SHIFT], p[ESPNN_P_ADD_LEFT_SHIFT],
                              (int8_t *)x->out + o, p[ESPNN_P_ADD_OUT_OFFSET],
                              p[ESPNN_P_ADD_OUT_MULT], p[ESPNN_P_ADD_OUT_SHIFT],
                              p[ESPNN_P_ADD_ACT_MIN], p[ESPNN_P_ADD_ACT_MAX], (int32_t)n);
}

/* the format's ADD formula; |(q + offset) << 20| < 2^28, so nothing overflows */
static int8_t add_one(const int32_t *p, int32_t qa, int32_t qb)
{
    const int32_t scale = (int32_t)((uint32_t)1 << p[ESPNN_P_ADD_LEFT_SHIFT]);
    const int32_t va = espnn_requant((qa + p[ESPNN_P_ADD_A_OFFSET]) * scale, p[ESPNN_P_ADD_A_MULT],
                                     p[ESPNN_P_ADD_A_SHIFT]);
    const int32_t vb = espnn_requant((qb + p[ESPNN_P_ADD_B_OFFSET]) * scale, p[ESPNN_P_ADD_B_MULT],
                                     p[ESPNN_P_ADD_B_SHIFT]);
    const int32_t v = espnn_requant(va + vb, p[ESPNN_P_ADD_OUT_MULT], p[ESPNN_P_ADD_OUT_SHIFT]) +
                      p[ESPNN_P_ADD_OUT_OFFSET];
    return (int8_t)espnn_clamp(v, p[ESPNN_P_ADD_ACT_MIN], p[ESPNN_P_ADD_ACT_MAX]);
}

static void run_own(const espnn_exec_t *x, uint32_t a, uint32_t b, uint32_t o, uint32_t n)
{
    const add_state_t *s = (const add_state_t *)x->data;
    const int8_t *pa = (const int8_t *)x->in[0];
    const int8_t *pb = (const int8_t *)x->in[1];
    int8_t *out = (int8_t *)x->out;
    for (uint32_t i = 0; i < n; i++) {
        out[o + i] = add_one(s->p, pa[a + i], pb[b + i]);
    }
}

static void eval(const espnn_exec_t *x)
{
    const add_state_t *s = (const add_state_t *)x->data;
    switch (x->op->kernel) {
    case ADD_KERNEL_ELEMENTWISE:
        run_kernel(x, 0, 0, 0, x->tensors[x->op->output].nbytes);
        break;
    case ADD_KERNEL_RUNS:
        espnn_bcast_for_each(x, &s->plan, run_kernel);
        break;
    default:
        espnn_bcast_for_each(x, &s->plan, run_own);
        break;
    }
}

const espnn_op_family_t espnn_family_add = {prepare, eval, ESPNN_STATE_BYTES_ADD};
