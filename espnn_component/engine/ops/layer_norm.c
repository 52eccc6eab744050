/*
 * LAYER_NORM over the last dim: the engine's own integer kernel (ESP-NN has none).
 *
 * Per row of D int8 values q (docs/payload-format.md, "LAYER_NORM", states every step):
 *   S = sum q, V = D * sum q^2 - S^2 (the zero point cancels), W = V * 2^16 + eps_q;
 *   an integer reciprocal square root of W (isqrt of W normalised into [2^60, 2^62), then
 *   one 64-bit division per row); X = (D q - S) / sqrt(W / 2^16) in Q24;
 *   out = clamp(round(round(X * gamma / 2^(8 + gamma_shift)) + beta, 16) + out_offset).
 * Rows of at most 4096 values keep every product in int64.
 */
#include <stddef.h>

#include "espnn_internal.h"
#include "espnn_util.h"

typedef struct layer_norm_state {
    uint32_t rows, d;
    int32_t out_offset, gamma_shift;
    uint32_t eps_hi, eps_lo;
} layer_norm_state_t;
ESPNN_FAMILY_STATE(layer_norm_state_t, ESPNN_STATE_BYTES_LAYER_NORM);

static espnn_status_t check_vector(espnn_prep_t *p, uint32_t slot, uint32_t d, const char *name)
{
    espnn_tview_t t;
    espnn_status_t st = espnn_prep_const(p, slot, &t, name);
    if (st == ESPNN_OK) {
        st = espnn_prep_dtype(p, &t, ESPNN_DTYPE_INT32, name);
    }
    if (st == ESPNN_OK && (t.rank != 1 || t.dims[0] != d)) {
        st = espnn_prep_fail(p, name, t.dims[0], d);
    }
    return st;
}

static espnn_status_t prepare(espnn_prep_t *p)
{
    layer_norm_state_t *s = (layer_norm_state_t *)p->data;
    espnn_tview_t x, o;
    espnn_prep_tensor(p, 0, &x);
    espnn_prep_tensor(p, p->n_inputs, &o);
    espnn_status_t st = espnn_prep_dtype(p, &x, ESPNN_DTYPE_INT8, "input");
    if (st == ESPNN_OK) {
        st = espnn_prep_dtype(p, &o, ESPNN_DTYPE_INT8, "output");
    }
    if (st != ESPNN_OK) {
        return st;
    }
    if (x.rank < 1) {
        return espnn_prep_fail(p, "input", x.rank, 1);
    }
    if (!espnn_dims_equal(&x, &o)) {
        return espnn_prep_fail(p, "output", o.numel, x.numel);
    }
    const uint32_t d = x.dims[x.rank - 1];
    if (d > ESPNN_LAYER_NORM_MAX_ROW) {
        return espnn_prep_fail(p, "input", d, ESPNN_LAYER_NORM_MAX_ROW);
    }
    st = check_vector(p, 1, d, "gamma");
    if (st == ESPNN_OK) {
        st = check_vector(p, 2, d, "beta");
    }
    if (st == ESPNN_OK) {
        st = espnn_prep_out_offset(p, ESPNN_P_LAYER_NORM_OUT_OFFSET);
    }
    if (st == ESPNN_OK) {
        st = espnn_prep_param(p, ESPNN_P_LAYER_NORM_GAMMA_SHIFT, 0, ESPNN_LAYER_NORM_GAMMA_SHIFT_MAX,
                              NULL);
    }
    if (st == ESPNN_OK) {
        st = espnn_prep_param(p, ESPNN_P_LAYER_NORM_EPS_HI, 0, ESPNN_LAYER_NORM_EPS_HI_MAX, NULL);
    }
    if (st != ESPNN_OK) {
        return st;
    }
    s->d = d;
    s->rows = x.numel / d;
    s->out_offset = p->params[ESPNN_P_LAYER_NORM_OUT_OFFSET];
    s->gamma_shift = p->params[ESPNN_P_LAYER_NORM_GAMMA_SHIFT];
    s->eps_hi = (uint32_t)p->params[ESPNN_P_LAYER_NORM_EPS_HI];
    s->eps_lo = (uint32_t)p->params[ESPNN_P_LAYER_NORM_EPS_LO];
    return ESPNN_OK;
}

/* round half away from zero of x / 2^e, 0 <= e <= 62, without UB */
static int64_t rdbp64(int64_t x, uint32_t e)
{
    if (e == 0) {
        return x;
    }
    const uint64_t mask = ((uint64_t)1 << e) - 1u;
    const uint64_t rem = (uint64_t)x & mask;
    const uint64_t threshold = (mask >> 1) + (x < 0 ? 1u : 0u);
    const int64_t r = x >= 0 ? (int64_t)((uint64_t)x >> e) : -(int64_t)(~(uint64_t)x >> e) - 1;
    return rem > threshold ? r + 1 : r;
}

/* floor(sqrt(v)) for v < 2^62, bit by bit */
static uint32_t isqrt64(uint64_t v)
{
    uint64_t res = 0, bit = (uint64_t)1 << 62;
    while (bit > v) {
        bit >>= 2;
    }
    while (bit != 0) {
        if (v >= res + bit) {
            v -= res + bit;
            res = (res >> 1) + bit;
        } else {
            res >>= 1;
        }
        bit >>= 2;
    }
    return (uint32_t)res;
}

static uint32_t bit_length(uint64_t v)
{
    uint32_t n = 0;
    while (v != 0) {
        n++;
        v >>= 1;
    }
    return n;
}

static void eval(const espnn_exec_t *x)
{
    const layer_norm_state_t *s = (const layer_norm_state_t *)x->data;
    const int8_t *in = (const int8_t *)x->in[0];
    const int32_t *gamma = (const int32_t *)x->in[1];
    const int32_t *beta = (const int32_t *)x->in[2];
    int8_t *out = (int8_t *)x->out;
    const uint32_t d = s->d;
    const uint64_t eps_q = ((uint64_t)s->eps_hi << 32) | s->eps_lo;
    const uint32_t p_shift = 8u + (uint32_t)s->gamma_shift;
    for (uint32_t r = 0; r < s->rows; r++) {
        const int8_t *q = in + (size_t)r * d;
        int8_t *dst = out + (size_t)r * d;
        int32_t sum = 0, sq = 0; /* |sum| <= 2^19, sq <= 2^26 for d <= 4096 */
        for (uint32_t i = 0; i < d; i++) {
            sum += q[i];
            sq += q[i] * q[i];
        }
        const int64_t v = (int64_t)d * sq - (int64_t)sum * sum; /* >= 0, < 2^38 */
        const uint64_t w = ((uint64_t)v << 16) + eps_q;           /* < 2^62 */
        int64_t rinv = 0;
        uint32_t t = 0;
        if (w != 0) {
            t = (62u - bit_length(w)) / 2u;
            rinv = (int64_t)(((uint64_t)1 << 62) / isqrt64(w << (2u * t)));
        }
        for (uint32_t i = 0; i < d; i++) {
            const int64_t n = (int64_t)d * q[i] - sum;             /* |n| < 2^20 */
            const int64_t xq = w != 0 ? rdbp64(n * rinv, 30u - t) : 0; /* Q24, < 2^31 */
            const int64_t prod = rdbp64(xq * gamma[i], p_shift);   /* Q16 output units */
            int64_t o = rdbp64(prod + beta[i], ESPNN_LAYER_NORM_FRAC_BITS) + s->out_offset;
            dst[i] = (int8_t)(o < -128 ? -128 : (o > 127 ? 127 : o));
        }
    }
}

const espnn_op_family_t espnn_family_layer_norm = {prepare, eval, ESPNN_STATE_BYTES_LAYER_NORM};
