/*
 * Fixed-point helpers shared by the host ESP-NN kernels (private).
 *
 * TFLite's requantisation as the payload format spells it out (docs/payload-format.md,
 * "Arithmetic"), written without undefined behaviour: no signed overflow, no shifts of
 * negative values, no `1 << 31` in int32.
 */
#ifndef ESPNN_HOST_HN_COMMON_H
#define ESPNN_HOST_HN_COMMON_H

#include <stdint.h>

/* Test builds define ESPNN_HOST_STRICT: a kernel called with arguments the engine promises
 * never to pass (a grouped filter to the dense convolution, a dilation, a size beyond
 * ESP-NN's uint16/int16 ranges) aborts, so the engine's tests prove the promise. */
#ifdef ESPNN_HOST_STRICT
#include <stdlib.h>
#define HN_REQUIRE(cond) \
    do { \
        if (!(cond)) { \
            abort(); \
        } \
    } while (0)
#else
#define HN_REQUIRE(cond) ((void)0)
#endif

/* The reference kernels need no scratch.  Tests set this to exercise the engine's check that
 * a payload carries as much scratch as the ESP-NN build asks for. */
#ifndef HN_TEST_SCRATCH_BYTES
#define HN_TEST_SCRATCH_BYTES 0
#endif

/* Two's complement wrap of a 64-bit value to int32, spelled portably: what a 32-bit
 * register holds after an overflowing add on the device. */
static inline int32_t hn_wrap32(int64_t v)
{
    uint32_t u = (uint32_t)((uint64_t)v & 0xFFFFFFFFu);
    return u <= 0x7FFFFFFFu ? (int32_t)u : (int32_t)(int64_t)((int64_t)u - 0x100000000LL);
}

/* SaturatingRoundingDoublingHighMul: round((a*b) / 2^31), ties away from zero. */
static inline int32_t hn_srdhm(int32_t a, int32_t b)
{
    if (a == INT32_MIN && b == INT32_MIN) {
        return INT32_MAX;
    }
    int64_t p = (int64_t)a * (int64_t)b;
    int64_t s = p + (p >= 0 ? ((int64_t)1 << 30) : (1 - ((int64_t)1 << 30)));
    /* C's truncating division by 2^31, without shifting a negative number */
    int64_t q = s >= 0 ? (s >> 31) : -((-s) >> 31);
    return (int32_t)q;
}

/* floor(x / 2^e) for 0 <= e <= 31, portable (no right shift of a negative value). */
static inline int32_t hn_floor_shift(int32_t x, int e)
{
    return x >= 0 ? (int32_t)((uint32_t)x >> e) : -(int32_t)((uint32_t)~x >> e) - 1;
}

/* RoundingDivideByPOT, 0 <= e <= 31: x / 2^e rounded half away from zero. */
static inline int32_t hn_rdbp(int32_t x, int e)
{
    uint32_t mask = e == 0 ? 0u : (0xFFFFFFFFu >> (32 - e));
    uint32_t remainder = (uint32_t)x & mask;
    uint32_t threshold = (mask >> 1) + (x < 0 ? 1u : 0u);
    int32_t r = hn_floor_shift(x, e);
    return remainder > threshold ? r + 1 : r;
}

/* RDBP by -shift for a shift <= 0 (clamped to the defined range). */
static inline int32_t hn_rdbp_neg(int32_t x, int32_t shift)
{
    return hn_rdbp(x, shift >= 0 ? 0 : (shift < -31 ? 31 : (int)-shift));
}

/* ESP-NN's multiply-by-quantized-multiplier: a positive shift scales x up first. */
static inline int32_t hn_requant(int32_t x, int32_t mult, int32_t shift)
{
    if (shift > 0) {
        x = hn_wrap32((int64_t)x * (int64_t)((uint32_t)1 << (shift > 31 ? 31 : shift)));
        return hn_srdhm(x, mult);
    }
    return hn_rdbp_neg(hn_srdhm(x, mult), shift);
}

static inline int32_t hn_clamp(int32_t v, int32_t lo, int32_t hi)
{
    return v < lo ? lo : (v > hi ? hi : v);
}

/* Add the output offset, then clamp; in 64 bits so no argument can overflow. */
static inline int8_t hn_out(int32_t v, int32_t out_offset, int32_t lo, int32_t hi)
{
    int64_t r = (int64_t)v + out_offset;
    r = r < lo ? lo : (r > hi ? hi : r);
    return (int8_t)r;
}

#endif /* ESPNN_HOST_HN_COMMON_H */
