/*
 * The binary64 and <math.h> pieces TFLM's Prepare() calls (QuantizeMultiplier: frexp, round,
 * double multiply and conversion to int64; roundf) that the ESP32-S3 stack's C library does not
 * have (emulated/xtensa_s3/stack_libc.c and softdouble.c serve our firmware, which needs none of
 * them).  Finite normal numbers and zero, which is all quantization parameters are; a wrong
 * result would show as TFLM's verdict failing against tflite-micro's Python interpreter.
 * Only the S3's TFLM firmware links this file (benchmarks/tflm_firmware.py).
 */
#include <stdint.h>
#include <string.h>

double __muldf3(double a, double b);
int64_t __fixdfdi(double a);
double frexp(double x, int *exp);
double round(double x);
float roundf(float x);

static uint64_t bits_of(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

static double double_of(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

#define EXP_MASK 0x7FFull
#define MANT_MASK ((1ull << 52) - 1u)
#define HIDDEN (1ull << 52)

double __muldf3(double a, double b)
{
    const uint64_t ua = bits_of(a), ub = bits_of(b);
    const uint64_t sign = (ua ^ ub) & (1ull << 63);
    const int ea = (int)((ua >> 52) & EXP_MASK), eb = (int)((ub >> 52) & EXP_MASK);
    if (ea == 0 || eb == 0) {
        return double_of(sign); /* zero (subnormals flushed: not in quantization parameters) */
    }
    const uint64_t ma = (ua & MANT_MASK) | HIDDEN, mb = (ub & MANT_MASK) | HIDDEN;
    /* 53 x 53 -> 106-bit product from 32-bit halves */
    const uint64_t al = ma & 0xFFFFFFFFu, ah = ma >> 32, bl = mb & 0xFFFFFFFFu, bh = mb >> 32;
    const uint64_t ll = al * bl, lh = al * bh, hl = ah * bl, hh = ah * bh;
    const uint64_t mid = (ll >> 32) + (lh & 0xFFFFFFFFu) + (hl & 0xFFFFFFFFu);
    uint64_t hi = hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
    uint64_t lo = (mid << 32) | (ll & 0xFFFFFFFFu);
    int e = ea + eb - 1023;
    /* the product is in [2^104, 2^106): normalise so bit 105 of (hi:lo) is set */
    if ((hi >> 41) == 0) {
        hi = (hi << 1) | (lo >> 63);
        lo <<= 1;
    } else {
        e += 1;
    }
    /* keep bits 105..53; the 53 below round to nearest, ties to even */
    uint64_t m = (hi << 11) | (lo >> 53);
    const uint64_t rest = lo & ((1ull << 53) - 1u), half = 1ull << 52;
    if (rest > half || (rest == half && (m & 1u))) {
        m += 1;
        if (m == (HIDDEN << 1)) {
            m >>= 1;
            e += 1;
        }
    }
    if (e <= 0) {
        return double_of(sign);
    }
    if (e >= 0x7FF) {
        return double_of(sign | (EXP_MASK << 52)); /* infinity */
    }
    return double_of(sign | ((uint64_t)e << 52) | (m & MANT_MASK));
}

int64_t __fixdfdi(double a)
{
    const uint64_t u = bits_of(a);
    const int e = (int)((u >> 52) & EXP_MASK) - 1023;
    if (e < 0) {
        return 0;
    }
    if (e >= 63) {
        return (u >> 63) ? INT64_MIN : INT64_MAX;
    }
    const uint64_t m = (u & MANT_MASK) | HIDDEN;
    const uint64_t v = e >= 52 ? m << (e - 52) : m >> (52 - e);
    return (u >> 63) ? -(int64_t)v : (int64_t)v;
}

double frexp(double x, int *exp)
{
    const uint64_t u = bits_of(x);
    const int e = (int)((u >> 52) & EXP_MASK);
    if (e == 0 || e == 0x7FF) { /* zero (subnormals as zero), infinity, NaN */
        *exp = 0;
        return x;
    }
    *exp = e - 1022;
    return double_of((u & ~(EXP_MASK << 52)) | (1022ull << 52));
}

double round(double x)
{
    const uint64_t u = bits_of(x);
    const int e = (int)((u >> 52) & EXP_MASK) - 1023;
    if (e >= 52) {
        return x; /* already an integer (or not finite) */
    }
    if (e < -1) {
        return double_of(u & (1ull << 63)); /* |x| < 0.5 */
    }
    if (e == -1) {
        return double_of((u & (1ull << 63)) | (1023ull << 52)); /* 0.5 <= |x| < 1: +-1 */
    }
    const uint64_t frac = MANT_MASK >> e;
    uint64_t r = u + (HIDDEN >> (e + 1)); /* add one half, away from zero by magnitude */
    r &= ~frac;
    return double_of(r);
}

float roundf(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    const int e = (int)((u >> 23) & 0xFFu) - 127;
    if (e >= 23) {
        return x;
    }
    if (e < -1) {
        u &= 0x80000000u;
    } else if (e == -1) {
        u = (u & 0x80000000u) | (127u << 23);
    } else {
        const uint32_t frac = 0x7FFFFFu >> e;
        u = (u + ((1u << 23) >> (e + 1))) & ~frac;
    }
    memcpy(&x, &u, sizeof x);
    return x;
}
