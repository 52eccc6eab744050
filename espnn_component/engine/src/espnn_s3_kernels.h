/*
 * ESP-NN's ESP32-S3 kernels, called only with operands they compute bit-exactly (private).
 *
 * Measured by running ESP-NN 1.2.3's S3 assembly beside the engine's twin on Espressif's QEMU
 * (emulated/esp32s3.py, docs/engine.md "ESP32-S3 kernels"): outside these contracts the S3
 * kernels differ from ESP-NN's own ANSI kernels (and the twin), so the engine hands those
 * operands to the ANSI kernel, which every S3 build compiles too:
 *
 *   mul       esp_nn_mul_elementwise_s8_esp32s3 runs its SIMD loop on 8 elements at a time when
 *             size >= 8 and both inputs are 16-byte aligned; everything else (size < 8, an
 *             unaligned input, the size % 8 tail) goes through a scalar leftover path that rounds
 *             wrongly (+-1 in 10-16 % of elements): the SIMD prefix runs on the S3 kernel, the
 *             rest on the ANSI kernel;
 *   fc        the s16 path of esp_nn_fully_connected[_per_ch]_s8_esp32s3 (taken for row_len < 16,
 *             a filter offset, or input not 16-aligned) loads the input with ee.vld.l.64.ip,
 *             which ignores the low 3 address bits: input rows not 8-byte aligned go to ANSI;
 *   max pool  esp_nn_max_pool_s8_esp32s3 is assembly for channels % 4 == 0 only (its header
 *             says so; other counts leave outputs unwritten): other counts go to ANSI;
 *   conv, depthwise
 *             ESP-NN receives only the top/left padding; with either non-zero its S3
 *             dispatchers pad the input by the same amount on the right/bottom, so when the
 *             windows reach further (a right/bottom pad larger than the left/top one) the
 *             last windows read the next row instead of padding: such geometries go to ANSI
 *             (with both zero the dispatchers pad the end themselves, correctly);
 *   avg pool  the S3 assembly (channels % 4 == 0) leaves outputs unwritten when windows reach
 *             past the input plus the top/left padding mirrored (ceil mode without padding):
 *             those go to ANSI.
 *
 * On every other build these are the plain ESP-NN calls.  ESPNN_S3_KERNELS=1 on a host build
 * with ESPNN_HOST_S3_CONTRACTS calls host_espnn's stand-ins of the _esp32s3/_ansi names, whose
 * _esp32s3 ones abort on any operand outside these contracts (tests/test_s3_contracts.py).
 */
#ifndef ESPNN_S3_KERNELS_H
#define ESPNN_S3_KERNELS_H

#include <stdint.h>

#include "espnn_esp_nn.h"

#ifndef ESPNN_S3_KERNELS
#if defined(CONFIG_IDF_TARGET_ESP32S3) && defined(CONFIG_NN_OPTIMIZED)
#define ESPNN_S3_KERNELS 1
#else
#define ESPNN_S3_KERNELS 0
#endif
#endif

#if ESPNN_S3_KERNELS
#define ESPNN_S3_MUL_STEP 8u
#define ESPNN_S3_MAX_POOL_CHANNELS 4u

static inline int espnn_s3_aligned(const void *p, uintptr_t a)
{
    return ((uintptr_t)p & (a - 1u)) == 0u;
}

/* How many leading elements the S3 mul computes in its SIMD loop (0: none). */
static inline int32_t espnn_s3_mul_simd_len(const int8_t *a, const int8_t *b, int32_t n)
{
    if (n < (int32_t)ESPNN_S3_MUL_STEP || !espnn_s3_aligned(a, 16u) || !espnn_s3_aligned(b, 16u)) {
        return 0;
    }
    return n & ~(int32_t)(ESPNN_S3_MUL_STEP - 1u);
}
#endif

/* Do the windows stay inside the input padded by pad_left/pad_top on both sides? */
static inline int espnn_windows_fit_mirrored_pad(uint32_t w, uint32_t h, uint32_t ow, uint32_t oh,
                                                 uint32_t sw, uint32_t sh, uint32_t kw,
                                                 uint32_t kh, uint32_t pl, uint32_t pt)
{
    return (ow - 1u) * sw + kw <= w + 2u * pl && (oh - 1u) * sh + kh <= h + 2u * pt;
}

static inline int espnn_s3_conv_ok(const data_dims_t *in, const data_dims_t *filt,
                                   const data_dims_t *out, uint32_t sw, uint32_t sh, uint32_t pl,
                                   uint32_t pt)
{
    return (pl == 0u && pt == 0u) ||
           espnn_windows_fit_mirrored_pad(in->width, in->height, out->width, out->height, sw, sh,
                                          filt->width, filt->height, pl, pt);
}

static inline void espnn_conv_s8(const data_dims_t *in_dims, const int8_t *in,
                                 const data_dims_t *filt_dims, const int8_t *filt,
                                 const int32_t *bias, const data_dims_t *out_dims, int8_t *out,
                                 const conv_params_t *cp, const quant_data_t *q)
{
#if ESPNN_S3_KERNELS
    if (!espnn_s3_conv_ok(in_dims, filt_dims, out_dims, cp->stride.width, cp->stride.height,
                          cp->padding.width, cp->padding.height)) {
        esp_nn_conv_s8_ansi(in_dims, in, filt_dims, filt, bias, out_dims, out, cp, q);
    } else {
        esp_nn_conv_s8_esp32s3(in_dims, in, filt_dims, filt, bias, out_dims, out, cp, q);
    }
#else
    esp_nn_conv_s8(in_dims, in, filt_dims, filt, bias, out_dims, out, cp, q);
#endif
}

static inline void espnn_depthwise_conv_s8(const data_dims_t *in_dims, const int8_t *in,
                                           const data_dims_t *filt_dims, const int8_t *filt,
                                           const int32_t *bias, const data_dims_t *out_dims,
                                           int8_t *out, const dw_conv_params_t *cp,
                                           const quant_data_t *q)
{
#if ESPNN_S3_KERNELS
    if (!espnn_s3_conv_ok(in_dims, filt_dims, out_dims, cp->stride.width, cp->stride.height,
                          cp->padding.width, cp->padding.height)) {
        esp_nn_depthwise_conv_s8_ansi(in_dims, in, filt_dims, filt, bias, out_dims, out, cp, q);
    } else {
        esp_nn_depthwise_conv_s8_esp32s3(in_dims, in, filt_dims, filt, bias, out_dims, out, cp, q);
    }
#else
    esp_nn_depthwise_conv_s8(in_dims, in, filt_dims, filt, bias, out_dims, out, cp, q);
#endif
}

/*
 * RAM-first kernels (custom_executorch_optimize = ram): a CONV2D/DEPTHWISE_CONV2D whose
 * payload scratch_size is 0 although this chip's optimised ESP-NN kernel would take scratch
 * for its operands (scratch_rules.c) runs ESP-NN's ANSI kernel, which takes none.  The lowering
 * chooses that where the optimised kernel's scratch sets the arena's peak.  On every other
 * build esp_nn_*_s8 takes no scratch for such an op, so the plain call is the ANSI choice.
 */
#if ESPNN_S3_KERNELS || (defined(CONFIG_IDF_TARGET_ESP32P4) && defined(CONFIG_NN_OPTIMIZED))
#define ESPNN_HAS_ANSI_NAMES 1
#else
#define ESPNN_HAS_ANSI_NAMES 0
#endif

static inline void espnn_conv_s8_ansi(const data_dims_t *in_dims, const int8_t *in,
                                      const data_dims_t *filt_dims, const int8_t *filt,
                                      const int32_t *bias, const data_dims_t *out_dims, int8_t *out,
                                      const conv_params_t *cp, const quant_data_t *q)
{
#if ESPNN_HAS_ANSI_NAMES
    esp_nn_conv_s8_ansi(in_dims, in, filt_dims, filt, bias, out_dims, out, cp, q);
#else
    esp_nn_conv_s8(in_dims, in, filt_dims, filt, bias, out_dims, out, cp, q);
#endif
}

static inline void espnn_depthwise_conv_s8_ansi(const data_dims_t *in_dims, const int8_t *in,
                                                const data_dims_t *filt_dims, const int8_t *filt,
                                                const int32_t *bias, const data_dims_t *out_dims,
                                                int8_t *out, const dw_conv_params_t *cp,
                                                const quant_data_t *q)
{
#if ESPNN_HAS_ANSI_NAMES
    esp_nn_depthwise_conv_s8_ansi(in_dims, in, filt_dims, filt, bias, out_dims, out, cp, q);
#else
    esp_nn_depthwise_conv_s8(in_dims, in, filt_dims, filt, bias, out_dims, out, cp, q);
#endif
}

static inline void espnn_avg_pool_s8(const int8_t *in, uint16_t w, uint16_t h, int8_t *out,
                                     uint16_t ow, uint16_t oh, uint16_t sw, uint16_t sh,
                                     uint16_t kw, uint16_t kh, uint16_t pw, uint16_t ph,
                                     int32_t act_min, int32_t act_max, uint16_t c)
{
#if ESPNN_S3_KERNELS
    if (!espnn_windows_fit_mirrored_pad(w, h, ow, oh, sw, sh, kw, kh, pw, ph)) {
        esp_nn_avg_pool_s8_ansi(in, w, h, out, ow, oh, sw, sh, kw, kh, pw, ph, act_min, act_max, c);
    } else {
        esp_nn_avg_pool_s8_esp32s3(in, w, h, out, ow, oh, sw, sh, kw, kh, pw, ph, act_min, act_max,
                                   c);
    }
#else
    esp_nn_avg_pool_s8(in, w, h, out, ow, oh, sw, sh, kw, kh, pw, ph, act_min, act_max, c);
#endif
}

static inline void espnn_mul_s8(const int8_t *a, const int8_t *b, int32_t a_off, int32_t b_off,
                                int8_t *out, int32_t out_off, int32_t mult, int32_t shift,
                                int32_t act_min, int32_t act_max, int32_t n)
{
#if ESPNN_S3_KERNELS
    const int32_t simd = espnn_s3_mul_simd_len(a, b, n);
    if (simd > 0) {
        esp_nn_mul_elementwise_s8_esp32s3(a, b, a_off, b_off, out, out_off, mult, shift, act_min,
                                          act_max, simd);
    }
    if (n > simd) {
        esp_nn_mul_elementwise_s8_ansi(a + simd, b + simd, a_off, b_off, out + simd, out_off,
                                       mult, shift, act_min, act_max, n - simd);
    }
#else
    esp_nn_mul_elementwise_s8(a, b, a_off, b_off, out, out_off, mult, shift, act_min, act_max, n);
#endif
}

static inline void espnn_fc_s8(const int8_t *in, int32_t in_off, uint16_t k, const int8_t *filter,
                               int32_t filter_off, const int32_t *bias, int8_t *out, uint16_t n_out,
                               int32_t out_off, int32_t shift, int32_t mult, int32_t act_min,
                               int32_t act_max)
{
#if ESPNN_S3_KERNELS
    if (!espnn_s3_aligned(in, 8u)) {
        esp_nn_fully_connected_s8_ansi(in, in_off, k, filter, filter_off, bias, out, n_out,
                                       out_off, shift, mult, act_min, act_max);
    } else {
        esp_nn_fully_connected_s8_esp32s3(in, in_off, k, filter, filter_off, bias, out, n_out,
                                          out_off, shift, mult, act_min, act_max);
    }
#else
    esp_nn_fully_connected_s8(in, in_off, k, filter, filter_off, bias, out, n_out, out_off, shift,
                              mult, act_min, act_max);
#endif
}

static inline void espnn_fc_per_ch_s8(const int8_t *in, int32_t in_off, uint16_t k,
                                      const int8_t *filter, const int32_t *bias, int8_t *out,
                                      uint16_t n_out, int32_t out_off, const int32_t *shift,
                                      const int32_t *mult, int32_t act_min, int32_t act_max)
{
#if ESPNN_S3_KERNELS
    if (!espnn_s3_aligned(in, 8u)) {
        esp_nn_fully_connected_per_ch_s8_ansi(in, in_off, k, filter, 0, bias, out, n_out, out_off,
                                              shift, mult, act_min, act_max);
    } else {
        esp_nn_fully_connected_per_ch_s8_esp32s3(in, in_off, k, filter, 0, bias, out, n_out,
                                                 out_off, shift, mult, act_min, act_max);
    }
#else
    esp_nn_fully_connected_per_ch_s8(in, in_off, k, filter, 0, bias, out, n_out, out_off, shift,
                                     mult, act_min, act_max);
#endif
}

static inline void espnn_max_pool_s8(const int8_t *in, uint16_t w, uint16_t h, int8_t *out,
                                     uint16_t ow, uint16_t oh, uint16_t sw, uint16_t sh,
                                     uint16_t kw, uint16_t kh, uint16_t pw, uint16_t ph,
                                     int32_t act_min, int32_t act_max, uint16_t c)
{
#if ESPNN_S3_KERNELS
    if (c % ESPNN_S3_MAX_POOL_CHANNELS != 0u) {
        esp_nn_max_pool_s8_ansi(in, w, h, out, ow, oh, sw, sh, kw, kh, pw, ph, act_min, act_max, c);
    } else {
        esp_nn_max_pool_s8_esp32s3(in, w, h, out, ow, oh, sw, sh, kw, kh, pw, ph, act_min, act_max,
                                   c);
    }
#else
    esp_nn_max_pool_s8(in, w, h, out, ow, oh, sw, sh, kw, kh, pw, ph, act_min, act_max, c);
#endif
}

#endif /* ESPNN_S3_KERNELS_H */
