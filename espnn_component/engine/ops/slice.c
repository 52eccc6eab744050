/* SLICE with positive steps: out[i...] = in[start + i*step ...] per dim, any dtype. */
#include <string.h>

#include "espnn_internal.h"

static const char *const start_names[ESPNN_MAX_RANK] = {"start0", "start1", "start2", "start3"};

typedef struct slice_state {
    uint32_t odims[ESPNN_MAX_RANK];
    uint32_t istride[ESPNN_MAX_RANK]; /* bytes between consecutive output indices, step included */
    uint32_t base;                    /* byte offset of the first element read */
    uint32_t esize;
} slice_state_t;
ESPNN_FAMILY_STATE(slice_state_t, ESPNN_STATE_BYTES_SLICE);

static espnn_status_t prepare(espnn_prep_t *p)
{
    slice_state_t *s = (slice_state_t *)p->data;
    espnn_tview_t x, o;
    espnn_prep_tensor(p, 0, &x);
    espnn_prep_tensor(p, 1, &o);
    if (x.dtype != o.dtype || x.rank != o.rank) {
        return espnn_prep_fail(p, "output", o.rank, x.rank);
    }
    int32_t start[ESPNN_MAX_RANK], step[ESPNN_MAX_RANK];
    for (uint32_t i = 0; i < ESPNN_MAX_RANK; i++) {
        espnn_status_t st = espnn_prep_param(p, i, 0, ESPNN_MAX_DIM, &start[i]);
        if (st == ESPNN_OK) {
            st = espnn_prep_param(p, 4 + i, 1, ESPNN_MAX_DIM, &step[i]);
        }
        if (st != ESPNN_OK) {
            return st;
        }
        if (i >= x.rank) {
            if (start[i] != 0 || step[i] != 1) {
                return espnn_prep_fail(p, start_names[i], start[i], 0);
            }
            continue;
        }
        /* <= 65535 + 65534 * 65535 < 2^32 */
        const uint32_t last = (uint32_t)start[i] + (o.dims[i] - 1u) * (uint32_t)step[i];
        if (last > x.dims[i] - 1u) {
            return espnn_prep_fail(p, start_names[i], last, x.dims[i] - 1u);
        }
    }
    uint32_t stride = x.esize;
    s->base = 0;
    for (int i = ESPNN_MAX_RANK - 1; i >= 0; i--) {
        s->odims[i] = o.dims[i];
        /* may wrap only where the output dim is 1 and the stride is never used */
        s->istride[i] = stride * (uint32_t)step[i];
        s->base += stride * (uint32_t)start[i];
        stride *= x.dims[i];
    }
    s->esize = x.esize;
    return ESPNN_OK;
}

static void eval(const espnn_exec_t *x)
{
    const slice_state_t *s = (const slice_state_t *)x->data;
    const uint8_t *in = (const uint8_t *)x->in[0] + s->base;
    uint8_t *out = (uint8_t *)x->out;
    const uint32_t es = s->esize;
    const bool rows = s->istride[3] == es; /* innermost step 1: copy whole rows */
    for (uint32_t i0 = 0; i0 < s->odims[0]; i0++) {
        for (uint32_t i1 = 0; i1 < s->odims[1]; i1++) {
            for (uint32_t i2 = 0; i2 < s->odims[2]; i2++) {
                const uint8_t *src =
                    in + i0 * s->istride[0] + i1 * s->istride[1] + i2 * s->istride[2];
                if (rows) {
                    memcpy(out, src, (size_t)s->odims[3] * es);
                    out += (size_t)s->odims[3] * es;
                    continue;
                }
                for (uint32_t i3 = 0; i3 < s->odims[3]; i3++) {
                    memcpy(out, src + i3 * s->istride[3], es);
                    out += es;
                }
            }
        }
    }
}

const espnn_op_family_t espnn_family_slice = {prepare, eval, ESPNN_STATE_BYTES_SLICE};
