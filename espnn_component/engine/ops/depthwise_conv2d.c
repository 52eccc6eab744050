/*
 * DEPTHWISE_CONV2D.  Undilated ones run on ESP-NN's esp_nn_depthwise_conv_s8 (one call per
 * batch image); dilated ones, and geometries whose window origin would not fit the int16
 * ESP-NN's reference kernel keeps it in, run on the engine's own kernel.  The payload's
 * scratch_size chooses among ESP-NN's: the whole map at once when it covers what the kernel
 * touches, bands of output rows when it covers less but a band fits (docs/engine.md,
 * "Depthwise bands"), ESP-NN's ANSI kernel when it is 0 (RAM first).
 */
#include <stddef.h>
#include <string.h>

#include "espnn_s3_kernels.h"
#include "espnn_conv_common.h"
#include "espnn_fixedpoint.h"

enum { DW_KERNEL_ESPNN = 1, DW_KERNEL_GENERIC = 2, DW_KERNEL_ANSI = 3, DW_KERNEL_BANDS = 4 };

typedef struct dw_state {
    espnn_conv_geom_t g;
    uint32_t band_rows; /* output rows per band (DW_KERNEL_BANDS), else 0 */
} dw_state_t;
ESPNN_FAMILY_STATE(dw_state_t, ESPNN_STATE_BYTES_DEPTHWISE_CONV2D);

#define INT16_SPAN 32767u

static void espnn_dims(const espnn_conv_geom_t *g, data_dims_t *in, data_dims_t *filt,
                       data_dims_t *out, dw_conv_params_t *cp)
{
    in->width = g->w;
    in->height = g->h;
    in->channels = g->cin;
    in->extra = 1;
    filt->width = g->kw;
    filt->height = g->kh;
    filt->channels = g->cout;
    filt->extra = 1;
    out->width = g->ow;
    out->height = g->oh;
    out->channels = g->cout;
    out->extra = 1;
    cp->in_offset = g->in_offset;
    cp->out_offset = g->out_offset;
    cp->ch_mult = g->groups;
    cp->stride.width = g->stride_w;
    cp->stride.height = g->stride_h;
    cp->padding.width = g->pad_left;
    cp->padding.height = g->pad_top;
    cp->dilation.width = 1;
    cp->dilation.height = 1;
    cp->activation.min = g->act_min;
    cp->activation.max = g->act_max;
}

static espnn_status_t prepare(espnn_prep_t *p)
{
    dw_state_t *s = (dw_state_t *)p->data;
    s->band_rows = 0u;
    espnn_status_t st = espnn_prep_conv(p, true, &s->g);
    if (st != ESPNN_OK) {
        return st;
    }
    const espnn_conv_geom_t *g = &s->g;
    const uint32_t span_h = (uint32_t)g->h + g->pad_top + g->pad_bottom;
    const uint32_t span_w = (uint32_t)g->w + g->pad_left + g->pad_right;
    if (g->dil_h != 1 || g->dil_w != 1 || span_h > INT16_SPAN || span_w > INT16_SPAN) {
        p->kernel = DW_KERNEL_GENERIC;
        return ESPNN_OK;
    }
    p->kernel = DW_KERNEL_ESPNN;
    /* what the kernel touches (scratch_rules.c), not what ESP-NN's size function reserves */
    espnn_scratch_geom_t sg;
    espnn_scratch_geom_of(p, g, &sg);
    const uint32_t need = espnn_depthwise_scratch_touched(ESPNN_BUILD_TARGET, &sg);
    if (p->scratch_size == 0u && need > 0u) {
        /* RAM first: ESP-NN's ANSI kernel, no scratch (espnn_s3_kernels.h) */
        p->kernel = DW_KERNEL_ANSI;
        return ESPNN_OK;
    }
    if (p->scratch_size < need && espnn_depthwise_bandable(ESPNN_BUILD_TARGET, &sg)) {
        const int32_t rows = espnn_depthwise_band_rows(ESPNN_BUILD_TARGET, &sg, p->scratch_size);
        if (rows == 0) {
            /* not even one output row's band fits: name what the smallest band takes */
            return espnn_prep_scratch(p, espnn_depthwise_band_scratch(ESPNN_BUILD_TARGET, &sg, 1));
        }
        p->kernel = DW_KERNEL_BANDS;
        s->band_rows = (uint32_t)rows;
        return ESPNN_OK;
    }
    return espnn_prep_scratch(p, need);
}

static void eval_espnn(const espnn_exec_t *x, const espnn_conv_geom_t *g, int ansi)
{
    data_dims_t in, filt, out;
    dw_conv_params_t cp;
    espnn_dims(g, &in, &filt, &out, &cp);
    quant_data_t q = {(int32_t *)(uintptr_t)x->in[4], (int32_t *)(uintptr_t)x->in[3]};
    const size_t in_img = (size_t)g->h * g->w * g->cin;
    const size_t out_img = (size_t)g->oh * g->ow * g->cout;
    for (uint32_t n = 0; n < g->n; n++) {
        esp_nn_set_depthwise_conv_scratch_buf(x->scratch);
        if (ansi) {
            espnn_depthwise_conv_s8_ansi(&in, (const int8_t *)x->in[0] + n * in_img, &filt,
                                         (const int8_t *)x->in[1], (const int32_t *)x->in[2],
                                         &out, (int8_t *)x->out + n * out_img, &cp, &q);
        } else {
            espnn_depthwise_conv_s8(&in, (const int8_t *)x->in[0] + n * in_img, &filt,
                                    (const int8_t *)x->in[1], (const int32_t *)x->in[2], &out,
                                    (int8_t *)x->out + n * out_img, &cp, &q);
        }
    }
}

/* The padded input rows [iy0, iy0 + rows) of one image, columns as the band geometry has them
 * (band_w of them from -pad_left): what lies outside the image is the input zero point, which
 * the kernel's in_offset turns into 0, as ESP-NN's own padding does. */
static void fill_band(int8_t *band, const int8_t *img, const espnn_conv_geom_t *g, int32_t iy0,
                      uint32_t rows, uint32_t band_w)
{
    const int8_t zp = (int8_t)(-g->in_offset);
    const size_t ch = g->cin;
    const uint32_t left = g->pad_left < band_w ? g->pad_left : band_w;
    const uint32_t copy = band_w - left < g->w ? band_w - left : g->w;
    for (uint32_t r = 0; r < rows; r++) {
        int8_t *dst = band + (size_t)r * band_w * ch;
        const int32_t iy = iy0 + (int32_t)r;
        if (iy < 0 || iy >= (int32_t)g->h) {
            memset(dst, zp, (size_t)band_w * ch);
            continue;
        }
        memset(dst, zp, (size_t)left * ch);
        memcpy(dst + (size_t)left * ch, img + (size_t)iy * g->w * ch, (size_t)copy * ch);
        memset(dst + (size_t)(left + copy) * ch, zp, (size_t)(band_w - left - copy) * ch);
    }
}

/* Bands of band_rows output rows: each band's exact padded input is copied to the scratch
 * start and run with no padding, so ESP-NN reads it in place and its own scratch (the filter
 * copy) follows the band's, 16-byte aligned (espnn_depthwise_band_scratch). */
static void eval_bands(const espnn_exec_t *x, const dw_state_t *s)
{
    const espnn_conv_geom_t *g = &s->g;
    const uint32_t band_w = (uint32_t)g->ow * g->stride_w + g->kw - 1u;
    const uint32_t full_h = s->band_rows * g->stride_h + g->kh - 1u;
    const size_t band_bytes = ((size_t)band_w * full_h * g->cin + 15u) & ~(size_t)15u;
    int8_t *band = (int8_t *)x->scratch;
    data_dims_t in, filt, out;
    dw_conv_params_t cp;
    espnn_dims(g, &in, &filt, &out, &cp);
    cp.padding.width = 0;
    cp.padding.height = 0;
    in.width = (uint16_t)band_w;
    quant_data_t q = {(int32_t *)(uintptr_t)x->in[4], (int32_t *)(uintptr_t)x->in[3]};
    const size_t in_img = (size_t)g->h * g->w * g->cin;
    const size_t out_row = (size_t)g->ow * g->cout;
    for (uint32_t n = 0; n < g->n; n++) {
        const int8_t *img = (const int8_t *)x->in[0] + n * in_img;
        int8_t *out_img = (int8_t *)x->out + n * out_row * g->oh;
        for (uint32_t oy = 0; oy < g->oh; oy += s->band_rows) {
            const uint32_t rows = g->oh - oy < s->band_rows ? g->oh - oy : s->band_rows;
            const uint32_t in_rows = rows * g->stride_h + g->kh - 1u;
            fill_band(band, img, g, (int32_t)(oy * g->stride_h) - (int32_t)g->pad_top, in_rows,
                      band_w);
            in.height = (uint16_t)in_rows;
            out.height = (uint16_t)rows;
            esp_nn_set_depthwise_conv_scratch_buf(band + band_bytes);
            espnn_depthwise_conv_s8(&in, band, &filt, (const int8_t *)x->in[1],
                                    (const int32_t *)x->in[2], &out, out_img + oy * out_row, &cp,
                                    &q);
        }
    }
}

static void eval_generic(const espnn_exec_t *x, const espnn_conv_geom_t *g)
{
    const int8_t *input = (const int8_t *)x->in[0];
    const int8_t *filter = (const int8_t *)x->in[1];
    const int32_t *bias = (const int32_t *)x->in[2];
    const int32_t *mult = (const int32_t *)x->in[3];
    const int32_t *shift = (const int32_t *)x->in[4];
    int8_t *out = (int8_t *)x->out;
    const int32_t h = g->h, w = g->w, cin = g->cin, cm = g->groups, cout = g->cout;
    for (int32_t n = 0; n < g->n; n++) {
        const int8_t *img = input + (size_t)n * h * w * cin;
        for (int32_t oy = 0; oy < g->oh; oy++) {
            const int32_t y0 = oy * g->stride_h - g->pad_top;
            for (int32_t ox = 0; ox < g->ow; ox++) {
                const int32_t x0 = ox * g->stride_w - g->pad_left;
                for (int32_t oc = 0; oc < cout; oc++) {
                    const int32_t ic = oc / cm;
                    int32_t acc = 0;
                    for (int32_t ky = 0; ky < g->kh; ky++) {
                        const int32_t iy = y0 + ky * g->dil_h;
                        if (iy < 0 || iy >= h) {
                            continue;
                        }
                        for (int32_t kx = 0; kx < g->kw; kx++) {
                            const int32_t ix = x0 + kx * g->dil_w;
                            if (ix < 0 || ix >= w) {
                                continue;
                            }
                            const int32_t v = img[((size_t)iy * w + (size_t)ix) * cin + ic];
                            const int32_t wt = filter[((size_t)ky * g->kw + (size_t)kx) * cout + oc];
                            acc += (v + g->in_offset) * wt;
                        }
                    }
                    if (bias != NULL) {
                        acc += bias[oc];
                    }
                    const int32_t v = espnn_requant(acc, mult[oc], shift[oc]) + g->out_offset;
                    *out++ = (int8_t)espnn_clamp(v, g->act_min, g->act_max);
                }
            }
        }
    }
}

static void eval(const espnn_exec_t *x)
{
    const dw_state_t *s = (const dw_state_t *)x->data;
    if (x->op->kernel == DW_KERNEL_ESPNN || x->op->kernel == DW_KERNEL_ANSI) {
        eval_espnn(x, &s->g, x->op->kernel == DW_KERNEL_ANSI);
    } else if (x->op->kernel == DW_KERNEL_BANDS) {
        eval_bands(x, s);
    } else {
        eval_generic(x, &s->g);
    }
}

const espnn_op_family_t espnn_family_depthwise_conv2d = {prepare, eval,
                                                         ESPNN_STATE_BYTES_DEPTHWISE_CONV2D};
