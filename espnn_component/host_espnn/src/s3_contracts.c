/*
 * Stand-ins for ESP-NN's ESP32-S3 and ANSI kernel names (ESPNN_HOST_S3_CONTRACTS, test builds
 * only; see esp_nn.h).  The contracts restate what the S3 kernels compute bit-exactly, as
 * measured on the emulated ESP32-S3 (docs/engine.md, "ESP32-S3 kernels"): they are written
 * out here again, on purpose, so that the engine's routing is checked against an independent
 * statement of them.
 */
#ifdef ESPNN_HOST_S3_CONTRACTS
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "esp_nn.h"

static void require(int ok)
{
    if (!ok) {
        abort();
    }
}

static int aligned(const void *p, uintptr_t a)
{
    return ((uintptr_t)p % a) == 0u;
}

/* windows inside the input padded by pad_wd/pad_ht on both sides */
static int fits(uint32_t w, uint32_t h, uint32_t ow, uint32_t oh, uint32_t sw, uint32_t sh,
                uint32_t kw, uint32_t kh, uint32_t pw, uint32_t ph)
{
    return (ow - 1u) * sw + kw <= w + 2u * pw && (oh - 1u) * sh + kh <= h + 2u * ph;
}

#define MUL_ARGS a, b, ao, bo, out, oo, m, s, lo, hi, n
#define MUL_PARAMS                                                                            \
    const int8_t *a, const int8_t *b, const int32_t ao, const int32_t bo, int8_t *out,        \
        const int32_t oo, const int32_t m, const int32_t s, const int32_t lo, const int32_t hi, \
        const int32_t n
void esp_nn_mul_elementwise_s8_esp32s3(MUL_PARAMS)
{
    /* only the SIMD loop: 8 at a time, both inputs 16-byte aligned */
    require(n >= 8 && n % 8 == 0 && aligned(a, 16u) && aligned(b, 16u));
    esp_nn_mul_elementwise_s8(MUL_ARGS);
}
void esp_nn_mul_elementwise_s8_ansi(MUL_PARAMS)
{
    esp_nn_mul_elementwise_s8(MUL_ARGS);
}

#define CONV_ARGS in_d, in, f_d, f, bias, out_d, out, cp, q
#define CONV_PARAMS(params_t)                                                                  \
    const data_dims_t *in_d, const int8_t *in, const data_dims_t *f_d, const int8_t *f,        \
        const int32_t *bias, const data_dims_t *out_d, int8_t *out, const params_t *cp,        \
        const quant_data_t *q
#define CONV_CONTRACT                                                                          \
    require((cp->padding.width == 0 && cp->padding.height == 0) ||                            \
            fits(in_d->width, in_d->height, out_d->width, out_d->height, cp->stride.width,     \
                 cp->stride.height, f_d->width, f_d->height, cp->padding.width,                \
                 cp->padding.height))
/* ESP-NN 1.2.3's S3 conv returns without computing on a NULL scratch buffer, except on its
 * 1x1 path, which has no check and writes nothing for fewer than 8 positions; its S3
 * depthwise always returns.  The engine passes NULL for scratch_size 0, so an op without
 * scratch must reach the ANSI kernel (RAM-first kernels, espnn_s3_kernels.h). */
static int s3_conv_runs_without_scratch(const data_dims_t *in_d, const data_dims_t *f_d,
                                        const conv_params_t *cp)
{
    return f_d->width == 1 && f_d->height == 1 && cp->padding.width == 0 &&
           cp->padding.height == 0 && cp->stride.width == 1 && cp->stride.height == 1 &&
           in_d->width * in_d->height < 8;
}
void esp_nn_conv_s8_esp32s3(CONV_PARAMS(conv_params_t))
{
    CONV_CONTRACT;
    require(hn_conv_scratch_buf() != NULL || s3_conv_runs_without_scratch(in_d, f_d, cp));
    esp_nn_conv_s8(CONV_ARGS);
}
void esp_nn_conv_s8_ansi(CONV_PARAMS(conv_params_t))
{
    esp_nn_conv_s8(CONV_ARGS);
}
void esp_nn_depthwise_conv_s8_esp32s3(CONV_PARAMS(dw_conv_params_t))
{
    CONV_CONTRACT;
    require(hn_depthwise_conv_scratch_buf() != NULL);
    esp_nn_depthwise_conv_s8(CONV_ARGS);
}
void esp_nn_depthwise_conv_s8_ansi(CONV_PARAMS(dw_conv_params_t))
{
    esp_nn_depthwise_conv_s8(CONV_ARGS);
}

#define POOL_ARGS in, w, h, out, ow, oh, sw, sh, kw, kh, pw, ph, lo, hi, c
#define POOL_PARAMS                                                                            \
    const int8_t *in, const uint16_t w, const uint16_t h, int8_t *out, const uint16_t ow,      \
        const uint16_t oh, const uint16_t sw, const uint16_t sh, const uint16_t kw,            \
        const uint16_t kh, const uint16_t pw, const uint16_t ph, const int32_t lo,             \
        const int32_t hi, const uint16_t c
void esp_nn_max_pool_s8_esp32s3(POOL_PARAMS)
{
    require(c % 4u == 0u);
    esp_nn_max_pool_s8(POOL_ARGS);
}
void esp_nn_max_pool_s8_ansi(POOL_PARAMS)
{
    esp_nn_max_pool_s8(POOL_ARGS);
}
void esp_nn_avg_pool_s8_esp32s3(POOL_PARAMS)
{
    require(fits(w, h, ow, oh, sw, sh, kw, kh, pw, ph));
    esp_nn_avg_pool_s8(POOL_ARGS);
}
void esp_nn_avg_pool_s8_ansi(POOL_PARAMS)
{
    esp_nn_avg_pool_s8(POOL_ARGS);
}

#define FC_ARGS in, io, k, f, fo, bias, out, n, oo, s, m, lo, hi
#define FC_PARAMS(scale_t)                                                                     \
    const int8_t *in, const int32_t io, const uint16_t k, const int8_t *f, const int32_t fo,   \
        const int32_t *bias, int8_t *out, const uint16_t n, const int32_t oo, scale_t s,       \
        scale_t m, const int32_t lo, const int32_t hi
void esp_nn_fully_connected_s8_esp32s3(FC_PARAMS(const int32_t))
{
    require(aligned(in, 8u));
    esp_nn_fully_connected_s8(FC_ARGS);
}
void esp_nn_fully_connected_s8_ansi(FC_PARAMS(const int32_t))
{
    esp_nn_fully_connected_s8(FC_ARGS);
}
void esp_nn_fully_connected_per_ch_s8_esp32s3(FC_PARAMS(const int32_t *))
{
    require(aligned(in, 8u));
    esp_nn_fully_connected_per_ch_s8(FC_ARGS);
}
void esp_nn_fully_connected_per_ch_s8_ansi(FC_PARAMS(const int32_t *))
{
    esp_nn_fully_connected_per_ch_s8(FC_ARGS);
}
#else
typedef int espnn_host_s3_contracts_unused; /* ISO C: a translation unit is not empty */
#endif
