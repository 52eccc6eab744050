/*
 * TRANSPOSE_CONV2D: PyTorch's conv_transpose2d on NHWC int8 (stride, padding, output padding,
 * dilation, groups), per-output-channel requantisation as CONV2D.  ESP-NN has no transposed
 * convolution: this is the engine's own kernel, in gather form (each output element sums the
 * input taps that reach it, so it needs no scratch accumulator):
 *   out[n, oy, ox, oc] = sum over ky, kx with iy = (oy + pad_top - ky * dil_h) / stride_h a whole
 *   number in [0, H) (likewise ix) and ic of one group: (x + in_offset) * w[oc, ky, kx, ic].
 * The filter is [Cout, KH, KW, Cin/groups]; the reduction KH*KW*Cin/groups <= 65535 keeps the
 * int32 accumulator exact, as for CONV2D.
 */
#include <stddef.h>

#include "espnn_fixedpoint.h"
#include "espnn_internal.h"
#include "espnn_util.h"

typedef struct tconv_state {
    uint16_t n, h, w, cin;
    uint16_t oh, ow, cout, kh;
    uint16_t kw, stride_h, stride_w, pad_top;
    uint16_t pad_left, dil_h, dil_w, groups;
    int32_t in_offset, out_offset, act_min, act_max;
} tconv_state_t;
ESPNN_FAMILY_STATE(tconv_state_t, ESPNN_STATE_BYTES_TRANSPOSE_CONV2D);

/* PyTorch's output size; every operand <= 65535, so int64 holds it exactly */
static int64_t transposed_out(uint32_t size, uint32_t k, int32_t stride, int32_t dil, int32_t pad_a,
                              int32_t pad_b, int32_t out_pad)
{
    return ((int64_t)size - 1) * stride - pad_a - pad_b + (int64_t)dil * ((int64_t)k - 1) + out_pad +
           1;
}

static espnn_status_t prep_tensors(espnn_prep_t *p, espnn_tview_t *x, espnn_tview_t *o,
                                   espnn_tview_t *f)
{
    espnn_status_t st = espnn_prep_int8_rank4_io(p, p->n_inputs, x, o);
    if (st == ESPNN_OK) {
        st = espnn_prep_const(p, 1, f, "filter");
    }
    if (st == ESPNN_OK) {
        st = espnn_prep_rank(p, f, 4, "filter");
    }
    return st;
}

static espnn_status_t prepare(espnn_prep_t *p)
{
    tconv_state_t *s = (tconv_state_t *)p->data;
    espnn_tview_t x, o, f;
    espnn_status_t st = prep_tensors(p, &x, &o, &f);
    int32_t groups;
    if (st == ESPNN_OK) {
        st = espnn_prep_param(p, ESPNN_P_TRANSPOSE_CONV2D_GROUPS, 1, ESPNN_MAX_DIM, &groups);
    }
    if (st != ESPNN_OK) {
        return st;
    }
    const uint32_t n = x.dims[0], h = x.dims[1], w = x.dims[2], cin = x.dims[3];
    const uint32_t cout = o.dims[3], kh = f.dims[1], kw = f.dims[2];
    const uint32_t g = (uint32_t)groups;
    if (cin % g != 0 || cout % g != 0) {
        return espnn_prep_fail(p, "groups", groups, cin % g ? cin : cout);
    }
    if (f.dims[0] != cout || f.dims[3] != cin / g) {
        return espnn_prep_fail(p, "filter", f.dims[0] != cout ? f.dims[0] : f.dims[3],
                               f.dims[0] != cout ? cout : cin / g);
    }
    uint32_t reduction;
    if (!espnn_mul_u32(kh * kw, cin / g, &reduction)) {
        reduction = UINT32_MAX;
    }
    if (reduction > ESPNN_MAX_REDUCTION) {
        return espnn_prep_fail(p, "filter", reduction, ESPNN_MAX_REDUCTION);
    }
    int32_t sh, sw, dh, dw, pt, pl, pb, pr, oph, opw;
    const struct {
        uint32_t index;
        int64_t lo;
        int32_t *out;
    } geo[8] = {
        {ESPNN_P_TRANSPOSE_CONV2D_STRIDE_H, 1, &sh},   {ESPNN_P_TRANSPOSE_CONV2D_STRIDE_W, 1, &sw},
        {ESPNN_P_TRANSPOSE_CONV2D_DILATION_H, 1, &dh}, {ESPNN_P_TRANSPOSE_CONV2D_DILATION_W, 1, &dw},
        {ESPNN_P_TRANSPOSE_CONV2D_PAD_TOP, 0, &pt},    {ESPNN_P_TRANSPOSE_CONV2D_PAD_LEFT, 0, &pl},
        {ESPNN_P_TRANSPOSE_CONV2D_PAD_BOTTOM, 0, &pb}, {ESPNN_P_TRANSPOSE_CONV2D_PAD_RIGHT, 0, &pr},
    };
    for (int i = 0; i < 8; i++) {
        st = espnn_prep_param(p, geo[i].index, geo[i].lo, ESPNN_MAX_DIM, geo[i].out);
        if (st != ESPNN_OK) {
            return st;
        }
    }
    /* PyTorch's rule: the output padding is below the stride or the dilation */
    st = espnn_prep_param(p, ESPNN_P_TRANSPOSE_CONV2D_OUT_PAD_H, 0, (sh > dh ? sh : dh) - 1, &oph);
    if (st == ESPNN_OK) {
        st = espnn_prep_param(p, ESPNN_P_TRANSPOSE_CONV2D_OUT_PAD_W, 0, (sw > dw ? sw : dw) - 1, &opw);
    }
    if (st != ESPNN_OK) {
        return st;
    }
    const int64_t oh = transposed_out(h, kh, sh, dh, pt, pb, oph);
    const int64_t ow = transposed_out(w, kw, sw, dw, pl, pr, opw);
    if (o.dims[0] != n || o.dims[1] != oh || o.dims[2] != ow) {
        return espnn_prep_fail(p, "output",
                               o.dims[0] != n ? o.dims[0] : (o.dims[1] != oh ? o.dims[1] : o.dims[2]),
                               o.dims[0] != n ? n : (o.dims[1] != oh ? oh : ow));
    }
    st = espnn_prep_weighted(p, ESPNN_P_TRANSPOSE_CONV2D_IN_OFFSET, ESPNN_P_TRANSPOSE_CONV2D_OUT_OFFSET, ESPNN_P_TRANSPOSE_CONV2D_ACT_MIN,
                             ESPNN_P_TRANSPOSE_CONV2D_ACT_MAX, cout);
    if (st != ESPNN_OK) {
        return st;
    }
    s->n = (uint16_t)n;
    s->h = (uint16_t)h;
    s->w = (uint16_t)w;
    s->cin = (uint16_t)cin;
    s->oh = (uint16_t)oh;
    s->ow = (uint16_t)ow;
    s->cout = (uint16_t)cout;
    s->kh = (uint16_t)kh;
    s->kw = (uint16_t)kw;
    s->stride_h = (uint16_t)sh;
    s->stride_w = (uint16_t)sw;
    s->pad_top = (uint16_t)pt;
    s->pad_left = (uint16_t)pl;
    s->dil_h = (uint16_t)dh;
    s->dil_w = (uint16_t)dw;
    s->groups = (uint16_t)groups;
    s->in_offset = p->params[ESPNN_P_TRANSPOSE_CONV2D_IN_OFFSET];
    s->out_offset = p->params[ESPNN_P_TRANSPOSE_CONV2D_OUT_OFFSET];
    s->act_min = p->params[ESPNN_P_TRANSPOSE_CONV2D_ACT_MIN];
    s->act_max = p->params[ESPNN_P_TRANSPOSE_CONV2D_ACT_MAX];
    return ESPNN_OK;
}

/* the input index a transposed tap reaches along one axis, or -1 when none does */
static int32_t source_index(int32_t o, int32_t pad, int32_t k, int32_t dil, int32_t stride,
                            int32_t size)
{
    /* prepare pinned the output size, so dil * (KH - 1) <= OH - 1 + pad_top + pad_bottom
     * < 3 * 65535: every term here fits in int32 */
    const int32_t t = o + pad - k * dil;
    if (t < 0 || t % stride != 0) {
        return -1;
    }
    const int32_t i = t / stride;
    return i < size ? i : -1;
}

static void eval(const espnn_exec_t *x)
{
    const tconv_state_t *s = (const tconv_state_t *)x->data;
    const int8_t *input = (const int8_t *)x->in[0];
    const int8_t *filter = (const int8_t *)x->in[1];
    const int32_t *bias = (const int32_t *)x->in[2];
    const int32_t *mult = (const int32_t *)x->in[3];
    const int32_t *shift = (const int32_t *)x->in[4];
    int8_t *out = (int8_t *)x->out;
    const int32_t cin_g = s->cin / s->groups, cout_g = s->cout / s->groups;
    for (int32_t n = 0; n < s->n; n++) {
        const int8_t *img = input + (size_t)n * s->h * s->w * s->cin;
        for (int32_t oy = 0; oy < s->oh; oy++) {
            for (int32_t ox = 0; ox < s->ow; ox++) {
                for (int32_t oc = 0; oc < s->cout; oc++) {
                    const int32_t ic0 = (oc / cout_g) * cin_g;
                    const int8_t *wt = filter + (size_t)oc * s->kh * s->kw * cin_g;
                    int32_t acc = 0;
                    for (int32_t ky = 0; ky < s->kh; ky++) {
                        const int32_t iy = source_index(oy, s->pad_top, ky, s->dil_h, s->stride_h, s->h);
                        if (iy < 0) {
                            continue;
                        }
                        for (int32_t kx = 0; kx < s->kw; kx++) {
                            const int32_t ix =
                                source_index(ox, s->pad_left, kx, s->dil_w, s->stride_w, s->w);
                            if (ix < 0) {
                                continue;
                            }
                            const int8_t *px = img + ((size_t)iy * s->w + (size_t)ix) * s->cin + ic0;
                            const int8_t *pw = wt + ((size_t)ky * s->kw + (size_t)kx) * cin_g;
                            for (int32_t ic = 0; ic < cin_g; ic++) {
                                acc += (px[ic] + s->in_offset) * pw[ic];
                            }
                        }
                    }
                    if (bias != NULL) {
                        acc += bias[oc];
                    }
                    const int32_t v = espnn_requant(acc, mult[oc], shift[oc]) + s->out_offset;
                    *out++ = (int8_t)espnn_clamp(v, s->act_min, s->act_max);
                }
            }
        }
    }
}

const espnn_op_family_t espnn_family_transpose_conv2d = {prepare, eval,
                                                         ESPNN_STATE_BYTES_TRANSPOSE_CONV2D};
