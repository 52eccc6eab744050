/* PAD with a constant (the quantized pad value) for int8/uint8 tensors. */
#include <string.h>

#include "espnn_internal.h"

static const char *const before_names[ESPNN_MAX_RANK] = {"before0", "before1", "before2",
                                                         "before3"};

typedef struct pad_state {
    uint32_t idims[ESPNN_MAX_RANK];
    uint32_t odims[ESPNN_MAX_RANK];
    uint32_t before[ESPNN_MAX_RANK];
    int32_t value;
    uint32_t nbytes;
} pad_state_t;
ESPNN_FAMILY_STATE(pad_state_t, ESPNN_STATE_BYTES_PAD);

static espnn_status_t prepare(espnn_prep_t *p)
{
    pad_state_t *s = (pad_state_t *)p->data;
    espnn_tview_t x, o;
    espnn_prep_tensor(p, 0, &x);
    espnn_prep_tensor(p, 1, &o);
    if (x.dtype != o.dtype || x.rank != o.rank) {
        return espnn_prep_fail(p, "output", o.rank, x.rank);
    }
    for (uint32_t i = 0; i < ESPNN_MAX_RANK; i++) {
        int32_t b, a;
        espnn_status_t st = espnn_prep_param(p, i, 0, ESPNN_MAX_DIM, &b);
        if (st == ESPNN_OK) {
            st = espnn_prep_param(p, 4 + i, 0, ESPNN_MAX_DIM, &a);
        }
        if (st != ESPNN_OK) {
            return st;
        }
        if (i >= x.rank) {
            if (a != 0 || b != 0) {
                return espnn_prep_fail(p, before_names[i], b != 0 ? b : a, 0);
            }
        } else if (o.dims[i] != x.dims[i] + (uint32_t)a + (uint32_t)b) {
            return espnn_prep_fail(p, "output", o.dims[i], (int64_t)x.dims[i] + a + b);
        }
        s->before[i] = (uint32_t)b;
        s->idims[i] = x.dims[i];
        s->odims[i] = o.dims[i];
    }
    espnn_status_t st;
    if (x.dtype == ESPNN_DTYPE_INT8) {
        st = espnn_prep_param(p, ESPNN_P_PAD_VALUE, -128, 127, NULL);
    } else if (x.dtype == ESPNN_DTYPE_UINT8) {
        st = espnn_prep_param(p, ESPNN_P_PAD_VALUE, 0, 255, NULL);
    } else {
        st = espnn_prep_fail(p, "input", x.dtype, ESPNN_DTYPE_INT8);
    }
    if (st != ESPNN_OK) {
        return st;
    }
    s->value = p->params[ESPNN_P_PAD_VALUE];
    s->nbytes = o.nbytes;
    return ESPNN_OK;
}

static void eval(const espnn_exec_t *x)
{
    const pad_state_t *s = (const pad_state_t *)x->data;
    const uint8_t *in = (const uint8_t *)x->in[0];
    uint8_t *out = (uint8_t *)x->out;
    memset(out, (int)(uint8_t)s->value, s->nbytes);
    const uint32_t *id = s->idims, *od = s->odims, *b = s->before;
    for (uint32_t i0 = 0; i0 < id[0]; i0++) {
        for (uint32_t i1 = 0; i1 < id[1]; i1++) {
            for (uint32_t i2 = 0; i2 < id[2]; i2++) {
                const size_t src = (((size_t)i0 * id[1] + i1) * id[2] + i2) * id[3];
                const size_t dst =
                    ((((size_t)i0 + b[0]) * od[1] + i1 + b[1]) * od[2] + i2 + b[2]) * od[3] + b[3];
                memcpy(out + dst, in + src, id[3]);
            }
        }
    }
}

const espnn_op_family_t espnn_family_pad = {prepare, eval, ESPNN_STATE_BYTES_PAD};
