/*
 * The payload format's integer arithmetic (docs/payload-format.md, "Arithmetic") for the
 * engine's own kernels.  Free of undefined behaviour: no signed overflow, no right shift of a
 * negative value, no `1 << 31` in int32.  Must agree bit for bit with ESP-NN's requantisation.
 */
#ifndef ESPNN_FIXEDPOINT_H
#define ESPNN_FIXEDPOINT_H

#include <stdint.h>

/* SaturatingRoundingDoublingHighMul */
static inline int32_t espnn_srdhm(int32_t a, int32_t b)
{
    if (a == INT32_MIN && b == INT32_MIN) {
        return INT32_MAX;
    }
    int64_t p = (int64_t)a * (int64_t)b;
    int64_t s = p + (p >= 0 ? ((int64_t)1 << 30) : (1 - ((int64_t)1 << 30)));
    return (int32_t)(s >= 0 ? (s >> 31) : -((-s) >> 31));
}

/* RoundingDivideByPOT for 0 <= e <= 31 (round half away from zero) */
static inline int32_t espnn_rdbp(int32_t x, int32_t e)
{
    uint32_t mask = e == 0 ? 0u : (0xFFFFFFFFu >> (32 - e));
    uint32_t rem = (uint32_t)x & mask;
    uint32_t threshold = (mask >> 1) + (x < 0 ? 1u : 0u);
    int32_t r = x >= 0 ? (int32_t)((uint32_t)x >> e) : -(int32_t)((uint32_t)~x >> e) - 1;
    return rem > threshold ? r + 1 : r;
}

/* requant(x, mult, shift) with shift in [-31, 0] (validated at prepare) */
static inline int32_t espnn_requant(int32_t x, int32_t mult, int32_t shift)
{
    return espnn_rdbp(espnn_srdhm(x, mult), -shift);
}

/* TFLite's MultiplyByQuantizedMultiplier with shift in [-31, ESPNN_PRELU_SHIFT_MAX]: a positive
 * shift multiplies x by 2^shift first (the caller guarantees the product fits in int32, so
 * the multiplication is exact and defined). */
static inline int32_t espnn_requant_ls(int32_t x, int32_t mult, int32_t shift)
{
    if (shift > 0) {
        return espnn_srdhm(x * (int32_t)((uint32_t)1 << shift), mult);
    }
    return espnn_rdbp(espnn_srdhm(x, mult), -shift);
}

static inline int32_t espnn_clamp(int32_t v, int32_t lo, int32_t hi)
{
    return v < lo ? lo : (v > hi ? hi : v);
}

#endif /* ESPNN_FIXEDPOINT_H */
