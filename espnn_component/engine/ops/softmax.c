/*
 * SOFTMAX over the last dimension (rows of at most 4095), output scale 1/256, zero point -128.
 *
 * Rows of up to 511 entries run on ESP-NN's esp_nn_softmax_s8 (all rows in one call, its
 * scratch set first).  From 512 entries the sum of exponentials can reach 2^28 and the
 * kernel's final rounding shift 32..34 bits, which is undefined in C; those rows run on the
 * engine's own copy of the same fixed-point algorithm, where that shift is the exact rounding
 * (0), as the format specifies.
 *
 * The algorithm (TFLite's int8 softmax on gemmlowp fixed point): differences to the row
 * maximum are rescaled to Q5.26, exp() of non-positive values is a Taylor polynomial on
 * [-1/4, 0) times one constant per set bit of the remaining multiple of 1/4, the exps are
 * summed in Q12.19, the sum is normalised and inverted by Newton-Raphson, and each exp times
 * the reciprocal is rounded to 8 bits.
 */
#include "espnn_esp_nn.h"
#include "espnn_fixedpoint.h"
#include "espnn_internal.h"

enum { SOFTMAX_KERNEL_ESPNN = 1, SOFTMAX_KERNEL_LONG_ROWS = 2 };
#define ESPNN_SOFTMAX_KERNEL_MAX_ROW 511u /* longest row whose ESP-NN arithmetic is defined */

typedef struct softmax_state {
    uint32_t rows, width;
    int32_t mult, shift, diff_min;
} softmax_state_t;
ESPNN_FAMILY_STATE(softmax_state_t, ESPNN_STATE_BYTES_SOFTMAX);

static espnn_status_t prepare(espnn_prep_t *p)
{
    softmax_state_t *s = (softmax_state_t *)p->data;
    espnn_tview_t x, o;
    espnn_prep_tensor(p, 0, &x);
    espnn_prep_tensor(p, 1, &o);
    espnn_status_t st = espnn_prep_dtype(p, &x, ESPNN_DTYPE_INT8, "input");
    if (st == ESPNN_OK) {
        st = espnn_prep_dtype(p, &o, ESPNN_DTYPE_INT8, "output");
    }
    if (st != ESPNN_OK) {
        return st;
    }
    if (x.rank < 1 || !espnn_dims_equal(&x, &o)) {
        return espnn_prep_fail(p, "output", o.rank, x.rank);
    }
    const uint32_t width = x.dims[x.rank - 1];
    if (width > ESPNN_SOFTMAX_MAX_ROW) {
        return espnn_prep_fail(p, "input", width, ESPNN_SOFTMAX_MAX_ROW);
    }
    int32_t shift = 0, diff_min = 0;
    st = espnn_prep_param(p, ESPNN_P_SOFTMAX_MULT, 0, INT32_MAX, NULL);
    if (st == ESPNN_OK) {
        st = espnn_prep_param(p, ESPNN_P_SOFTMAX_SHIFT, 0, ESPNN_SOFTMAX_SHIFT_MAX, &shift);
    }
    if (st == ESPNN_OK) {
        st = espnn_prep_param(p, ESPNN_P_SOFTMAX_DIFF_MIN, INT32_MIN, 0, &diff_min);
    }
    if (st != ESPNN_OK) {
        return st;
    }
    /* the kernel rescales differences >= max(diff_min, -255) by 2^shift in int32 */
    const uint32_t span = diff_min < -255 ? 255u : (uint32_t)-diff_min;
    if (span > (0x7FFFFFFFu >> shift)) {
        return espnn_prep_fail(p, "diff_min", diff_min, -(int64_t)(0x7FFFFFFFu >> shift));
    }
    if (o.scale != 1.0f / 256.0f || o.zero_point != ESPNN_SOFTMAX_OUT_ZERO_POINT) {
        return espnn_prep_fail(p, "output", o.zero_point, ESPNN_SOFTMAX_OUT_ZERO_POINT);
    }
    s->width = width;
    s->rows = x.numel / width;
    s->mult = p->params[ESPNN_P_SOFTMAX_MULT];
    s->shift = shift;
    s->diff_min = diff_min;
    if (width > ESPNN_SOFTMAX_KERNEL_MAX_ROW) {
        p->kernel = SOFTMAX_KERNEL_LONG_ROWS;
        return ESPNN_OK;
    }
    p->kernel = SOFTMAX_KERNEL_ESPNN;
    const int32_t need = esp_nn_get_softmax_scratch_size((int32_t)width, (int32_t)s->rows);
    if (need > 0 && (uint32_t)need > p->scratch_size) {
        return espnn_prep_fail_status(p, ESPNN_ERR_TARGET, "scratch_size", p->scratch_size, need);
    }
    return ESPNN_OK;
}

/* ---- the engine's own kernel (rows of 512 .. 4095) ------------------------------------ */

#define ACCUM_INT_BITS 12 /* the sum of exps is Q12.19 */
#define Q31_EXP_MINUS_ONE_EIGHTH 1895147668 /* round(exp(-1/8) * 2^31) */
#define Q31_ONE_THIRD 715827883
#define Q29_48_OVER_17 1515870810
#define Q29_MINUS_32_OVER_17 (-1010580540)

/* round(exp(-2^k / 4) * 2^31), k = 0..6 */
static const int32_t exp_quarter_powers[7] = {
    1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242,
};

/* a + b as a 32-bit register adds (the algorithm's adds never overflow for valid inputs) */
static int32_t add32(int32_t a, int32_t b)
{
    const uint32_t u = (uint32_t)a + (uint32_t)b;
    return u <= 0x7FFFFFFFu ? (int32_t)u : (int32_t)(u - 0x80000000u) - INT32_MAX - 1;
}

static int32_t sat_mul_pow2(int32_t x, int e) /* x * 2^e saturated, e in {1, 2} */
{
    const int32_t lim = (int32_t)(((uint32_t)1 << (31 - e)) - 1u);
    return x > lim ? INT32_MAX : (x < -lim ? INT32_MIN : x * (int32_t)((uint32_t)1 << e));
}

static int32_t exp_on_negative(int32_t a) /* a <= 0 in Q5.26 -> Q0.31 */
{
    const int32_t quarter = (int32_t)1 << 24;
    const int32_t f = (int32_t)((uint32_t)a & (uint32_t)(quarter - 1)) - quarter;
    const int32_t rest = add32(f, -a); /* a = f - rest, rest a multiple of 1/4 */
    const int32_t t = f * 32 + ((int32_t)1 << 28);
    const int32_t t2 = espnn_srdhm(t, t);
    const int32_t t3 = espnn_srdhm(t2, t);
    const int32_t t4 = espnn_srdhm(t2, t2);
    const int32_t poly = espnn_rdbp(
        add32(espnn_srdhm(add32(espnn_rdbp(t4, 2), t3), Q31_ONE_THIRD), t2), 1);
    int32_t r = add32(Q31_EXP_MINUS_ONE_EIGHTH,
                      espnn_srdhm(Q31_EXP_MINUS_ONE_EIGHTH, add32(t, poly)));
    for (int k = 0; k < 7; k++) {
        if ((uint32_t)rest & ((uint32_t)1 << (24 + k))) {
            r = espnn_srdhm(r, exp_quarter_powers[k]);
        }
    }
    return a == 0 ? INT32_MAX : r;
}

static int32_t one_over_one_plus(int32_t a) /* a in [0, 1) Q0.31 -> 1/(1+a) Q0.31 */
{
    const int32_t half_den = (int32_t)(((int64_t)a + INT32_MAX + 1) / 2);
    int32_t x = add32(Q29_48_OVER_17, espnn_srdhm(half_den, Q29_MINUS_32_OVER_17));
    for (int i = 0; i < 3; i++) {
        const int32_t err = add32((int32_t)1 << 29, -espnn_srdhm(half_den, x));
        x = add32(x, sat_mul_pow2(espnn_srdhm(x, err), 2));
    }
    return sat_mul_pow2(x, 1);
}

static int clz32(uint32_t v) /* v != 0 */
{
    int n = 0;
    while (!(v & 0x80000000u)) {
        v <<= 1;
        n++;
    }
    return n;
}

static void softmax_long_rows(const softmax_state_t *s, const int8_t *in, int8_t *out)
{
    for (uint32_t r = 0; r < s->rows; r++, in += s->width, out += s->width) {
        int32_t max = in[0];
        for (uint32_t c = 1; c < s->width; c++) {
            max = in[c] > max ? in[c] : max;
        }
        /* at most 4095 terms of at most 2^19: the sum fits in int32 and is >= 2^19 */
        int32_t sum = 0;
        for (uint32_t c = 0; c < s->width; c++) {
            const int32_t diff = in[c] - max;
            if (diff >= s->diff_min) {
                const int32_t e = exp_on_negative(espnn_srdhm(diff * (1 << s->shift), s->mult));
                sum += espnn_rdbp(e, ACCUM_INT_BITS);
            }
        }
        const int headroom = clz32((uint32_t)sum);
        const uint32_t normalized = ((uint32_t)sum << headroom) - 0x80000000u;
        const int32_t scale = one_over_one_plus((int32_t)normalized); /* < 2^31 */
        const int exponent = ACCUM_INT_BITS - headroom + 31 - 8;
        for (uint32_t c = 0; c < s->width; c++) {
            const int32_t diff = in[c] - max;
            int32_t v = -128;
            if (diff >= s->diff_min) {
                const int32_t e = exp_on_negative(espnn_srdhm(diff * (1 << s->shift), s->mult));
                const int32_t prod = espnn_srdhm(scale, e); /* >= 0 */
                /* a shift of 32 or more rounds a value in [0, 2^31) to 0 */
                v = (exponent <= 31 ? espnn_rdbp(prod, exponent) : 0) - 128;
            }
            out[c] = (int8_t)espnn_clamp(v, -128, 127);
        }
    }
}

static void eval(const espnn_exec_t *x)
{
    const softmax_state_t *s = (const softmax_state_t *)x->data;
    if (x->op->kernel == SOFTMAX_KERNEL_LONG_ROWS) {
        softmax_long_rows(s, (const int8_t *)x->in[0], (int8_t *)x->out);
        return;
    }
    esp_nn_set_softmax_scratch_buf(x->scratch);
    esp_nn_softmax_s8((const int8_t *)x->in[0], (int32_t)s->rows, (int32_t)s->width, s->mult,
                      s->shift, s->diff_min, (int8_t *)x->out);
}

const espnn_op_family_t espnn_family_softmax = {prepare, eval, ESPNN_STATE_BYTES_SOFTMAX};
