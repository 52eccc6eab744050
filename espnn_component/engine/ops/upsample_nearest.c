/* UPSAMPLE_NEAREST: out[n,y,x,:] = in[n, y_map[y], x_map[x], :], maps computed ahead of time. */
#include <stddef.h>
#include <string.h>

#include "espnn_internal.h"

typedef struct upsample_state {
    uint32_t n, h, w, c, oh, ow;
} upsample_state_t;
ESPNN_FAMILY_STATE(upsample_state_t, ESPNN_STATE_BYTES_UPSAMPLE_NEAREST);

static espnn_status_t prepare(espnn_prep_t *p)
{
    upsample_state_t *s = (upsample_state_t *)p->data;
    espnn_tview_t x, o, m;
    espnn_status_t st = espnn_prep_int8_rank4_io(p, 3, &x, &o);
    if (st != ESPNN_OK) {
        return st;
    }
    if (o.dims[0] != x.dims[0] || o.dims[3] != x.dims[3]) {
        return espnn_prep_fail(p, "output", o.dims[3], x.dims[3]);
    }
    const char *names[2] = {"y_map", "x_map"};
    for (uint32_t k = 0; k < 2; k++) {
        const uint32_t size = o.dims[1 + k], lim = x.dims[1 + k];
        st = espnn_prep_const(p, 1 + k, &m, names[k]);
        if (st == ESPNN_OK) {
            st = espnn_prep_dtype(p, &m, ESPNN_DTYPE_INT32, names[k]);
        }
        if (st != ESPNN_OK) {
            return st;
        }
        if (m.rank != 1 || m.dims[0] != size) {
            return espnn_prep_fail(p, names[k], m.dims[0], size);
        }
        for (uint32_t i = 0; i < size; i++) {
            const int32_t v = espnn_const_i32(p, &m, i);
            if (v < 0 || (uint32_t)v >= lim) {
                return espnn_prep_fail(p, names[k], v, (int64_t)lim - 1);
            }
        }
    }
    s->n = x.dims[0];
    s->h = x.dims[1];
    s->w = x.dims[2];
    s->c = x.dims[3];
    s->oh = o.dims[1];
    s->ow = o.dims[2];
    return ESPNN_OK;
}

static void eval(const espnn_exec_t *x)
{
    const upsample_state_t *s = (const upsample_state_t *)x->data;
    const int8_t *in = (const int8_t *)x->in[0];
    const int32_t *ymap = (const int32_t *)x->in[1];
    const int32_t *xmap = (const int32_t *)x->in[2];
    int8_t *out = (int8_t *)x->out;
    for (uint32_t n = 0; n < s->n; n++) {
        const int8_t *img = in + (size_t)n * s->h * s->w * s->c;
        for (uint32_t y = 0; y < s->oh; y++) {
            const int8_t *row = img + (size_t)ymap[y] * s->w * s->c;
            for (uint32_t xx = 0; xx < s->ow; xx++) {
                memcpy(out, row + (size_t)xmap[xx] * s->c, s->c);
                out += s->c;
            }
        }
    }
}

const espnn_op_family_t espnn_family_upsample_nearest = {prepare, eval,
                                                         ESPNN_STATE_BYTES_UPSAMPLE_NEAREST};
