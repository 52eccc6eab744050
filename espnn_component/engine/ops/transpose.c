/* TRANSPOSE of any dtype: out.dims[i] == in.dims[perm[i]]. */
#include <string.h>

#include "espnn_permute.h"

typedef struct transpose_state {
    espnn_perm_plan_t plan;
    uint32_t esize;
} transpose_state_t;
ESPNN_FAMILY_STATE(transpose_state_t, ESPNN_STATE_BYTES_TRANSPOSE);

static espnn_status_t prepare(espnn_prep_t *p)
{
    transpose_state_t *s = (transpose_state_t *)p->data;
    espnn_status_t st = espnn_prep_permuted(p, 0, 0, &s->plan);
    if (st != ESPNN_OK) {
        return st;
    }
    espnn_tview_t x;
    espnn_prep_tensor(p, 0, &x);
    s->esize = x.esize;
    return ESPNN_OK;
}

static void copy1(const espnn_exec_t *x, uint32_t in, uint32_t out)
{
    ((uint8_t *)x->out)[out] = ((const uint8_t *)x->in[0])[in];
}

static void copy2(const espnn_exec_t *x, uint32_t in, uint32_t out)
{
    memcpy((uint8_t *)x->out + 2u * out, (const uint8_t *)x->in[0] + 2u * in, 2);
}

static void copy4(const espnn_exec_t *x, uint32_t in, uint32_t out)
{
    memcpy((uint8_t *)x->out + 4u * out, (const uint8_t *)x->in[0] + 4u * in, 4);
}

static void eval(const espnn_exec_t *x)
{
    const transpose_state_t *s = (const transpose_state_t *)x->data;
    espnn_perm_for_each(x, &s->plan, s->esize == 1 ? copy1 : (s->esize == 2 ? copy2 : copy4));
}

const espnn_op_family_t espnn_family_transpose = {prepare, eval, ESPNN_STATE_BYTES_TRANSPOSE};
