/*
 * Host ESP-NN kernel: int8 softmax over the last dimension, output scale 1/256 and zero
 * point -128 (TFLite's fixed-point int8 softmax, as ESP-NN computes it).
 *
 * Per row: differences to the row maximum, rescaled to Q5.26 by (mult, shift), go through a
 * fixed-point exp() on non-positive values; the exps are summed in Q12.19, the reciprocal of
 * the sum comes from a Newton-Raphson iteration, and each output is exp * reciprocal scaled to
 * 8 bits.  Where ESP-NN's own arithmetic would overflow (rows of 4096 or more near-maximal
 * values) or shift by 32 or more (rows of 512 or more), this version defines the result:
 * the sum wraps as a 32-bit register does and the final division rounds exactly.
 */
#include "esp_nn.h"
#include "esp_nn_host_guard.h"
#include "hn_common.h"
#ifdef ESPNN_HOST_SCRATCH_GUARD
#include <string.h>
#endif

static void *softmax_scratch;

int32_t esp_nn_get_softmax_scratch_size(const int32_t width, const int32_t height)
{
    (void)width;
    (void)height;
    return HN_TEST_SCRATCH_BYTES;
}

void esp_nn_set_softmax_scratch_buf(void *buffer)
{
    softmax_scratch = buffer;
}

#define ACCUM_INT_BITS 12 /* the sum of exps is Q12.19 */

/* Fixed-point constants (round(value * 2^31) unless noted). */
#define Q31_EXP_MINUS_ONE_EIGHTH 1895147668 /* exp(-1/8) */
#define Q31_ONE_THIRD 715827883
#define Q29_48_OVER_17 1515870810       /* 48/17 in Q2.29 */
#define Q29_MINUS_32_OVER_17 (-1010580540) /* -32/17 in Q2.29 */
#define Q29_ONE (1 << 29)

/* exp(-2^k / 4) for k = 0..6: multiplies applied for each set bit of the integer part */
static const int32_t exp_of_quarter_powers[7] = {
    1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242,
};

static int32_t wadd(int32_t a, int32_t b)
{
    return hn_wrap32((int64_t)a + (int64_t)b);
}

/* x * 2^e saturated to int32 (0 <= e <= 2). */
static int32_t sat_mul_pow2(int32_t x, int e)
{
    const int32_t lim = (int32_t)(((uint32_t)1 << (31 - e)) - 1u);
    if (x > lim) {
        return INT32_MAX;
    }
    if (x < -lim) {
        return INT32_MIN;
    }
    return x * (int32_t)((uint32_t)1 << e);
}

/* exp(a) for a <= 0 in Q5.26, result in Q0.31. */
static int32_t exp_on_negative(int32_t a)
{
    const int32_t quarter = (int32_t)1 << 24; /* 1/4 in Q5.26 */
    /* a = -n/4 + f with f in [-1/4, 0): exp(f) by a Taylor expansion around -1/8, then
     * one multiply by exp(-2^k/4) per set bit k of n */
    const int32_t f = (int32_t)((uint32_t)a & (uint32_t)(quarter - 1)) - quarter;
    const int32_t n = wadd(f, -a);
    const int32_t x = f * 32 + ((int32_t)1 << 28); /* f + 1/8, in Q0.31 */
    const int32_t x2 = hn_srdhm(x, x);
    const int32_t x3 = hn_srdhm(x2, x);
    const int32_t x4 = hn_srdhm(x2, x2);
    const int32_t x4_over_4 = hn_rdbp(x4, 2);
    const int32_t tail = hn_rdbp(wadd(hn_srdhm(wadd(x4_over_4, x3), Q31_ONE_THIRD), x2), 1);
    int32_t r = wadd(Q31_EXP_MINUS_ONE_EIGHTH,
                     hn_srdhm(Q31_EXP_MINUS_ONE_EIGHTH, wadd(x, tail)));
    for (int k = 0; k < 7; k++) {
        if ((uint32_t)n & ((uint32_t)1 << (24 + k))) {
            r = hn_srdhm(r, exp_of_quarter_powers[k]);
        }
    }
    return a == 0 ? INT32_MAX : r;
}

/* 1 / (1 + a) for a in [0, 1) in Q0.31; Newton-Raphson in Q2.29, result Q0.31. */
static int32_t one_over_one_plus(int32_t a)
{
    const int64_t sum = (int64_t)a + INT32_MAX;
    const int32_t half_den = (int32_t)((sum + (sum >= 0 ? 1 : -1)) / 2);
    int32_t x = wadd(Q29_48_OVER_17, hn_srdhm(half_den, Q29_MINUS_32_OVER_17));
    for (int i = 0; i < 3; i++) {
        const int32_t err = wadd(Q29_ONE, -hn_srdhm(half_den, x));
        x = wadd(x, sat_mul_pow2(hn_srdhm(x, err), 2));
    }
    return sat_mul_pow2(x, 1);
}

static int clz32(uint32_t v)
{
    int n = 0;
    if (v == 0) {
        return 32;
    }
    while (!(v & 0x80000000u)) {
        v <<= 1;
        n++;
    }
    return n;
}

/* RDBP extended to exponents >= 32 (the exact rounding of x / 2^e). */
static int32_t rdbp_wide(int32_t x, int e)
{
    if (e <= 31) {
        return hn_rdbp(x, e < 0 ? 0 : e);
    }
    return (e == 32 && x == INT32_MIN) ? -1 : 0;
}

static int32_t rescaled_diff(int32_t diff, int32_t mult, int32_t shift)
{
    int s = shift < 0 ? 0 : (shift > 31 ? 31 : (int)shift);
    return hn_srdhm(hn_wrap32((int64_t)diff * (int64_t)((uint32_t)1 << s)), mult);
}

void esp_nn_softmax_s8(const int8_t *input_data, const int32_t height, const int32_t width,
                       const int32_t mult, const int32_t shift, const int32_t diff_min,
                       int8_t *output_data)
{
#ifdef ESPNN_HOST_SCRATCH_GUARD
    /* Guard mode: the S3, P4 and opt softmax kernels (src/softmax/esp_nn_softmax_s8_esp32s3.c,
     * esp_nn_softmax_opt.c) keep each row's exps in scratch_buf[col], col < width (mirrors
     * their writes) */
    if (softmax_scratch == NULL) {
        hn_guard_null("esp_nn_softmax_s8 (S3/opt)"); /* returns without computing */
    }
    if (height > 0) {
        memset(softmax_scratch, HN_GUARD_WRITE, (size_t)width * 4u);
    }
#else
    (void)softmax_scratch;
#endif
    HN_REQUIRE(width <= 511); /* beyond, ESP-NN's final shift is undefined */
    for (int32_t row = 0; row < height; row++) {
        const int8_t *in = input_data + (int64_t)row * width;
        int8_t *out = output_data + (int64_t)row * width;
        int32_t max = in[0];
        for (int32_t c = 1; c < width; c++) {
            max = in[c] > max ? in[c] : max;
        }
        uint32_t sum = 0;
        for (int32_t c = 0; c < width; c++) {
            const int32_t diff = in[c] - max;
            if (diff >= diff_min) {
                int32_t e = exp_on_negative(rescaled_diff(diff, mult, shift));
                sum += (uint32_t)hn_rdbp(e, ACCUM_INT_BITS);
            }
        }
        const int headroom = clz32(sum);
        const uint32_t normalized = headroom < 32 ? sum << headroom : 0u;
        const int32_t scale = one_over_one_plus(hn_wrap32((int64_t)(normalized - 0x80000000u)));
        const int bits_over_unit = ACCUM_INT_BITS - headroom + 31 - 8;
        for (int32_t c = 0; c < width; c++) {
            const int32_t diff = in[c] - max;
            if (diff >= diff_min) {
                int32_t e = exp_on_negative(rescaled_diff(diff, mult, shift));
                int32_t v = rdbp_wide(hn_srdhm(scale, e), bits_over_unit) - 128;
                out[c] = (int8_t)hn_clamp(v, -128, 127);
            } else {
                out[c] = -128;
            }
        }
    }
}
