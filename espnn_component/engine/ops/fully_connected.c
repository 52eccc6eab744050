/*
 * FULLY_CONNECTED: one ESP-NN call per input row.  When every output channel shares one
 * multiplier and shift, the per-tensor kernel runs (ESP-NN's fastest path); otherwise the
 * per-channel one.  Filter offset is 0 (symmetric weights); note ESP-NN's shift-before-mult
 * argument order.
 */
#include <stddef.h>

#include "espnn_s3_kernels.h"
#include "espnn_internal.h"
#include "espnn_util.h"

enum { FC_KERNEL_PER_CHANNEL = 1, FC_KERNEL_PER_TENSOR = 2 };

typedef struct fc_state {
    uint32_t rows;
    uint16_t k, n_out;
    int32_t in_offset, out_offset, act_min, act_max;
    int32_t mult, shift; /* per-tensor kernel only */
} fc_state_t;
ESPNN_FAMILY_STATE(fc_state_t, ESPNN_STATE_BYTES_FULLY_CONNECTED);

static espnn_status_t prepare(espnn_prep_t *p)
{
    fc_state_t *s = (fc_state_t *)p->data;
    espnn_tview_t x, o, f, m, sh;
    espnn_prep_tensor(p, 0, &x);
    espnn_prep_tensor(p, p->n_inputs, &o);
    espnn_status_t st = espnn_prep_dtype(p, &x, ESPNN_DTYPE_INT8, "input");
    if (st == ESPNN_OK) {
        st = espnn_prep_dtype(p, &o, ESPNN_DTYPE_INT8, "output");
    }
    if (st == ESPNN_OK) {
        st = espnn_prep_const(p, 1, &f, "filter");
    }
    if (st == ESPNN_OK) {
        st = espnn_prep_rank(p, &f, 2, "filter");
    }
    if (st != ESPNN_OK) {
        return st;
    }
    const uint32_t n_out = f.dims[0], k = f.dims[1];
    if (x.rank < 1 || x.dims[x.rank - 1] != k) {
        return espnn_prep_fail(p, "input", x.rank < 1 ? 0 : x.dims[x.rank - 1], k);
    }
    const uint32_t rows = x.numel / k;
    uint32_t want = 0;
    const bool fits = espnn_mul_u32(rows, n_out, &want);
    if (o.rank < 1 || o.dims[o.rank - 1] != n_out || !fits || o.numel != want) {
        return espnn_prep_fail(p, "output", o.numel, fits ? (int64_t)want : -1);
    }
    /* k <= 65535 is implied by the dims limit */
    st = espnn_prep_weighted(p, ESPNN_P_FULLY_CONNECTED_IN_OFFSET, ESPNN_P_FULLY_CONNECTED_OUT_OFFSET, ESPNN_P_FULLY_CONNECTED_ACT_MIN,
                             ESPNN_P_FULLY_CONNECTED_ACT_MAX, n_out);
    if (st != ESPNN_OK) {
        return st;
    }
    s->rows = rows;
    s->k = (uint16_t)k;
    s->n_out = (uint16_t)n_out;
    s->in_offset = p->params[ESPNN_P_FULLY_CONNECTED_IN_OFFSET];
    s->out_offset = p->params[ESPNN_P_FULLY_CONNECTED_OUT_OFFSET];
    s->act_min = p->params[ESPNN_P_FULLY_CONNECTED_ACT_MIN];
    s->act_max = p->params[ESPNN_P_FULLY_CONNECTED_ACT_MAX];
    espnn_prep_tensor(p, 3, &m);
    espnn_prep_tensor(p, 4, &sh);
    s->mult = espnn_const_i32(p, &m, 0);
    s->shift = espnn_const_i32(p, &sh, 0);
    p->kernel = FC_KERNEL_PER_TENSOR;
    for (uint32_t c = 1; c < n_out; c++) {
        if (espnn_const_i32(p, &m, c) != s->mult || espnn_const_i32(p, &sh, c) != s->shift) {
            p->kernel = FC_KERNEL_PER_CHANNEL;
            break;
        }
    }
    return ESPNN_OK;
}

static void eval(const espnn_exec_t *x)
{
    const fc_state_t *s = (const fc_state_t *)x->data;
    const int8_t *in = (const int8_t *)x->in[0];
    const int8_t *filter = (const int8_t *)x->in[1];
    const int32_t *bias = (const int32_t *)x->in[2];
    int8_t *out = (int8_t *)x->out;
    for (uint32_t r = 0; r < s->rows; r++) {
        const int8_t *row = in + (size_t)r * s->k;
        int8_t *dst = out + (size_t)r * s->n_out;
        if (x->op->kernel == FC_KERNEL_PER_TENSOR) {
            espnn_fc_s8(row, s->in_offset, (uint16_t)s->k, filter, 0, bias, dst, (uint16_t)s->n_out,
                        s->out_offset, s->shift, s->mult, s->act_min, s->act_max);
        } else {
            espnn_fc_per_ch_s8(row, s->in_offset, (uint16_t)s->k, filter, bias, dst,
                               (uint16_t)s->n_out, s->out_offset, (const int32_t *)x->in[4],
                               (const int32_t *)x->in[3], s->act_min, s->act_max);
        }
    }
}

const espnn_op_family_t espnn_family_fully_connected = {prepare, eval,
                                                        ESPNN_STATE_BYTES_FULLY_CONNECTED};
