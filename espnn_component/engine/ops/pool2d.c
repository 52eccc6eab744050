/*
 * MAX_POOL2D and AVG_POOL2D (no requantisation: input and output share quantization).
 * ESP-NN's kernels run one batch image per call.  Average pooling with PyTorch's
 * count_include_pad=True (divisor_mode 1) and any padding divides by the window clipped to
 * the padded input, which ESP-NN cannot: the engine's own kernel does it.
 */
#include <stddef.h>

#include "espnn_esp_nn.h"
#include "espnn_fixedpoint.h"
#include "espnn_internal.h"

enum { POOL_KERNEL_ESPNN = 1, POOL_KERNEL_AVG_INCLUDE_PAD = 2 };
/* MAX_POOL2D's parameters are AVG_POOL2D's but the last: one set of indices serves both */
ESPNN_STATIC_ASSERT(ESPNN_PARAMS_MAX_POOL2D + 1 == ESPNN_PARAMS_AVG_POOL2D &&
                        ESPNN_P_MAX_POOL2D_KERNEL_H == ESPNN_P_AVG_POOL2D_KERNEL_H &&
                        ESPNN_P_MAX_POOL2D_KERNEL_W == ESPNN_P_AVG_POOL2D_KERNEL_W &&
                        ESPNN_P_MAX_POOL2D_STRIDE_H == ESPNN_P_AVG_POOL2D_STRIDE_H &&
                        ESPNN_P_MAX_POOL2D_STRIDE_W == ESPNN_P_AVG_POOL2D_STRIDE_W &&
                        ESPNN_P_MAX_POOL2D_PAD_TOP == ESPNN_P_AVG_POOL2D_PAD_TOP &&
                        ESPNN_P_MAX_POOL2D_PAD_LEFT == ESPNN_P_AVG_POOL2D_PAD_LEFT &&
                        ESPNN_P_MAX_POOL2D_PAD_BOTTOM == ESPNN_P_AVG_POOL2D_PAD_BOTTOM &&
                        ESPNN_P_MAX_POOL2D_PAD_RIGHT == ESPNN_P_AVG_POOL2D_PAD_RIGHT &&
                        ESPNN_P_MAX_POOL2D_ACT_MIN == ESPNN_P_AVG_POOL2D_ACT_MIN &&
                        ESPNN_P_MAX_POOL2D_ACT_MAX == ESPNN_P_AVG_POOL2D_ACT_MAX,
                    "pool parameter layouts diverged (executorch_espnn/payload/format.py)");

typedef struct pool_state {
    uint16_t n, h, w, c;
    uint16_t oh, ow, kh, kw;
    uint16_t sh, sw, pt, pl;
    uint16_t pb, pr;
    int32_t act_min, act_max;
    int32_t zero_point; /* divisor_mode 1: padding taps hold real 0 */
} pool_state_t;
#define POOL_STATE_BYTES 40u
ESPNN_FAMILY_STATE(pool_state_t, POOL_STATE_BYTES);

static espnn_status_t prepare(espnn_prep_t *p, bool avg)
{
    pool_state_t *s = (pool_state_t *)p->data;
    espnn_tview_t x, o;
    espnn_prep_tensor(p, 0, &x);
    espnn_prep_tensor(p, 1, &o);
    espnn_status_t st = espnn_prep_dtype(p, &x, ESPNN_DTYPE_INT8, "input");
    if (st == ESPNN_OK) {
        st = espnn_prep_rank(p, &x, 4, "input");
    }
    if (st == ESPNN_OK) {
        st = espnn_prep_dtype(p, &o, ESPNN_DTYPE_INT8, "output");
    }
    if (st == ESPNN_OK) {
        st = espnn_prep_rank(p, &o, 4, "output");
    }
    int32_t kh = 0, kw = 0, sh = 0, sw = 0, pt = 0, pl = 0, pb = 0, pr = 0, div = 0;
    if (st == ESPNN_OK) {
        st = espnn_prep_param(p, ESPNN_P_AVG_POOL2D_KERNEL_H, 1, ESPNN_MAX_DIM, &kh);
    }
    if (st == ESPNN_OK) {
        st = espnn_prep_param(p, ESPNN_P_AVG_POOL2D_KERNEL_W, 1, ESPNN_MAX_DIM, &kw);
    }
    if (st == ESPNN_OK) {
        st = espnn_prep_param(p, ESPNN_P_AVG_POOL2D_STRIDE_H, 1, ESPNN_MAX_DIM, &sh);
    }
    if (st == ESPNN_OK) {
        st = espnn_prep_param(p, ESPNN_P_AVG_POOL2D_STRIDE_W, 1, ESPNN_MAX_DIM, &sw);
    }
    /* PyTorch's rule: pads are at most half the kernel */
    if (st == ESPNN_OK) {
        st = espnn_prep_param(p, ESPNN_P_AVG_POOL2D_PAD_TOP, 0, kh / 2, &pt);
    }
    if (st == ESPNN_OK) {
        st = espnn_prep_param(p, ESPNN_P_AVG_POOL2D_PAD_LEFT, 0, kw / 2, &pl);
    }
    if (st == ESPNN_OK) {
        st = espnn_prep_param(p, ESPNN_P_AVG_POOL2D_PAD_BOTTOM, 0, kh / 2, &pb);
    }
    if (st == ESPNN_OK) {
        st = espnn_prep_param(p, ESPNN_P_AVG_POOL2D_PAD_RIGHT, 0, kw / 2, &pr);
    }
    /* kh, kw <= 65535: the product fits in 32 unsigned bits */
    const uint32_t window = (uint32_t)kh * (uint32_t)kw;
    if (st == ESPNN_OK && window > ESPNN_MAX_POOL_WINDOW) {
        st = espnn_prep_fail(p, "kernel_h", window, ESPNN_MAX_POOL_WINDOW);
    }
    if (st == ESPNN_OK) {
        st = espnn_prep_act(p, ESPNN_P_AVG_POOL2D_ACT_MIN, ESPNN_P_AVG_POOL2D_ACT_MAX);
    }
    if (st == ESPNN_OK && avg) {
        st = espnn_prep_param(p, ESPNN_P_AVG_POOL2D_DIVISOR_MODE, ESPNN_AVG_DIVISOR_VALID,
                              ESPNN_AVG_DIVISOR_INCLUDE_PAD, &div);
    }
    if (st != ESPNN_OK) {
        return st;
    }
    if (o.dims[0] != x.dims[0] || o.dims[3] != x.dims[3]) {
        return espnn_prep_fail(p, "output", o.dims[0] != x.dims[0] ? o.dims[0] : o.dims[3],
                               o.dims[0] != x.dims[0] ? x.dims[0] : x.dims[3]);
    }
    /* every window starts inside the input or its top/left padding: never an empty window */
    const int64_t last_y = ((int64_t)o.dims[1] - 1) * sh - pt;
    const int64_t last_x = ((int64_t)o.dims[2] - 1) * sw - pl;
    if (last_y > (int64_t)x.dims[1] - 1 || last_x > (int64_t)x.dims[2] - 1) {
        return espnn_prep_fail(p, "output", last_y > (int64_t)x.dims[1] - 1 ? o.dims[1] : o.dims[2],
                               last_y > (int64_t)x.dims[1] - 1 ? x.dims[1] : x.dims[2]);
    }
    if (x.scale != o.scale || x.zero_point != o.zero_point) {
        return espnn_prep_fail(p, "output", o.zero_point, x.zero_point);
    }
    s->n = (uint16_t)x.dims[0];
    s->h = (uint16_t)x.dims[1];
    s->w = (uint16_t)x.dims[2];
    s->c = (uint16_t)x.dims[3];
    s->oh = (uint16_t)o.dims[1];
    s->ow = (uint16_t)o.dims[2];
    s->kh = (uint16_t)kh;
    s->kw = (uint16_t)kw;
    s->sh = (uint16_t)sh;
    s->sw = (uint16_t)sw;
    s->pt = (uint16_t)pt;
    s->pl = (uint16_t)pl;
    s->pb = (uint16_t)pb;
    s->pr = (uint16_t)pr;
    s->act_min = p->params[ESPNN_P_AVG_POOL2D_ACT_MIN];
    s->act_max = p->params[ESPNN_P_AVG_POOL2D_ACT_MAX];
    s->zero_point = x.zero_point;
    /* with no padding, "clipped to the padded input" and "inside the input" are the same */
    const bool padded = (pt | pl | pb | pr) != 0;
    p->kernel = (avg && div == ESPNN_AVG_DIVISOR_INCLUDE_PAD && padded) ? POOL_KERNEL_AVG_INCLUDE_PAD
                                                                        : POOL_KERNEL_ESPNN;
    return ESPNN_OK;
}

static espnn_status_t prepare_max(espnn_prep_t *p)
{
    return prepare(p, false);
}

static espnn_status_t prepare_avg(espnn_prep_t *p)
{
    return prepare(p, true);
}

static void eval_max(const espnn_exec_t *x)
{
    const pool_state_t *s = (const pool_state_t *)x->data;
    const size_t in_img = (size_t)s->h * s->w * s->c, out_img = (size_t)s->oh * s->ow * s->c;
    for (uint32_t n = 0; n < s->n; n++) {
        esp_nn_max_pool_s8((const int8_t *)x->in[0] + n * in_img, s->w, s->h,
                           (int8_t *)x->out + n * out_img, s->ow, s->oh, s->sw, s->sh, s->kw,
                           s->kh, s->pl, s->pt, s->act_min, s->act_max, s->c);
    }
}

static int32_t imin(int32_t a, int32_t b)
{
    return a < b ? a : b;
}

static int32_t imax(int32_t a, int32_t b)
{
    return a > b ? a : b;
}

/* divisor: the window clipped to the padded input (PyTorch count_include_pad=True); the
 * padding taps it counts hold real 0, i.e. the zero point */
static void avg_include_pad(const pool_state_t *s, const int8_t *in, int8_t *out)
{
    for (int32_t oy = 0; oy < s->oh; oy++) {
        const int32_t y0 = oy * s->sh - s->pt;
        const int32_t y_lo = imax(y0, 0), y_hi = imin(y0 + s->kh, s->h);
        const int32_t cnt_h = imin(y0 + s->kh, s->h + s->pb) - y0;
        for (int32_t ox = 0; ox < s->ow; ox++) {
            const int32_t x0 = ox * s->sw - s->pl;
            const int32_t x_lo = imax(x0, 0), x_hi = imin(x0 + s->kw, s->w);
            const int32_t cnt = cnt_h * (imin(x0 + s->kw, s->w + s->pr) - x0);
            const int32_t n_in = (y_hi - y_lo) * (x_hi - x_lo);
            for (int32_t c = 0; c < s->c; c++) {
                int32_t sum = s->zero_point * (cnt - n_in);
                for (int32_t y = y_lo; y < y_hi; y++) {
                    for (int32_t xx = x_lo; xx < x_hi; xx++) {
                        sum += in[((size_t)y * s->w + (size_t)xx) * s->c + c];
                    }
                }
                const int32_t avg = sum > 0 ? (sum + cnt / 2) / cnt : (sum - cnt / 2) / cnt;
                *out++ = (int8_t)espnn_clamp(avg, s->act_min, s->act_max);
            }
        }
    }
}

static void eval_avg(const espnn_exec_t *x)
{
    const pool_state_t *s = (const pool_state_t *)x->data;
    const size_t in_img = (size_t)s->h * s->w * s->c, out_img = (size_t)s->oh * s->ow * s->c;
    for (uint32_t n = 0; n < s->n; n++) {
        const int8_t *in = (const int8_t *)x->in[0] + n * in_img;
        int8_t *out = (int8_t *)x->out + n * out_img;
        if (x->op->kernel == POOL_KERNEL_AVG_INCLUDE_PAD) {
            avg_include_pad(s, in, out);
        } else {
            esp_nn_avg_pool_s8(in, s->w, s->h, out, s->ow, s->oh, s->sw, s->sh, s->kw, s->kh,
                               s->pl, s->pt, s->act_min, s->act_max, s->c);
        }
    }
}

const espnn_op_family_t espnn_family_max_pool2d = {prepare_max, eval_max, POOL_STATE_BYTES};
const espnn_op_family_t espnn_family_avg_pool2d = {prepare_avg, eval_avg, POOL_STATE_BYTES};
