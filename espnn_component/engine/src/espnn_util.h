/*
 * Engine-private helpers: little-endian byte readers (the payload may sit at any address and
 * Xtensa traps on unaligned multi-byte loads, so header and table fields are always read a
 * byte at a time) and overflow-checked 32-bit size arithmetic (size_t is 32 bits on the chip).
 */
#ifndef ESPNN_UTIL_H
#define ESPNN_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint16_t espnn_rd_u16(const uint8_t *p)
{
    return (uint16_t)((uint16_t)p[0] | (uint16_t)((uint16_t)p[1] << 8));
}

static inline uint32_t espnn_rd_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
           ((uint32_t)p[3] << 24);
}

static inline int32_t espnn_u32_to_i32(uint32_t u)
{
    return u <= 0x7FFFFFFFu ? (int32_t)u : (int32_t)(u - 0x80000000u) - INT32_MAX - 1;
}

static inline int32_t espnn_rd_i32(const uint8_t *p)
{
    return espnn_u32_to_i32(espnn_rd_u32(p));
}

static inline float espnn_bits_to_f32(uint32_t bits)
{
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* a + b, false when it does not fit in 32 bits */
static inline bool espnn_add_u32(uint32_t a, uint32_t b, uint32_t *out)
{
    if (a > UINT32_MAX - b) {
        return false;
    }
    *out = a + b;
    return true;
}

/* a * b, false when it does not fit in 32 bits */
static inline bool espnn_mul_u32(uint32_t a, uint32_t b, uint32_t *out)
{
    if (a != 0 && b > UINT32_MAX / a) {
        return false;
    }
    *out = a * b;
    return true;
}

static inline uint32_t espnn_align_up(uint32_t v, uint32_t a) /* v small enough, a pow2 */
{
    return (v + (a - 1u)) & ~(a - 1u);
}

/* [a0, a0+an) and [b0, b0+bn) share a byte; 64-bit ends so nothing wraps */
static inline bool espnn_ranges_overlap(uint32_t a0, uint32_t an, uint32_t b0, uint32_t bn)
{
    uint64_t a1 = (uint64_t)a0 + an;
    uint64_t b1 = (uint64_t)b0 + bn;
    return (uint64_t)a0 < b1 && (uint64_t)b0 < a1;
}

#endif /* ESPNN_UTIL_H */
