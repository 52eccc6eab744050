/* CONCAT of 1..16 inputs along one axis: per outer index, each input's block in turn. */
#include <string.h>

#include "espnn_internal.h"

const char *espnn_input_field(uint32_t slot);

typedef struct concat_state {
    uint32_t outer;       /* product of the dims before the axis */
    uint32_t inner_bytes; /* bytes of one index along the axis */
    /* each input's length along the axis: a constant input has no tensor record in the state
     * (docs/engine.md, "State layout"), so eval cannot read it there */
    uint16_t axis_dims[ESPNN_MAX_OP_INPUTS];
} concat_state_t;
ESPNN_FAMILY_STATE(concat_state_t, ESPNN_STATE_BYTES_CONCAT);

static espnn_status_t prepare(espnn_prep_t *p)
{
    concat_state_t *s = (concat_state_t *)p->data;
    espnn_tview_t o, t;
    espnn_prep_tensor(p, p->n_inputs, &o);
    int32_t axis;
    espnn_status_t st = espnn_prep_param(p, 0, 0, o.rank > 0 ? o.rank - 1 : 0, &axis);
    if (st != ESPNN_OK) {
        return st;
    }
    if (o.rank == 0 && p->n_inputs != 1) {
        return espnn_prep_fail(p, "n_inputs", p->n_inputs, 1); /* a scalar holds one element */
    }
    uint32_t total = 0;
    for (uint32_t slot = 0; slot < p->n_inputs; slot++) {
        espnn_prep_tensor(p, slot, &t);
        if (t.dtype != o.dtype || t.rank != o.rank) {
            return espnn_prep_fail(p, espnn_input_field(slot), t.rank, o.rank);
        }
        for (uint32_t i = 0; i < o.rank; i++) {
            if (i != (uint32_t)axis && t.dims[i] != o.dims[i]) {
                return espnn_prep_fail(p, espnn_input_field(slot), t.dims[i], o.dims[i]);
            }
        }
        total += t.dims[axis]; /* 1 for rank 0; at most 16 * 65535 */
        s->axis_dims[slot] = (uint16_t)t.dims[axis]; /* the format's dims are uint16 */
    }
    if (total != o.dims[axis]) {
        return espnn_prep_fail(p, "axis", total, o.dims[axis]);
    }
    s->outer = 1;
    for (int32_t i = 0; i < axis; i++) {
        s->outer *= o.dims[i];
    }
    s->inner_bytes = o.esize;
    for (uint32_t i = (uint32_t)axis + 1; i < ESPNN_MAX_RANK; i++) {
        s->inner_bytes *= o.dims[i];
    }
    return ESPNN_OK;
}

static void eval(const espnn_exec_t *x)
{
    const concat_state_t *s = (const concat_state_t *)x->data;
    uint8_t *out = (uint8_t *)x->out;
    for (uint32_t i = 0; i < s->outer; i++) {
        for (uint32_t k = 0; k < x->op->n_inputs; k++) {
            const size_t block = (size_t)s->axis_dims[k] * s->inner_bytes;
            memcpy(out, (const uint8_t *)x->in[k] + i * block, block);
            out += block;
        }
    }
}

const espnn_op_family_t espnn_family_concat = {prepare, eval, ESPNN_STATE_BYTES_CONCAT};
