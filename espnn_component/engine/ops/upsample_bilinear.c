/*
 * UPSAMPLE_BILINEAR: bilinear resampling of NHWC int8 with coordinate tables made ahead of
 * time from PyTorch's own source-index rule (align_corners either way, any output size).
 * Output row y reads input rows y_index[y] and min(y_index[y] + 1, H - 1) with weights
 * ONE - y_frac[y] and y_frac[y] (ONE = 2^ESPNN_BILINEAR_FRAC_BITS), columns likewise; the
 * weighted sum of the raw int8 values is divided by ONE^2 with rounding half away from zero.
 * Input and output share their quantization (a convex combination needs no requantisation:
 * the zero point passes through the weights, which sum to ONE^2).  |acc| <= 128 * 2^22.
 * ESP-NN has no resize kernel: this is the engine's own.
 */
#include <stddef.h>

#include "espnn_fixedpoint.h"
#include "espnn_internal.h"

#define ONE ((int32_t)1 << ESPNN_BILINEAR_FRAC_BITS)

typedef struct bilinear_state {
    uint32_t n, h, w, c, oh, ow;
} bilinear_state_t;
ESPNN_FAMILY_STATE(bilinear_state_t, ESPNN_STATE_BYTES_UPSAMPLE_BILINEAR);

/* slots 1..4: y_index, y_frac, x_index, x_frac: constant int32 [size], each value in range */
static espnn_status_t prep_table(espnn_prep_t *p, uint32_t slot, const char *name, uint32_t size,
                                 int32_t hi)
{
    espnn_tview_t t;
    espnn_status_t st = espnn_prep_const(p, slot, &t, name);
    if (st == ESPNN_OK) {
        st = espnn_prep_dtype(p, &t, ESPNN_DTYPE_INT32, name);
    }
    if (st == ESPNN_OK && (t.rank != 1 || t.dims[0] != size)) {
        st = espnn_prep_fail(p, name, t.dims[0], size);
    }
    for (uint32_t i = 0; st == ESPNN_OK && i < size; i++) {
        const int32_t v = espnn_const_i32(p, &t, i);
        if (v < 0 || v > hi) {
            st = espnn_prep_fail(p, name, v, v < 0 ? 0 : hi);
        }
    }
    return st;
}

static espnn_status_t prepare(espnn_prep_t *p)
{
    bilinear_state_t *s = (bilinear_state_t *)p->data;
    espnn_tview_t x, o;
    espnn_status_t st = espnn_prep_int8_rank4_io(p, 5, &x, &o);
    if (st != ESPNN_OK) {
        return st;
    }
    if (o.dims[0] != x.dims[0] || o.dims[3] != x.dims[3]) {
        return espnn_prep_fail(p, "output", o.dims[0] != x.dims[0] ? o.dims[0] : o.dims[3],
                               o.dims[0] != x.dims[0] ? x.dims[0] : x.dims[3]);
    }
    st = prep_table(p, 1, "y_index", o.dims[1], (int32_t)x.dims[1] - 1);
    if (st == ESPNN_OK) {
        st = prep_table(p, 2, "y_frac", o.dims[1], ONE);
    }
    if (st == ESPNN_OK) {
        st = prep_table(p, 3, "x_index", o.dims[2], (int32_t)x.dims[2] - 1);
    }
    if (st == ESPNN_OK) {
        st = prep_table(p, 4, "x_frac", o.dims[2], ONE);
    }
    if (st != ESPNN_OK) {
        return st;
    }
    if (x.scale != o.scale || x.zero_point != o.zero_point) {
        return espnn_prep_fail(p, "output", o.zero_point, x.zero_point);
    }
    s->n = x.dims[0];
    s->h = x.dims[1];
    s->w = x.dims[2];
    s->c = x.dims[3];
    s->oh = o.dims[1];
    s->ow = o.dims[2];
    return ESPNN_OK;
}

static void eval(const espnn_exec_t *x)
{
    const bilinear_state_t *s = (const bilinear_state_t *)x->data;
    const int8_t *in = (const int8_t *)x->in[0];
    const int32_t *yi = (const int32_t *)x->in[1];
    const int32_t *yf = (const int32_t *)x->in[2];
    const int32_t *xi = (const int32_t *)x->in[3];
    const int32_t *xf = (const int32_t *)x->in[4];
    int8_t *out = (int8_t *)x->out;
    const size_t row = (size_t)s->w * s->c;
    for (uint32_t n = 0; n < s->n; n++) {
        const int8_t *img = in + (size_t)n * s->h * row;
        for (uint32_t oy = 0; oy < s->oh; oy++) {
            const uint32_t y0 = (uint32_t)yi[oy];
            const uint32_t y1 = y0 + 1u < s->h ? y0 + 1u : y0;
            const int32_t wy1 = yf[oy], wy0 = ONE - wy1;
            const int8_t *r0 = img + (size_t)y0 * row;
            const int8_t *r1 = img + (size_t)y1 * row;
            for (uint32_t ox = 0; ox < s->ow; ox++) {
                const uint32_t x0 = (uint32_t)xi[ox];
                const uint32_t x1 = x0 + 1u < s->w ? x0 + 1u : x0;
                const int32_t wx1 = xf[ox], wx0 = ONE - wx1;
                const int8_t *a = r0 + (size_t)x0 * s->c, *b = r0 + (size_t)x1 * s->c;
                const int8_t *c = r1 + (size_t)x0 * s->c, *d = r1 + (size_t)x1 * s->c;
                for (uint32_t ch = 0; ch < s->c; ch++) {
                    const int32_t acc = wy0 * (wx0 * a[ch] + wx1 * b[ch]) +
                                        wy1 * (wx0 * c[ch] + wx1 * d[ch]);
                    *out++ = (int8_t)espnn_rdbp(acc, 2 * ESPNN_BILINEAR_FRAC_BITS);
                }
            }
        }
    }
}

const espnn_op_family_t espnn_family_upsample_bilinear = {prepare, eval,
                                                          ESPNN_STATE_BYTES_UPSAMPLE_BILINEAR};
