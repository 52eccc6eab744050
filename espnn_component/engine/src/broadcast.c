/* Broadcast plan shared by ADD, MUL and DIV (their operands are slots 0 and 1). */
#include "espnn_broadcast.h"

static bool is_per_channel(const espnn_tview_t *t, const espnn_tview_t *o)
{
    if (o->rank == 0) {
        return false;
    }
    const uint32_t last = o->rank - 1u;
    for (uint32_t i = 0; i < last; i++) {
        if (t->dims[i] != 1) {
            return false;
        }
    }
    return t->dims[last] == o->dims[last];
}

espnn_status_t espnn_prep_broadcast(espnn_prep_t *p, espnn_bcast_t *plan,
                                    espnn_bcast_shape_t *shape)
{
    espnn_tview_t a, b, o;
    espnn_prep_tensor(p, 0, &a);
    espnn_prep_tensor(p, 1, &b);
    espnn_prep_tensor(p, p->n_inputs, &o);
    const espnn_tview_t *ts[3] = {&a, &b, &o};
    const char *names[3] = {"a", "b", "output"};
    for (int k = 0; k < 3; k++) {
        espnn_status_t st = espnn_prep_dtype(p, ts[k], ESPNN_DTYPE_INT8, names[k]);
        if (st != ESPNN_OK) {
            return st;
        }
        if (ts[k]->rank != o.rank) {
            return espnn_prep_fail(p, names[k], ts[k]->rank, o.rank);
        }
    }
    for (uint32_t i = 0; i < o.rank; i++) {
        for (int k = 0; k < 2; k++) {
            if (ts[k]->dims[i] != 1 && ts[k]->dims[i] != o.dims[i]) {
                return espnn_prep_fail(p, names[k], ts[k]->dims[i], o.dims[i]);
            }
        }
    }
    /* strides over the 4 physical dims (unused trailing dims are 1 everywhere) */
    uint32_t sa = 1, sb = 1;
    for (int i = ESPNN_MAX_RANK - 1; i >= 0; i--) {
        plan->odims[i] = o.dims[i];
        plan->astride[i] = a.dims[i] == o.dims[i] ? sa : 0u;
        plan->bstride[i] = b.dims[i] == o.dims[i] ? sb : 0u;
        sa *= a.dims[i];
        sb *= b.dims[i];
    }
    uint32_t k = ESPNN_MAX_RANK, run = 1;
    while (k > 0 && a.dims[k - 1] == o.dims[k - 1] && b.dims[k - 1] == o.dims[k - 1]) {
        k--;
        run *= o.dims[k];
    }
    plan->run = run;
    plan->outer = k;
    if (espnn_dims_equal(&a, &o) && espnn_dims_equal(&b, &o)) {
        *shape = ESPNN_BCAST_SAME;
    } else if (espnn_dims_equal(&a, &o) && is_per_channel(&b, &o)) {
        *shape = ESPNN_BCAST_B_PER_CH;
    } else if (espnn_dims_equal(&b, &o) && is_per_channel(&a, &o)) {
        *shape = ESPNN_BCAST_A_PER_CH;
    } else {
        *shape = ESPNN_BCAST_GENERAL;
    }
    return ESPNN_OK;
}

void espnn_bcast_for_each(const espnn_exec_t *x, const espnn_bcast_t *plan, espnn_bcast_fn_t fn)
{
    uint32_t n[ESPNN_MAX_RANK];
    for (uint32_t i = 0; i < ESPNN_MAX_RANK; i++) {
        n[i] = i < plan->outer ? plan->odims[i] : 1u;
    }
    uint32_t o = 0;
    for (uint32_t i0 = 0; i0 < n[0]; i0++) {
        for (uint32_t i1 = 0; i1 < n[1]; i1++) {
            for (uint32_t i2 = 0; i2 < n[2]; i2++) {
                for (uint32_t i3 = 0; i3 < n[3]; i3++) {
                    const uint32_t a = i0 * plan->astride[0] + i1 * plan->astride[1] +
                                       i2 * plan->astride[2] + i3 * plan->astride[3];
                    const uint32_t b = i0 * plan->bstride[0] + i1 * plan->bstride[1] +
                                       i2 * plan->bstride[2] + i3 * plan->bstride[3];
                    fn(x, a, b, o, plan->run);
                    o += plan->run;
                }
            }
        }
    }
}
