/*
 * LUT: out[i] = table[in[i] + 128].  Every unary activation is lowered to one of these
 * 256-entry tables ahead of time.  Safe in place (elementwise).
 */
#include "espnn_internal.h"

typedef struct lut_state {
    uint32_t count;
} lut_state_t;
ESPNN_FAMILY_STATE(lut_state_t, ESPNN_STATE_BYTES_LUT);

static espnn_status_t prepare(espnn_prep_t *p)
{
    lut_state_t *s = (lut_state_t *)p->data;
    espnn_tview_t x, o, t;
    espnn_prep_tensor(p, 0, &x);
    espnn_prep_tensor(p, 2, &o);
    espnn_status_t st = espnn_prep_dtype(p, &x, ESPNN_DTYPE_INT8, "input");
    if (st == ESPNN_OK) {
        st = espnn_prep_dtype(p, &o, ESPNN_DTYPE_INT8, "output");
    }
    if (st == ESPNN_OK) {
        st = espnn_prep_const(p, 1, &t, "table");
    }
    if (st == ESPNN_OK) {
        st = espnn_prep_dtype(p, &t, ESPNN_DTYPE_INT8, "table");
    }
    if (st != ESPNN_OK) {
        return st;
    }
    if (t.rank != 1 || t.dims[0] != 256) {
        return espnn_prep_fail(p, "table", t.numel, 256);
    }
    if (x.numel != o.numel) {
        return espnn_prep_fail(p, "output", o.numel, x.numel);
    }
    s->count = x.numel;
    return ESPNN_OK;
}

static void eval(const espnn_exec_t *x)
{
    const lut_state_t *s = (const lut_state_t *)x->data;
    const int8_t *in = (const int8_t *)x->in[0];
    const int8_t *table = (const int8_t *)x->in[1];
    int8_t *out = (int8_t *)x->out;
    for (uint32_t i = 0; i < s->count; i++) {
        out[i] = table[in[i] + 128];
    }
}

const espnn_op_family_t espnn_family_lut = {prepare, eval, ESPNN_STATE_BYTES_LUT};
