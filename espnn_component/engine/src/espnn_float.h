/*
 * PyTorch's float32 quantize (quantize_per_tensor: q = clamp(round_half_even(x * (1/scale)) +
 * zp)), shared by QUANTIZE and the float32 average pool.  No libm: the rounding is done here.
 *
 * The engine's float kernels must round exactly as the Python reference (numpy float32) and
 * PyTorch do, on every compiler and chip: each expression is one IEEE float32 operation
 * whose result is used by something other than an addition, so no compiler may fuse a
 * multiply and an add into one FMA (GCC contracts by default in GNU C modes, and ESP32,
 * ESP32-S3 and ESP32-P4 have fused multiply-add instructions).  Never build the engine with
 * -ffast-math.
 */
#ifndef ESPNN_FLOAT_H
#define ESPNN_FLOAT_H

#include <stdint.h>

/* round half to even of a finite float already clamped to |v| < 2^22 */
static inline int32_t espnn_round_half_even(float v)
{
    int32_t t = (int32_t)v; /* truncates toward zero */
    const float frac = v - (float)t; /* exact for |v| < 2^22 */
    if (frac > 0.5f || (frac == 0.5f && (t & 1))) {
        t += 1;
    } else if (frac < -0.5f || (frac == -0.5f && (t & 1))) {
        t -= 1;
    }
    return t;
}

/* int8 of x quantized with the reciprocal inv_scale (itself rounded to float32) and zp */
static inline int8_t espnn_quantize_f32(float x, float inv_scale, int32_t zp)
{
    const float v = x * inv_scale; /* one float32 rounding, as the reference */
    if (v != v) {
        return (int8_t)zp;
    }
    /* beyond +-512 the int8 clamp decides whatever the rounding; keeps the cast defined */
    if (v >= 512.0f) {
        return 127;
    }
    if (v <= -512.0f) {
        return -128;
    }
    const int32_t q = espnn_round_half_even(v) + zp;
    return (int8_t)(q < -128 ? -128 : (q > 127 ? 127 : q));
}

#endif /* ESPNN_FLOAT_H */
