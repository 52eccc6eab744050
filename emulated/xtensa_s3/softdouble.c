/* IEEE 754 binary64 helpers the compiler calls on the ESP32-S3 (no double-precision FPU, no
 * libgcc for the windowed ABI): add/sub, div, the ordered compares, float/int conversions, and
 * the C library's nearbyint/nearbyintf, as the whole firmware stack needs them (EspnnModel's
 * quantization of float inputs computes in double).  Round to nearest even, signed zeros,
 * subnormals in and out, infinities, quiet NaNs; the same structure as the binary32 helpers of
 * emulated/xtensa_lx106/libgcc_extra.c.  tests/hardening/test_esp32s3.py compiles this file
 * natively (EMU_SOFTDOUBLE_HOST_TEST renames the entry points) and checks it against the host
 * FPU bit for bit. */
#include <stdint.h>
#include <string.h>

#ifdef EMU_SOFTDOUBLE_HOST_TEST
#define EMU_SD(name) emu_test_##name
#else
#define EMU_SD(name) name
#endif

double EMU_SD(__adddf3)(double a, double b);
double EMU_SD(__subdf3)(double a, double b);
double EMU_SD(__divdf3)(double a, double b);
int EMU_SD(__gtdf2)(double a, double b);
int EMU_SD(__gedf2)(double a, double b);
int EMU_SD(__ltdf2)(double a, double b);
int EMU_SD(__ledf2)(double a, double b);
int EMU_SD(__eqdf2)(double a, double b);
int EMU_SD(__nedf2)(double a, double b);
int EMU_SD(__unorddf2)(double a, double b);
double EMU_SD(__extendsfdf2)(float f);
double EMU_SD(__floatsidf)(int32_t i);
int32_t EMU_SD(__fixdfsi)(double a);
double EMU_SD(nearbyint)(double x);
float EMU_SD(nearbyintf)(float x);

#define DF_SIGN 0x8000000000000000ull
#define DF_INF 0x7FF0000000000000ull
#define DF_QNAN 0x7FF8000000000000ull
#define DF_QUIET_BIT 0x0008000000000000ull
#define DF_FRAC 0x000FFFFFFFFFFFFFull
#define DF_HIDDEN 0x0010000000000000ull

static uint64_t df_bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

static double df_double(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

static int df_is_nan(uint64_t a)
{
    return (a & ~DF_SIGN) > DF_INF;
}

static uint64_t shift_right_jam64(uint64_t v, uint32_t n)
{
    if (n == 0u) {
        return v;
    }
    if (n >= 63u) {
        return v != 0u;
    }
    return (v >> n) | ((v & ((1ull << n) - 1u)) != 0u);
}

/* value = sig * 2^(e - 1085): for a normal result sig is in [2^62, 2^63) and e the biased
 * exponent; the 10 bits below the 52-bit fraction are guard and sticky bits.  As in the binary32
 * helper, a rounding carry steps the exponent by itself, up to infinity. */
static uint64_t round_pack64(uint64_t sign, int32_t e, uint64_t sig)
{
    if (e >= 2047) {
        return sign | DF_INF;
    }
    if (e <= 0) {
        sig = shift_right_jam64(sig, (uint32_t)(1 - e));
        e = 1;
    }
    const uint64_t rest = sig & 0x3FFu;
    sig = (sig + 0x200u) >> 10;
    if (rest == 0x200u) {
        sig &= ~1ull; /* a tie: to even */
    }
    if (sig == 0u) {
        return sign;
    }
    return sign + ((uint64_t)(e - 1) << 52) + sig;
}

/* Significand with the hidden bit at 52 and its exponent, subnormals normalised. */
static uint64_t unpack64(uint64_t a, int32_t *e)
{
    const int32_t ea = (int32_t)((a >> 52) & 0x7FFu);
    uint64_t m = a & DF_FRAC;
    if (ea != 0) {
        *e = ea;
        return m | DF_HIDDEN;
    }
    *e = 1;
    while ((m & DF_HIDDEN) == 0u) {
        m <<= 1;
        *e -= 1;
    }
    return m;
}

static uint64_t df_add(uint64_t a, uint64_t b)
{
    if (df_is_nan(a)) {
        return a | DF_QUIET_BIT;
    }
    if (df_is_nan(b)) {
        return b | DF_QUIET_BIT;
    }
    uint64_t sa = a & DF_SIGN, sb = b & DF_SIGN;
    const uint64_t mag_a = a & ~DF_SIGN, mag_b = b & ~DF_SIGN;
    if (mag_a == DF_INF) {
        return (mag_b == DF_INF && sa != sb) ? DF_QNAN : a;
    }
    if (mag_b == DF_INF) {
        return b;
    }
    if (mag_a == 0u) {
        return mag_b == 0u ? (sa & sb) : b;
    }
    if (mag_b == 0u) {
        return a;
    }
    if (mag_a < mag_b) { /* a holds the larger magnitude */
        uint64_t t = a;
        a = b;
        b = t;
        t = sa;
        sa = sb;
        sb = t;
    }
    int32_t ea = (int32_t)((a >> 52) & 0x7FFu), eb = (int32_t)((b >> 52) & 0x7FFu);
    uint64_t ma = a & DF_FRAC, mb = b & DF_FRAC;
    if (ea != 0) {
        ma |= DF_HIDDEN;
    } else {
        ea = 1;
    }
    if (eb != 0) {
        mb |= DF_HIDDEN;
    } else {
        eb = 1;
    }
    /* hidden bit at 61: nine guard bits, and room for the carry of a sum */
    ma <<= 9;
    mb = shift_right_jam64(mb << 9, (uint32_t)(ea - eb));
    if (sa == sb) {
        const uint64_t sum = ma + mb;
        if (sum >= (1ull << 62)) {
            return round_pack64(sa, ea + 1, sum);
        }
        return round_pack64(sa, ea, sum << 1);
    }
    uint64_t diff = ma - mb;
    if (diff == 0u) {
        return 0u; /* x - x is +0 when rounding to nearest */
    }
    int32_t e = ea;
    while (diff < (1ull << 61) && e > 1) {
        diff <<= 1;
        e--;
    }
    return round_pack64(sa, e, diff << 1);
}

static uint64_t df_div(uint64_t a, uint64_t b)
{
    if (df_is_nan(a)) {
        return a | DF_QUIET_BIT;
    }
    if (df_is_nan(b)) {
        return b | DF_QUIET_BIT;
    }
    const uint64_t sign = (a ^ b) & DF_SIGN;
    const uint64_t mag_a = a & ~DF_SIGN, mag_b = b & ~DF_SIGN;
    if (mag_a == DF_INF) {
        return mag_b == DF_INF ? DF_QNAN : (sign | DF_INF);
    }
    if (mag_b == DF_INF) {
        return sign;
    }
    if (mag_b == 0u) {
        return mag_a == 0u ? DF_QNAN : (sign | DF_INF);
    }
    if (mag_a == 0u) {
        return sign;
    }
    int32_t ea, eb;
    const uint64_t ma = unpack64(a, &ea), mb = unpack64(b, &eb);
    /* q = floor(ma / mb * 2^63), in (2^62, 2^64), by restoring division */
    uint64_t rem = ma, q = 0;
    for (int i = 0; i < 64; i++) {
        q <<= 1;
        if (rem >= mb) {
            rem -= mb;
            q |= 1u;
        }
        rem <<= 1;
    }
    int32_t e = ea - eb + 1022;
    uint64_t sig;
    if (q >= (1ull << 63)) {
        sig = (q >> 1) | (q & 1u) | (rem != 0u);
        e += 1;
    } else {
        sig = q | (rem != 0u);
    }
    return round_pack64(sign, e, sig);
}

double EMU_SD(__adddf3)(double a, double b)
{
    return df_double(df_add(df_bits(a), df_bits(b)));
}

double EMU_SD(__subdf3)(double a, double b)
{
    return df_double(df_add(df_bits(a), df_bits(b) ^ DF_SIGN));
}

double EMU_SD(__divdf3)(double a, double b)
{
    return df_double(df_div(df_bits(a), df_bits(b)));
}

/* -1, 0, 1 for a < b, a == b, a > b; 2 when unordered (a NaN) */
static int df_cmp(uint64_t a, uint64_t b)
{
    if (df_is_nan(a) || df_is_nan(b)) {
        return 2;
    }
    if (((a | b) & ~DF_SIGN) == 0u) {
        return 0; /* +0 == -0 */
    }
    const int64_t ka = (a & DF_SIGN) ? -(int64_t)(a & ~DF_SIGN) : (int64_t)a;
    const int64_t kb = (b & DF_SIGN) ? -(int64_t)(b & ~DF_SIGN) : (int64_t)b;
    return ka < kb ? -1 : ka > kb ? 1 : 0;
}

/* libgcc's contracts: the sign of the result answers the compare, a NaN makes it false */
int EMU_SD(__gtdf2)(double a, double b)
{
    const int c = df_cmp(df_bits(a), df_bits(b));
    return c == 2 ? -1 : c;
}

int EMU_SD(__gedf2)(double a, double b)
{
    const int c = df_cmp(df_bits(a), df_bits(b));
    return c == 2 ? -1 : c;
}

int EMU_SD(__ltdf2)(double a, double b)
{
    const int c = df_cmp(df_bits(a), df_bits(b));
    return c == 2 ? 1 : c;
}

int EMU_SD(__ledf2)(double a, double b)
{
    const int c = df_cmp(df_bits(a), df_bits(b));
    return c == 2 ? 1 : c;
}

int EMU_SD(__eqdf2)(double a, double b)
{
    return df_cmp(df_bits(a), df_bits(b)) != 0;
}

int EMU_SD(__nedf2)(double a, double b)
{
    return df_cmp(df_bits(a), df_bits(b)) != 0;
}

int EMU_SD(__unorddf2)(double a, double b)
{
    return df_cmp(df_bits(a), df_bits(b)) == 2;
}

double EMU_SD(__extendsfdf2)(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    const uint64_t sign = (uint64_t)(u >> 31) << 63;
    int32_t e = (int32_t)((u >> 23) & 0xFFu);
    uint64_t m = u & 0x7FFFFFu;
    if (e == 0xFF) { /* infinity, or a NaN with its payload, quieted */
        return df_double(sign | DF_INF | (m << 29) | (m != 0u ? DF_QUIET_BIT : 0u));
    }
    if (e == 0) {
        if (m == 0u) {
            return df_double(sign);
        }
        e = 1;
        while ((m & 0x800000u) == 0u) { /* a binary32 subnormal is a binary64 normal */
            m <<= 1;
            e--;
        }
        m &= 0x7FFFFFu;
    }
    return df_double(sign | ((uint64_t)(e + 1023 - 127) << 52) | (m << 29));
}

/* |v| < 2^53 exactly, with sign */
static double df_from_u64(uint64_t sign, uint64_t v)
{
    if (v == 0u) {
        return df_double(sign);
    }
    int32_t e = 1075;
    while (v < DF_HIDDEN) {
        v <<= 1;
        e--;
    }
    while (v >= (DF_HIDDEN << 1)) { /* only 2^53 itself reaches here: exact */
        v >>= 1;
        e++;
    }
    return df_double(sign | ((uint64_t)e << 52) | (v & DF_FRAC));
}

double EMU_SD(__floatsidf)(int32_t i)
{
    const uint64_t mag = i < 0 ? (uint64_t)(-(int64_t)i) : (uint64_t)i;
    return df_from_u64(i < 0 ? DF_SIGN : 0u, mag);
}

/* toward zero; out of range saturates (NaN gives 0), as the conversion's result is then not
 * defined by C */
int32_t EMU_SD(__fixdfsi)(double a)
{
    const uint64_t u = df_bits(a);
    if (df_is_nan(u)) {
        return 0;
    }
    const int32_t e = (int32_t)((u >> 52) & 0x7FFu);
    const int neg = (u & DF_SIGN) != 0u;
    if (e < 1023) {
        return 0;
    }
    if (e >= 1023 + 31) {
        return neg ? INT32_MIN : INT32_MAX;
    }
    const uint64_t mag = ((u & DF_FRAC) | DF_HIDDEN) >> (1075 - e);
    return neg ? (int32_t)(0 - mag) : (int32_t)mag;
}

/* to an integer, half to even (the default rounding mode; no exception flags here) */
double EMU_SD(nearbyint)(double x)
{
    const uint64_t u = df_bits(x);
    const int32_t e = (int32_t)((u >> 52) & 0x7FFu);
    const uint64_t sign = u & DF_SIGN;
    if (e >= 1075) { /* integral already, or infinity/NaN */
        return df_is_nan(u) ? df_double(u | DF_QUIET_BIT) : x;
    }
    if (e < 1022) { /* |x| < 0.5 */
        return df_double(sign);
    }
    const uint32_t shift = (uint32_t)(1075 - e); /* fraction bits, 1..53 */
    const uint64_t m = (u & DF_FRAC) | DF_HIDDEN;
    uint64_t q = m >> shift;
    const uint64_t r = m & ((1ull << shift) - 1u), half = 1ull << (shift - 1u);
    if (r > half || (r == half && (q & 1u))) {
        q++;
    }
    return df_from_u64(sign, q);
}

float EMU_SD(nearbyintf)(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    const int32_t e = (int32_t)((u >> 23) & 0xFFu);
    const uint32_t sign = u & 0x80000000u;
    uint32_t out;
    if (e >= 150) {
        out = (u & 0x7FFFFFFFu) > 0x7F800000u ? (u | 0x400000u) : u;
    } else if (e < 126) {
        out = sign;
    } else {
        const uint32_t shift = (uint32_t)(150 - e);
        const uint32_t m = (u & 0x7FFFFFu) | 0x800000u;
        uint32_t q = m >> shift;
        const uint32_t r = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
        if (r > half || (r == half && (q & 1u))) {
            q++;
        }
        if (q == 0u) {
            out = sign;
        } else { /* q < 2^24: exact */
            int32_t eq = 150;
            while (q < 0x800000u) {
                q <<= 1;
                eq--;
            }
            while (q >= 0x1000000u) {
                q >>= 1;
                eq++;
            }
            out = sign | ((uint32_t)eq << 23) | (q & 0x7FFFFFu);
        }
    }
    float f;
    memcpy(&f, &out, sizeof f);
    return f;
}
