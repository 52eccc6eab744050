/*
 * BATCH_MATMUL: out[b] = requant((a[b] + a_offset) x (bt[b] + b_offset)^T), activations on
 * both sides (attention's q @ k^T and p @ v).
 *
 * The second operand arrives transposed ([..., N, K], the layout of a fully-connected
 * filter), so each row of a is one esp_nn_fully_connected_s8 call with bt[b] as the filter
 * and -zero_point of b as ESP-NN's filter offset.  On the ESP32-S3, ESP-NN 1.2.3 takes its
 * s8 MAC path only with a filter offset of 0 (and K >= 16, the row 16-byte aligned); a
 * non-zero offset runs its s16 SIMD kernel.  With a non-zero input offset the s8 path sums
 * the filter at every call (every row here), slower than s16: the quantizer makes both zero
 * points 0 or neither (docs/operators.md, "Symmetric matmul operands").  Neither path takes
 * scratch.  An operand whose batch is 1 is read for every output batch (stride 0).
 */
#include <stddef.h>

#include "espnn_s3_kernels.h"
#include "espnn_internal.h"
#include "espnn_util.h"

typedef struct matmul_state {
    uint32_t batch, a_stride, b_stride; /* element strides between batches (0: broadcast) */
    uint16_t m, k, n, reserved;
    int32_t a_offset, b_offset, out_mult, out_shift, out_offset, act_min, act_max;
} matmul_state_t;
ESPNN_FAMILY_STATE(matmul_state_t, ESPNN_STATE_BYTES_BATCH_MATMUL);

static espnn_status_t check_operand(espnn_prep_t *p, const espnn_tview_t *t, const char *name)
{
    espnn_status_t st = espnn_prep_dtype(p, t, ESPNN_DTYPE_INT8, name);
    if (st == ESPNN_OK && (t->rank < 2 || t->rank > 4)) {
        st = espnn_prep_fail(p, name, t->rank, t->rank < 2 ? 2 : 4);
    }
    return st;
}

static espnn_status_t prepare(espnn_prep_t *p)
{
    matmul_state_t *s = (matmul_state_t *)p->data;
    espnn_tview_t a, b, o;
    espnn_prep_tensor(p, 0, &a);
    espnn_prep_tensor(p, 1, &b);
    espnn_prep_tensor(p, p->n_inputs, &o);
    espnn_status_t st = check_operand(p, &a, "a");
    if (st == ESPNN_OK) {
        st = check_operand(p, &b, "b");
    }
    if (st == ESPNN_OK) {
        st = check_operand(p, &o, "output");
    }
    if (st != ESPNN_OK) {
        return st;
    }
    const uint32_t m = a.dims[a.rank - 2], k = a.dims[a.rank - 1], n = b.dims[b.rank - 2];
    if (b.dims[b.rank - 1] != k) {
        return espnn_prep_fail(p, "b", b.dims[b.rank - 1], k);
    }
    if (o.dims[o.rank - 2] != m || o.dims[o.rank - 1] != n) {
        return espnn_prep_fail(p, "output", o.dims[o.rank - 1], n);
    }
    if (k > ESPNN_MAX_MATMUL_DEPTH) {
        return espnn_prep_fail(p, "a", k, ESPNN_MAX_MATMUL_DEPTH);
    }
    /* m*k, n*k and m*n are products of two dims <= 65535: no 32-bit overflow */
    const uint32_t batch = o.numel / (m * n);
    const uint32_t ba = a.numel / (m * k), bb = b.numel / (n * k);
    if (ba != 1 && ba != batch) {
        return espnn_prep_fail(p, "a", ba, batch);
    }
    if (bb != 1 && bb != batch) {
        return espnn_prep_fail(p, "b", bb, batch);
    }
    st = espnn_prep_in_offset(p, ESPNN_P_BATCH_MATMUL_A_OFFSET);
    if (st == ESPNN_OK) {
        st = espnn_prep_in_offset(p, ESPNN_P_BATCH_MATMUL_B_OFFSET);
    }
    if (st == ESPNN_OK) {
        st = espnn_prep_out_offset(p, ESPNN_P_BATCH_MATMUL_OUT_OFFSET);
    }
    if (st == ESPNN_OK) {
        st = espnn_prep_param(p, ESPNN_P_BATCH_MATMUL_OUT_MULT, 0, INT32_MAX, NULL);
    }
    if (st == ESPNN_OK) {
        st = espnn_prep_param(p, ESPNN_P_BATCH_MATMUL_OUT_SHIFT, ESPNN_SHIFT_MIN, ESPNN_SHIFT_MAX,
                              NULL);
    }
    if (st == ESPNN_OK) {
        st = espnn_prep_act(p, ESPNN_P_BATCH_MATMUL_ACT_MIN, ESPNN_P_BATCH_MATMUL_ACT_MAX);
    }
    if (st != ESPNN_OK) {
        return st;
    }
    s->batch = batch;
    s->a_stride = ba == 1 ? 0u : m * k;
    s->b_stride = bb == 1 ? 0u : n * k;
    s->m = (uint16_t)m;
    s->k = (uint16_t)k;
    s->n = (uint16_t)n;
    s->a_offset = p->params[ESPNN_P_BATCH_MATMUL_A_OFFSET];
    s->b_offset = p->params[ESPNN_P_BATCH_MATMUL_B_OFFSET];
    s->out_mult = p->params[ESPNN_P_BATCH_MATMUL_OUT_MULT];
    s->out_shift = p->params[ESPNN_P_BATCH_MATMUL_OUT_SHIFT];
    s->out_offset = p->params[ESPNN_P_BATCH_MATMUL_OUT_OFFSET];
    s->act_min = p->params[ESPNN_P_BATCH_MATMUL_ACT_MIN];
    s->act_max = p->params[ESPNN_P_BATCH_MATMUL_ACT_MAX];
    return ESPNN_OK;
}

static void eval(const espnn_exec_t *x)
{
    const matmul_state_t *s = (const matmul_state_t *)x->data;
    const int8_t *a = (const int8_t *)x->in[0];
    const int8_t *bt = (const int8_t *)x->in[1];
    int8_t *out = (int8_t *)x->out;
    for (uint32_t bi = 0; bi < s->batch; bi++) {
        const int8_t *ab = a + (size_t)bi * s->a_stride;
        const int8_t *filt = bt + (size_t)bi * s->b_stride;
        int8_t *ob = out + (size_t)bi * s->m * s->n;
        for (uint32_t r = 0; r < s->m; r++) {
            espnn_fc_s8(ab + (size_t)r * s->k, s->a_offset, (uint16_t)s->k, filt, s->b_offset, NULL,
                        ob + (size_t)r * s->n, (uint16_t)s->n, s->out_offset, s->out_shift,
                        s->out_mult, s->act_min, s->act_max);
        }
    }
}

const espnn_op_family_t espnn_family_batch_matmul = {prepare, eval, ESPNN_STATE_BYTES_BATCH_MATMUL};
