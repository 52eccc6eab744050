/* Permutation plan shared by QUANTIZE, DEQUANTIZE and TRANSPOSE. */
#include "espnn_permute.h"

static const char *const perm_field = "perm0"; /* validate.py reports every perm error so */

espnn_status_t espnn_prep_permuted(espnn_prep_t *p, uint8_t din, uint8_t dout,
                                   espnn_perm_plan_t *plan)
{
    espnn_tview_t x, o;
    espnn_prep_tensor(p, 0, &x);
    espnn_prep_tensor(p, 1, &o);
    espnn_status_t st = ESPNN_OK;
    if (din != 0) {
        st = espnn_prep_dtype(p, &x, din, "input");
    }
    if (st == ESPNN_OK && dout != 0) {
        st = espnn_prep_dtype(p, &o, dout, "output");
    }
    if (st != ESPNN_OK) {
        return st;
    }
    if (din == 0 && x.dtype != o.dtype) {
        return espnn_prep_fail(p, "output", o.dtype, x.dtype);
    }
    if (x.rank != o.rank) {
        return espnn_prep_fail(p, "output", o.rank, x.rank);
    }
    uint32_t seen = 0;
    for (uint32_t i = 0; i < ESPNN_MAX_RANK; i++) {
        const int32_t v = p->params[i];
        const bool ok = i < x.rank ? (v >= 0 && (uint32_t)v < x.rank && !(seen & (1u << v)))
                                   : v == (int32_t)i;
        if (!ok) {
            return espnn_prep_fail(p, perm_field, v, i < x.rank ? (int64_t)x.rank - 1 : (int64_t)i);
        }
        if (i < x.rank) {
            seen |= 1u << v;
        }
    }
    uint32_t in_stride[ESPNN_MAX_RANK];
    uint32_t s = 1;
    for (int i = ESPNN_MAX_RANK - 1; i >= 0; i--) {
        in_stride[i] = s;
        s *= x.dims[i];
    }
    for (uint32_t i = 0; i < ESPNN_MAX_RANK; i++) {
        const uint32_t src = (uint32_t)p->params[i];
        if (o.dims[i] != x.dims[src]) {
            return espnn_prep_fail(p, "output", o.dims[i], x.dims[src]);
        }
        plan->odims[i] = o.dims[i];
        plan->istride[i] = in_stride[src];
    }
    const espnn_tview_t *q = dout == ESPNN_DTYPE_INT8 ? &o : (din == ESPNN_DTYPE_INT8 ? &x : NULL);
    if (q != NULL && !(q->scale > 0.0f)) { /* finite was checked with the tensor */
        return espnn_prep_fail(p, "scale", (int64_t)q->scale_bits, 0);
    }
    return ESPNN_OK;
}

void espnn_perm_for_each(const espnn_exec_t *x, const espnn_perm_plan_t *plan, espnn_perm_fn_t fn)
{
    uint32_t o = 0;
    for (uint32_t i0 = 0; i0 < plan->odims[0]; i0++) {
        for (uint32_t i1 = 0; i1 < plan->odims[1]; i1++) {
            for (uint32_t i2 = 0; i2 < plan->odims[2]; i2++) {
                const uint32_t base =
                    i0 * plan->istride[0] + i1 * plan->istride[1] + i2 * plan->istride[2];
                for (uint32_t i3 = 0; i3 < plan->odims[3]; i3++) {
                    fn(x, base + i3 * plan->istride[3], o++);
                }
            }
        }
    }
}
