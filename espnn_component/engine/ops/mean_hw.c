/*
 * MEAN_HW: [N,H,W,C] -> [N,1,1,C], out = clamp_int8(requant(sum(x + in_offset)) + out_offset).
 * The engine's own kernel (H*W <= 2^23 keeps the int32 sum exact).
 */
#include <stddef.h>

#include "espnn_fixedpoint.h"
#include "espnn_internal.h"


typedef struct mean_state {
    uint16_t n, h, w, c;
    int32_t in_offset, out_offset, mult, shift;
} mean_state_t;
ESPNN_FAMILY_STATE(mean_state_t, ESPNN_STATE_BYTES_MEAN_HW);

static espnn_status_t prepare(espnn_prep_t *p)
{
    mean_state_t *s = (mean_state_t *)p->data;
    espnn_tview_t x, o;
    espnn_status_t st = espnn_prep_int8_rank4_io(p, 1, &x, &o);
    if (st != ESPNN_OK) {
        return st;
    }
    if (o.dims[0] != x.dims[0] || o.dims[1] != 1 || o.dims[2] != 1 || o.dims[3] != x.dims[3]) {
        return espnn_prep_fail(p, "output", o.dims[3], x.dims[3]);
    }
    const uint32_t hw = x.dims[1] * x.dims[2];
    if (hw > ESPNN_MAX_MEAN_COUNT) {
        return espnn_prep_fail(p, "input", hw, ESPNN_MAX_MEAN_COUNT);
    }
    st = espnn_prep_in_offset(p, ESPNN_P_MEAN_HW_IN_OFFSET);
    if (st == ESPNN_OK) {
        st = espnn_prep_out_offset(p, ESPNN_P_MEAN_HW_OUT_OFFSET);
    }
    if (st == ESPNN_OK) {
        st = espnn_prep_param(p, ESPNN_P_MEAN_HW_MULT, 0, INT32_MAX, NULL);
    }
    if (st == ESPNN_OK) {
        st = espnn_prep_param(p, ESPNN_P_MEAN_HW_SHIFT, ESPNN_SHIFT_MIN, ESPNN_SHIFT_MAX, NULL);
    }
    if (st != ESPNN_OK) {
        return st;
    }
    s->n = (uint16_t)x.dims[0];
    s->h = (uint16_t)x.dims[1];
    s->w = (uint16_t)x.dims[2];
    s->c = (uint16_t)x.dims[3];
    s->in_offset = p->params[ESPNN_P_MEAN_HW_IN_OFFSET];
    s->out_offset = p->params[ESPNN_P_MEAN_HW_OUT_OFFSET];
    s->mult = p->params[ESPNN_P_MEAN_HW_MULT];
    s->shift = p->params[ESPNN_P_MEAN_HW_SHIFT];
    return ESPNN_OK;
}

static void eval(const espnn_exec_t *x)
{
    const mean_state_t *s = (const mean_state_t *)x->data;
    const int8_t *in = (const int8_t *)x->in[0];
    int8_t *out = (int8_t *)x->out;
    const size_t hw = (size_t)s->h * s->w;
    for (uint32_t n = 0; n < s->n; n++) {
        const int8_t *img = in + n * hw * s->c;
        for (uint32_t c = 0; c < s->c; c++) {
            int32_t sum = 0;
            for (size_t i = 0; i < hw; i++) {
                sum += img[i * s->c + c] + s->in_offset;
            }
            const int32_t v = espnn_requant(sum, s->mult, s->shift) + s->out_offset;
            out[(size_t)n * s->c + c] = (int8_t)espnn_clamp(v, -128, 127);
        }
    }
}

const espnn_op_family_t espnn_family_mean_hw = {prepare, eval, ESPNN_STATE_BYTES_MEAN_HW};
