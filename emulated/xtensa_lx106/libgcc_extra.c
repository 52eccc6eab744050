/*
 * The libgcc helpers Debian's xtensa-lx106-elf libgcc leaves out (on the ESP8266 they come
 * from the chip's ROM): 32/64-bit integer division and multiplication, and the single-precision
 * add/sub/mul and int-to-float conversions the engine's QUANTIZE/DEQUANTIZE need.
 *
 * Integer helpers use only 32-bit multiplies, shifts and compares, never the C operators that
 * would call back into the helper being defined.  The float helpers are IEEE 754 binary32 with
 * round-to-nearest-even, signed zeros, subnormals in and out, infinities and quiet NaNs;
 * tests/hardening/test_emulated.py compiles this file natively (EMU_LIBGCC_HOST_TEST renames
 * the entry points) and checks it against the host FPU bit for bit.
 *
 * EMU_LIBGCC_FULL (targets with no libgcc at all: the ESP32-S3's windowed ABI, built by clang,
 * emulated/xtensa_s3/) adds what Debian's lx106 libgcc does have: the 64-bit divide-with-
 * remainder under the 64-bit division helpers, and single-precision division.
 */
#include <stdint.h>

#ifdef EMU_LIBGCC_HOST_TEST
#define EMU_LIBGCC(name) emu_test_##name
#else
#define EMU_LIBGCC(name) name
#endif

#ifdef EMU_LIBGCC_FULL
#define EMU_UDIVMODDI4 EMU_LIBGCC(__udivmoddi4)
#define EMU_DIVMODDI4 EMU_LIBGCC(__divmoddi4)
float EMU_LIBGCC(__divsf3)(float a, float b);
#else
/* Provided by Debian's libgcc for lx106. */
#define EMU_UDIVMODDI4 __udivmoddi4
#define EMU_DIVMODDI4 __divmoddi4
#endif
uint64_t EMU_UDIVMODDI4(uint64_t n, uint64_t d, uint64_t *rem);
int64_t EMU_DIVMODDI4(int64_t n, int64_t d, int64_t *rem);

uint32_t EMU_LIBGCC(__udivsi3)(uint32_t n, uint32_t d);
uint32_t EMU_LIBGCC(__umodsi3)(uint32_t n, uint32_t d);
int32_t EMU_LIBGCC(__divsi3)(int32_t n, int32_t d);
uint64_t EMU_LIBGCC(__umulsidi3)(uint32_t a, uint32_t b);
int64_t EMU_LIBGCC(__muldi3)(int64_t a, int64_t b);
uint64_t EMU_LIBGCC(__udivdi3)(uint64_t n, uint64_t d);
uint64_t EMU_LIBGCC(__umoddi3)(uint64_t n, uint64_t d);
int64_t EMU_LIBGCC(__divdi3)(int64_t n, int64_t d);
float EMU_LIBGCC(__addsf3)(float a, float b);
float EMU_LIBGCC(__subsf3)(float a, float b);
float EMU_LIBGCC(__mulsf3)(float a, float b);
float EMU_LIBGCC(__floatsisf)(int32_t i);
float EMU_LIBGCC(__floatunsisf)(uint32_t u);

/* ------------------------------------------------------------------------------ integers */

/* Restoring division; d == 0 gives quotient all ones and remainder n (undefined in C). */
static uint32_t udivmod32(uint32_t n, uint32_t d, uint32_t *rem)
{
    uint32_t q = 0, r = 0;
    for (int i = 31; i >= 0; i--) {
        r = (r << 1) | ((n >> i) & 1u);
        if (r >= d) {
            r -= d;
            q |= 1u << i;
        }
    }
    *rem = r;
    return q;
}

uint32_t EMU_LIBGCC(__udivsi3)(uint32_t n, uint32_t d)
{
    uint32_t r;
    return udivmod32(n, d, &r);
}

uint32_t EMU_LIBGCC(__umodsi3)(uint32_t n, uint32_t d)
{
    uint32_t r;
    (void)udivmod32(n, d, &r);
    return r;
}

int32_t EMU_LIBGCC(__divsi3)(int32_t n, int32_t d)
{
    uint32_t un = n < 0 ? 0u - (uint32_t)n : (uint32_t)n;
    uint32_t ud = d < 0 ? 0u - (uint32_t)d : (uint32_t)d;
    uint32_t r;
    uint32_t q = udivmod32(un, ud, &r);
    return (int32_t)((n < 0) != (d < 0) ? 0u - q : q);
}

/* 32x32 -> 64 from 16-bit partial products (each fits a 32-bit multiply). */
static void umul32(uint32_t a, uint32_t b, uint32_t *hi, uint32_t *lo)
{
    uint32_t al = a & 0xFFFFu, ah = a >> 16, bl = b & 0xFFFFu, bh = b >> 16;
    uint32_t ll = al * bl, lh = al * bh, hl = ah * bl, hh = ah * bh;
    uint32_t mid = (ll >> 16) + (lh & 0xFFFFu) + (hl & 0xFFFFu);
    *lo = (ll & 0xFFFFu) | (mid << 16);
    *hi = hh + (lh >> 16) + (hl >> 16) + (mid >> 16);
}

uint64_t EMU_LIBGCC(__umulsidi3)(uint32_t a, uint32_t b)
{
    uint32_t hi, lo;
    umul32(a, b, &hi, &lo);
    return ((uint64_t)hi << 32) | lo;
}

int64_t EMU_LIBGCC(__muldi3)(int64_t a, int64_t b)
{
    uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
    uint32_t al = (uint32_t)ua, ah = (uint32_t)(ua >> 32);
    uint32_t bl = (uint32_t)ub, bh = (uint32_t)(ub >> 32);
    uint32_t hi, lo;
    umul32(al, bl, &hi, &lo);
    hi += al * bh + ah * bl; /* the high words only matter modulo 2^32 */
    return (int64_t)(((uint64_t)hi << 32) | lo);
}

#ifdef EMU_LIBGCC_FULL
/* Restoring division, one bit per step (64-bit shifts and compares only); d == 0 gives all
 * ones and remainder n, as udivmod32. */
uint64_t EMU_LIBGCC(__udivmoddi4)(uint64_t n, uint64_t d, uint64_t *rem)
{
    if ((n >> 32) == 0u && (d >> 32) == 0u) {
        uint32_t r32;
        const uint32_t q32 = udivmod32((uint32_t)n, (uint32_t)d, &r32);
        if (rem) {
            *rem = r32;
        }
        return q32;
    }
    uint64_t q = 0, r = 0;
    for (int i = 63; i >= 0; i--) {
        const uint64_t top = r >> 63;
        r = (r << 1) | ((n >> i) & 1u);
        if (top != 0u || r >= d) {
            r -= d;
            q |= (uint64_t)1 << i;
        }
    }
    if (rem) {
        *rem = r;
    }
    return q;
}

/* Truncating signed division: quotient toward zero, remainder with the dividend's sign. */
int64_t EMU_LIBGCC(__divmoddi4)(int64_t n, int64_t d, int64_t *rem)
{
    const uint64_t un = n < 0 ? 0u - (uint64_t)n : (uint64_t)n;
    const uint64_t ud = d < 0 ? 0u - (uint64_t)d : (uint64_t)d;
    uint64_t ur;
    uint64_t uq = EMU_LIBGCC(__udivmoddi4)(un, ud, &ur);
    if ((n < 0) != (d < 0)) {
        uq = 0u - uq;
    }
    if (rem) {
        *rem = (int64_t)(n < 0 ? 0u - ur : ur);
    }
    return (int64_t)uq;
}
#endif

uint64_t EMU_LIBGCC(__udivdi3)(uint64_t n, uint64_t d)
{
    return EMU_UDIVMODDI4(n, d, (uint64_t *)0);
}

uint64_t EMU_LIBGCC(__umoddi3)(uint64_t n, uint64_t d)
{
    uint64_t r;
    (void)EMU_UDIVMODDI4(n, d, &r);
    return r;
}

int64_t EMU_LIBGCC(__divdi3)(int64_t n, int64_t d)
{
    int64_t r;
    return EMU_DIVMODDI4(n, d, &r);
}

/* -------------------------------------------------------------------------------- floats */

#define SF_SIGN 0x80000000u
#define SF_INF 0x7F800000u
#define SF_QNAN 0x7FC00000u
#define SF_QUIET_BIT 0x00400000u
#define SF_FRAC 0x007FFFFFu
#define SF_HIDDEN 0x00800000u

static uint32_t sf_bits(float f)
{
    union {
        float f;
        uint32_t u;
    } x = {.f = f};
    return x.u;
}

static float sf_float(uint32_t u)
{
    union {
        uint32_t u;
        float f;
    } x = {.u = u};
    return x.f;
}

static int sf_is_nan(uint32_t a)
{
    return (a & 0x7FFFFFFFu) > SF_INF;
}

/* Shift right, OR-ing every bit shifted out into bit 0 so rounding still sees it. */
static uint32_t shift_right_jam(uint32_t v, uint32_t n)
{
    if (n == 0u) {
        return v;
    }
    if (n >= 31u) {
        return v != 0u;
    }
    return (v >> n) | ((v & ((1u << n) - 1u)) != 0u);
}

/*
 * Round and pack.  value = sig * 2^(e - 157): for a normal result sig is in [2^30, 2^31) and
 * e is the biased exponent; the 7 bits below the 23-bit fraction are guard and sticky bits.
 * e <= 0 denormalises.  Adding (e - 1) << 23 to a significand that still carries its hidden
 * bit makes a rounding carry (or the hidden bit of a denormal that rounds up) step the
 * exponent by itself, up to infinity.
 */
static uint32_t round_pack(uint32_t sign, int32_t e, uint32_t sig)
{
    if (e >= 255) {
        return sign | SF_INF;
    }
    if (e <= 0) {
        sig = shift_right_jam(sig, (uint32_t)(1 - e));
        e = 1;
    }
    uint32_t rest = sig & 0x7Fu;
    sig = (sig + 0x40u) >> 7;
    if (rest == 0x40u) {
        sig &= ~1u; /* a tie: to even */
    }
    if (sig == 0u) {
        return sign;
    }
    return sign + ((uint32_t)(e - 1) << 23) + sig;
}

/* Significand with the hidden bit at 23 and its exponent, subnormals normalised. */
static uint32_t unpack(uint32_t a, int32_t *e)
{
    int32_t ea = (int32_t)((a >> 23) & 0xFFu);
    uint32_t m = a & SF_FRAC;
    if (ea != 0) {
        *e = ea;
        return m | SF_HIDDEN;
    }
    *e = 1;
    while ((m & SF_HIDDEN) == 0u) {
        m <<= 1;
        *e -= 1;
    }
    return m;
}

static uint32_t sf_add(uint32_t a, uint32_t b)
{
    if (sf_is_nan(a)) {
        return a | SF_QUIET_BIT;
    }
    if (sf_is_nan(b)) {
        return b | SF_QUIET_BIT;
    }
    uint32_t sa = a & SF_SIGN, sb = b & SF_SIGN;
    uint32_t mag_a = a & ~SF_SIGN, mag_b = b & ~SF_SIGN;
    if (mag_a == SF_INF) {
        return (mag_b == SF_INF && sa != sb) ? SF_QNAN : a;
    }
    if (mag_b == SF_INF) {
        return b;
    }
    if (mag_a == 0u) {
        return mag_b == 0u ? (sa & sb) : b;
    }
    if (mag_b == 0u) {
        return a;
    }
    if (mag_a < mag_b) { /* a holds the larger magnitude */
        uint32_t t = a;
        a = b;
        b = t;
        t = sa;
        sa = sb;
        sb = t;
    }
    /* Subnormals count as exponent 1 without the hidden bit: no normalisation needed here. */
    int32_t ea = (int32_t)((a >> 23) & 0xFFu), eb = (int32_t)((b >> 23) & 0xFFu);
    uint32_t ma = a & SF_FRAC, mb = b & SF_FRAC;
    if (ea != 0) {
        ma |= SF_HIDDEN;
    } else {
        ea = 1;
    }
    if (eb != 0) {
        mb |= SF_HIDDEN;
    } else {
        eb = 1;
    }
    /* Hidden bit at 29: six guard bits, and room for the carry of a sum. */
    ma <<= 6;
    mb = shift_right_jam(mb << 6, (uint32_t)(ea - eb));
    if (sa == sb) {
        uint32_t sum = ma + mb;
        if (sum >= (1u << 30)) {
            return round_pack(sa, ea + 1, sum);
        }
        return round_pack(sa, ea, sum << 1);
    }
    uint32_t diff = ma - mb; /* ma >= mb since |a| >= |b| */
    if (diff == 0u) {
        return 0u; /* x - x is +0 when rounding to nearest */
    }
    int32_t e = ea;
    while (diff < (1u << 29) && e > 1) {
        diff <<= 1;
        e--;
    }
    return round_pack(sa, e, diff << 1);
}

static uint32_t sf_mul(uint32_t a, uint32_t b)
{
    if (sf_is_nan(a)) {
        return a | SF_QUIET_BIT;
    }
    if (sf_is_nan(b)) {
        return b | SF_QUIET_BIT;
    }
    uint32_t sign = (a ^ b) & SF_SIGN;
    uint32_t mag_a = a & ~SF_SIGN, mag_b = b & ~SF_SIGN;
    if (mag_a == SF_INF || mag_b == SF_INF) {
        return (mag_a == 0u || mag_b == 0u) ? SF_QNAN : (sign | SF_INF);
    }
    if (mag_a == 0u || mag_b == 0u) {
        return sign;
    }
    int32_t ea, eb;
    uint32_t ma = unpack(a, &ea), mb = unpack(b, &eb);
    uint32_t hi, lo;
    umul32(ma, mb, &hi, &lo); /* product in [2^46, 2^48) */
    if (hi >= (1u << 15)) {   /* >= 2^47: value 1.x * 2^(ea + eb - 253) */
        uint32_t sig = (hi << 15) | (lo >> 17) | ((lo & 0x1FFFFu) != 0u);
        return round_pack(sign, ea + eb - 126, sig);
    }
    uint32_t sig = (hi << 16) | (lo >> 16) | ((lo & 0xFFFFu) != 0u);
    return round_pack(sign, ea + eb - 127, sig);
}

static uint32_t sf_from_u32(uint32_t sign, uint32_t u)
{
    if (u == 0u) {
        return 0u;
    }
    int32_t msb = 31;
    while ((u >> msb) == 0u) {
        msb--;
    }
    uint32_t sig = msb == 31 ? shift_right_jam(u, 1u) : u << (30 - msb);
    return round_pack(sign, 127 + msb, sig);
}

float EMU_LIBGCC(__addsf3)(float a, float b)
{
    return sf_float(sf_add(sf_bits(a), sf_bits(b)));
}

float EMU_LIBGCC(__subsf3)(float a, float b)
{
    return sf_float(sf_add(sf_bits(a), sf_bits(b) ^ SF_SIGN));
}

float EMU_LIBGCC(__mulsf3)(float a, float b)
{
    return sf_float(sf_mul(sf_bits(a), sf_bits(b)));
}

float EMU_LIBGCC(__floatsisf)(int32_t i)
{
    return i < 0 ? sf_float(sf_from_u32(SF_SIGN, 0u - (uint32_t)i))
                 : sf_float(sf_from_u32(0u, (uint32_t)i));
}

float EMU_LIBGCC(__floatunsisf)(uint32_t u)
{
    return sf_float(sf_from_u32(0u, u));
}

#ifdef EMU_LIBGCC_FULL
static uint32_t sf_div(uint32_t a, uint32_t b)
{
    if (sf_is_nan(a)) {
        return a | SF_QUIET_BIT;
    }
    if (sf_is_nan(b)) {
        return b | SF_QUIET_BIT;
    }
    uint32_t sign = (a ^ b) & SF_SIGN;
    uint32_t mag_a = a & ~SF_SIGN, mag_b = b & ~SF_SIGN;
    if (mag_a == SF_INF) {
        return mag_b == SF_INF ? SF_QNAN : (sign | SF_INF);
    }
    if (mag_b == SF_INF) {
        return sign;
    }
    if (mag_b == 0u) {
        return mag_a == 0u ? SF_QNAN : (sign | SF_INF);
    }
    if (mag_a == 0u) {
        return sign;
    }
    int32_t ea, eb;
    uint64_t ma = unpack(a, &ea), mb = unpack(b, &eb);
    /* q = (ma / mb) * 2^31 in (2^30, 2^32); a / b = q * 2^(ea - eb - 31) */
    uint64_t r;
    uint64_t q = EMU_UDIVMODDI4(ma << 31, mb, &r);
    uint32_t sig;
    int32_t e = ea - eb + 126;
    if (q >= ((uint64_t)1 << 31)) {
        sig = (uint32_t)(q >> 1) | (uint32_t)(q & 1u) | (r != 0u);
        e += 1;
    } else {
        sig = (uint32_t)q | (r != 0u);
    }
    return round_pack(sign, e, sig);
}

float EMU_LIBGCC(__divsf3)(float a, float b)
{
    return sf_float(sf_div(sf_bits(a), sf_bits(b)));
}
#endif
