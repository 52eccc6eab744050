/*
 * DIV: a / b of two int8 tensors (NumPy broadcasting of size-1 dims), the engine's own kernel
 * (ESP-NN has no division).  No division runs here: the payload holds, for each of the 256
 * codes of b, the requantisation (mult, shift) of s_a / (s_b (code - z_b) s_out), so
 *   out = requant_ls(a + a_offset, mult[b + 128], shift[b + 128]) + out_offset,
 * clamped to [act_min, act_max].  A code worth 0 holds the largest multiplier with the largest
 * left shift, so a non-zero numerator saturates as PyTorch's x / 0 = +-inf quantizes; 0 / 0
 * (a zero numerator over the code b_zero_point) gives code 0, what quantize_per_tensor's cast
 * makes of PyTorch's NaN (convert_pt2e's program defines the result).
 *
 * Bounds: |a + a_offset| <= 255 and shift <= ESPNN_DIV_SHIFT_MAX (14), so the left-shifted
 * numerator stays below 2^22; |mult| <= INT32_MAX keeps SRDHM's one saturating case out.
 */
#include "espnn_broadcast.h"
#include "espnn_fixedpoint.h"

typedef struct div_state {
    int32_t a_offset, b_zero_point, out_offset, act_min, act_max;
    espnn_bcast_t plan;
} div_state_t;
ESPNN_FAMILY_STATE(div_state_t, ESPNN_STATE_BYTES_DIV);

/* slot 2 (mult) or 3 (shift): a constant int32 [256], one entry per divisor code */
static espnn_status_t prep_table(espnn_prep_t *p, uint32_t slot, const char *name,
                                 espnn_tview_t *t)
{
    espnn_status_t st = espnn_prep_const(p, slot, t, name);
    if (st == ESPNN_OK) {
        st = espnn_prep_dtype(p, t, ESPNN_DTYPE_INT32, name);
    }
    if (st == ESPNN_OK && (t->rank != 1 || t->dims[0] != ESPNN_DIV_TABLE_SIZE)) {
        st = espnn_prep_fail(p, name, t->dims[0], ESPNN_DIV_TABLE_SIZE);
    }
    return st;
}

static espnn_status_t prepare(espnn_prep_t *p)
{
    div_state_t *s = (div_state_t *)p->data;
    espnn_bcast_shape_t shape;
    espnn_tview_t m, sh;
    espnn_status_t st = espnn_prep_broadcast(p, &s->plan, &shape);
    if (st == ESPNN_OK) {
        st = prep_table(p, 2, "mult", &m);
    }
    if (st == ESPNN_OK) {
        st = prep_table(p, 3, "shift", &sh);
    }
    for (uint32_t i = 0; st == ESPNN_OK && i < ESPNN_DIV_TABLE_SIZE; i++) {
        const int32_t v = espnn_const_i32(p, &m, i);
        if (v < -INT32_MAX) {
            st = espnn_prep_fail(p, "mult", v, -INT32_MAX);
        }
    }
    for (uint32_t i = 0; st == ESPNN_OK && i < ESPNN_DIV_TABLE_SIZE; i++) {
        const int32_t v = espnn_const_i32(p, &sh, i);
        if (v < ESPNN_SHIFT_MIN || v > ESPNN_DIV_SHIFT_MAX) {
            st = espnn_prep_fail(p, "shift", v, v < 0 ? ESPNN_SHIFT_MIN : ESPNN_DIV_SHIFT_MAX);
        }
    }
    if (st == ESPNN_OK) {
        st = espnn_prep_in_offset(p, ESPNN_P_DIV_A_OFFSET);
    }
    if (st == ESPNN_OK) {
        st = espnn_prep_out_offset(p, ESPNN_P_DIV_OUT_OFFSET);
    }
    if (st == ESPNN_OK) {
        st = espnn_prep_param(p, ESPNN_P_DIV_B_ZERO_POINT, -128, 127, &s->b_zero_point);
    }
    if (st == ESPNN_OK) {
        st = espnn_prep_act(p, ESPNN_P_DIV_ACT_MIN, ESPNN_P_DIV_ACT_MAX);
    }
    if (st != ESPNN_OK) {
        return st;
    }
    (void)shape; /* one loop serves every broadcast: it walks the plan's strides */
    s->a_offset = p->params[ESPNN_P_DIV_A_OFFSET];
    s->out_offset = p->params[ESPNN_P_DIV_OUT_OFFSET];
    s->act_min = p->params[ESPNN_P_DIV_ACT_MIN];
    s->act_max = p->params[ESPNN_P_DIV_ACT_MAX];
    return ESPNN_OK;
}

static void eval(const espnn_exec_t *x)
{
    const div_state_t *s = (const div_state_t *)x->data;
    const espnn_bcast_t *pl = &s->plan;
    const int8_t *a = (const int8_t *)x->in[0];
    const int8_t *b = (const int8_t *)x->in[1];
    const int32_t *mult = (const int32_t *)x->in[2];
    const int32_t *shift = (const int32_t *)x->in[3];
    int8_t *out = (int8_t *)x->out;
    /* the last physical dim is the inner loop: linear attention's [.., N, d] / [.., N, 1]
     * reads one divisor code per row */
    for (uint32_t i0 = 0; i0 < pl->odims[0]; i0++) {
        for (uint32_t i1 = 0; i1 < pl->odims[1]; i1++) {
            for (uint32_t i2 = 0; i2 < pl->odims[2]; i2++) {
                const uint32_t ra = i0 * pl->astride[0] + i1 * pl->astride[1] + i2 * pl->astride[2];
                const uint32_t rb = i0 * pl->bstride[0] + i1 * pl->bstride[1] + i2 * pl->bstride[2];
                for (uint32_t i3 = 0; i3 < pl->odims[3]; i3++) {
                    const int32_t q = b[rb + i3 * pl->bstride[3]];
                    const int32_t num = a[ra + i3 * pl->astride[3]] + s->a_offset;
                    const uint32_t code = (uint32_t)(q + 128);
                    const int32_t v = num == 0 && q == s->b_zero_point
                                          ? 0 /* 0 / 0 */
                                          : espnn_requant_ls(num, mult[code], shift[code]) + s->out_offset;
                    *out++ = (int8_t)espnn_clamp(v, s->act_min, s->act_max);
                }
            }
        }
    }
}

const espnn_op_family_t espnn_family_div = {prepare, eval, ESPNN_STATE_BYTES_DIV};
