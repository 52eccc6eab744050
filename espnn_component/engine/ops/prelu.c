/*
 * PRELU: TFLite's int8 PReLU with one slope, or one per element of the input's last
 * (physical) dim.  v = q + in_offset; out = requant(v, pos) for v >= 0, else
 * requant(v * (alpha + alpha_offset), neg[c]); then + out_offset, saturated to int8.  ESP-NN
 * has no PReLU kernel: this is the engine's own.
 *
 * Bounds: |v| <= 256 and |alpha + alpha_offset| <= 255, so |v * alpha| < 2^16 and either
 * value shifted left by at most ESPNN_PRELU_SHIFT_MAX (14) stays below 2^31.
 */
#include <stddef.h>

#include "espnn_fixedpoint.h"
#include "espnn_internal.h"

typedef struct prelu_state {
    uint32_t rows;  /* numel / k */
    uint32_t k;     /* slopes: 1, or the last dim */
    int32_t in_offset, alpha_offset, out_offset, pos_mult, pos_shift;
} prelu_state_t;
ESPNN_FAMILY_STATE(prelu_state_t, ESPNN_STATE_BYTES_PRELU);

/* slot 2 (neg_mult) or 3 (neg_shift): a constant int32 [k] */
static espnn_status_t prep_slope_array(espnn_prep_t *p, uint32_t slot, const char *name,
                                       uint32_t k, espnn_tview_t *t)
{
    espnn_status_t st = espnn_prep_const(p, slot, t, name);
    if (st == ESPNN_OK) {
        st = espnn_prep_dtype(p, t, ESPNN_DTYPE_INT32, name);
    }
    if (st == ESPNN_OK && (t->rank != 1 || t->dims[0] != k)) {
        st = espnn_prep_fail(p, name, t->dims[0], k);
    }
    return st;
}

static espnn_status_t prepare(espnn_prep_t *p)
{
    prelu_state_t *s = (prelu_state_t *)p->data;
    espnn_tview_t x, o, a, m, sh;
    espnn_prep_tensor(p, 0, &x);
    espnn_prep_tensor(p, 4, &o);
    espnn_status_t st = espnn_prep_dtype(p, &x, ESPNN_DTYPE_INT8, "input");
    if (st == ESPNN_OK) {
        st = espnn_prep_dtype(p, &o, ESPNN_DTYPE_INT8, "output");
    }
    if (st == ESPNN_OK && !espnn_dims_equal(&x, &o)) {
        st = espnn_prep_fail(p, "output", o.numel, x.numel);
    }
    if (st == ESPNN_OK) {
        st = espnn_prep_const(p, 1, &a, "alpha");
    }
    if (st == ESPNN_OK) {
        st = espnn_prep_dtype(p, &a, ESPNN_DTYPE_INT8, "alpha");
    }
    const uint32_t last = x.rank ? x.dims[x.rank - 1u] : 1u;
    if (st == ESPNN_OK && (a.rank != 1 || (a.dims[0] != 1 && a.dims[0] != last))) {
        st = espnn_prep_fail(p, "alpha", a.dims[0], last);
    }
    if (st != ESPNN_OK) {
        return st;
    }
    const uint32_t k = a.dims[0];
    st = prep_slope_array(p, 2, "neg_mult", k, &m);
    if (st == ESPNN_OK) {
        st = prep_slope_array(p, 3, "neg_shift", k, &sh);
    }
    for (uint32_t c = 0; st == ESPNN_OK && c < k; c++) {
        const int32_t v = espnn_const_i32(p, &m, c);
        if (v < 0) {
            st = espnn_prep_fail(p, "neg_mult", v, 0);
        }
    }
    for (uint32_t c = 0; st == ESPNN_OK && c < k; c++) {
        const int32_t v = espnn_const_i32(p, &sh, c);
        if (v < ESPNN_SHIFT_MIN || v > ESPNN_PRELU_SHIFT_MAX) {
            st = espnn_prep_fail(p, "neg_shift", v, v < 0 ? ESPNN_SHIFT_MIN : ESPNN_PRELU_SHIFT_MAX);
        }
    }
    if (st == ESPNN_OK) {
        st = espnn_prep_in_offset(p, ESPNN_P_PRELU_IN_OFFSET);
    }
    if (st == ESPNN_OK) {
        st = espnn_prep_in_offset(p, ESPNN_P_PRELU_ALPHA_OFFSET);
    }
    if (st == ESPNN_OK) {
        st = espnn_prep_out_offset(p, ESPNN_P_PRELU_OUT_OFFSET);
    }
    if (st == ESPNN_OK) {
        st = espnn_prep_param(p, ESPNN_P_PRELU_POS_MULT, 0, INT32_MAX, &s->pos_mult);
    }
    if (st == ESPNN_OK) {
        st = espnn_prep_param(p, ESPNN_P_PRELU_POS_SHIFT, ESPNN_SHIFT_MIN, ESPNN_PRELU_SHIFT_MAX,
                              &s->pos_shift);
    }
    if (st != ESPNN_OK) {
        return st;
    }
    s->k = k;
    s->rows = x.numel / k; /* k is 1 or the last dim, which divides numel */
    s->in_offset = p->params[ESPNN_P_PRELU_IN_OFFSET];
    s->alpha_offset = p->params[ESPNN_P_PRELU_ALPHA_OFFSET];
    s->out_offset = p->params[ESPNN_P_PRELU_OUT_OFFSET];
    return ESPNN_OK;
}

static void eval(const espnn_exec_t *x)
{
    const prelu_state_t *s = (const prelu_state_t *)x->data;
    const int8_t *in = (const int8_t *)x->in[0];
    const int8_t *alpha = (const int8_t *)x->in[1];
    const int32_t *neg_mult = (const int32_t *)x->in[2];
    const int32_t *neg_shift = (const int32_t *)x->in[3];
    int8_t *out = (int8_t *)x->out;
    for (uint32_t r = 0; r < s->rows; r++) {
        for (uint32_t c = 0; c < s->k; c++) {
            const int32_t v = *in++ + s->in_offset;
            const int32_t y =
                v >= 0 ? espnn_requant_ls(v, s->pos_mult, s->pos_shift)
                       : espnn_requant_ls(v * (alpha[c] + s->alpha_offset), neg_mult[c], neg_shift[c]);
            *out++ = (int8_t)espnn_clamp(y + s->out_offset, -128, 127);
        }
    }
}

const espnn_op_family_t espnn_family_prelu = {prepare, eval, ESPNN_STATE_BYTES_PRELU};
