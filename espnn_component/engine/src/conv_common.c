/* Validation and geometry shared by CONV2D and DEPTHWISE_CONV2D. */
#include "espnn_conv_common.h"
#include "espnn_util.h"

/* Output size, or -1 when the (dilated) kernel is larger than the padded input.  All
 * operands are <= 65535, so 32-bit unsigned arithmetic is exact (and needs no 64-bit
 * division helper on targets without one). */
static int64_t conv_out(uint32_t size, int32_t pad_a, int32_t pad_b, uint32_t k, int32_t stride,
                        int32_t dil)
{
    const uint32_t eff = (uint32_t)dil * (k - 1u); /* <= 65535 * 65534: fits; +1 below */
    const uint32_t padded = size + (uint32_t)pad_a + (uint32_t)pad_b; /* <= 3 * 65535 */
    if (eff >= padded) {
        return -1;
    }
    return (int64_t)((padded - eff - 1u) / (uint32_t)stride + 1u);
}

espnn_status_t espnn_prep_conv(espnn_prep_t *p, bool depthwise, espnn_conv_geom_t *g)
{
    espnn_tview_t x, o, f;
    espnn_status_t st = espnn_prep_int8_rank4_io(p, p->n_inputs, &x, &o);
    if (st == ESPNN_OK) {
        st = espnn_prep_const(p, 1, &f, "filter");
    }
    if (st == ESPNN_OK) {
        st = espnn_prep_rank(p, &f, 4, "filter");
    }
    if (st != ESPNN_OK) {
        return st;
    }
    const uint32_t n = x.dims[0], h = x.dims[1], w = x.dims[2], cin = x.dims[3];
    const uint32_t cout = o.dims[3], kh = f.dims[1], kw = f.dims[2];
    int32_t groups;
    uint32_t reduction;
    if (depthwise) {
        st = espnn_prep_param(p, ESPNN_P_DEPTHWISE_CONV2D_CH_MULT, 1, ESPNN_MAX_DIM, &groups);
        if (st != ESPNN_OK) {
            return st;
        }
        if (f.dims[0] != 1 || f.dims[3] != cout) {
            return espnn_prep_fail(p, "filter", f.dims[0] != 1 ? f.dims[0] : f.dims[3],
                                   f.dims[0] != 1 ? 1 : cout);
        }
        if ((uint64_t)cin * (uint32_t)groups != cout) {
            return espnn_prep_fail(p, "ch_mult", groups, cin ? cout / cin : 0);
        }
        reduction = kh * kw; /* <= 65535^2: fits */
    } else {
        st = espnn_prep_param(p, ESPNN_P_CONV2D_GROUPS, 1, ESPNN_MAX_DIM, &groups);
        if (st != ESPNN_OK) {
            return st;
        }
        if (cin % (uint32_t)groups != 0 || cout % (uint32_t)groups != 0) {
            return espnn_prep_fail(p, "groups", groups, cin % (uint32_t)groups ? cin : cout);
        }
        if (f.dims[0] != cout || f.dims[3] != cin / (uint32_t)groups) {
            return espnn_prep_fail(p, "filter", f.dims[0] != cout ? f.dims[0] : f.dims[3],
                                   f.dims[0] != cout ? cout : cin / (uint32_t)groups);
        }
        if (!espnn_mul_u32(kh * kw, cin / (uint32_t)groups, &reduction)) {
            reduction = UINT32_MAX;
        }
    }
    if (reduction > ESPNN_MAX_REDUCTION) {
        return espnn_prep_fail(p, "filter", reduction, ESPNN_MAX_REDUCTION);
    }
    int32_t sh, sw, dh, dw, pt, pl, pb, pr;
    const struct {
        uint32_t index;
        int64_t lo;
        int32_t *out;
    } geo[8] = {
        {ESPNN_P_CONV2D_STRIDE_H, 1, &sh},   {ESPNN_P_CONV2D_STRIDE_W, 1, &sw},
        {ESPNN_P_CONV2D_DILATION_H, 1, &dh}, {ESPNN_P_CONV2D_DILATION_W, 1, &dw},
        {ESPNN_P_CONV2D_PAD_TOP, 0, &pt},    {ESPNN_P_CONV2D_PAD_LEFT, 0, &pl},
        {ESPNN_P_CONV2D_PAD_BOTTOM, 0, &pb}, {ESPNN_P_CONV2D_PAD_RIGHT, 0, &pr},
    };
    for (int i = 0; i < 8; i++) {
        st = espnn_prep_param(p, geo[i].index, geo[i].lo, ESPNN_MAX_DIM, geo[i].out);
        if (st != ESPNN_OK) {
            return st;
        }
    }
    const int64_t oh = conv_out(h, pt, pb, kh, sh, dh);
    const int64_t ow = conv_out(w, pl, pr, kw, sw, dw);
    if (oh < 0 || ow < 0) {
        return espnn_prep_fail(p, "filter", oh < 0 ? kh : kw, oh < 0 ? h : w);
    }
    if (o.dims[0] != n || o.dims[1] != oh || o.dims[2] != ow) {
        return espnn_prep_fail(p, "output", o.dims[0] != n ? o.dims[0] : (o.dims[1] != oh ? o.dims[1] : o.dims[2]),
                               o.dims[0] != n ? n : (o.dims[1] != oh ? oh : ow));
    }
    st = espnn_prep_weighted(p, ESPNN_P_CONV2D_IN_OFFSET, ESPNN_P_CONV2D_OUT_OFFSET, ESPNN_P_CONV2D_ACT_MIN,
                             ESPNN_P_CONV2D_ACT_MAX, cout);
    if (st != ESPNN_OK) {
        return st;
    }
    g->n = (uint16_t)n;
    g->h = (uint16_t)h;
    g->w = (uint16_t)w;
    g->cin = (uint16_t)cin;
    g->oh = (uint16_t)oh;
    g->ow = (uint16_t)ow;
    g->cout = (uint16_t)cout;
    g->kh = (uint16_t)kh;
    g->kw = (uint16_t)kw;
    g->stride_h = (uint16_t)sh;
    g->stride_w = (uint16_t)sw;
    g->pad_top = (uint16_t)pt;
    g->pad_left = (uint16_t)pl;
    g->pad_bottom = (uint16_t)pb;
    g->pad_right = (uint16_t)pr;
    g->dil_h = (uint16_t)dh;
    g->dil_w = (uint16_t)dw;
    g->groups = (uint16_t)groups;
    g->in_offset = p->params[ESPNN_P_CONV2D_IN_OFFSET];
    g->out_offset = p->params[ESPNN_P_CONV2D_OUT_OFFSET];
    g->act_min = p->params[ESPNN_P_CONV2D_ACT_MIN];
    g->act_max = p->params[ESPNN_P_CONV2D_ACT_MAX];
    return ESPNN_OK;
}

void espnn_scratch_geom_of(const espnn_prep_t *p, const espnn_conv_geom_t *cg,
                           espnn_scratch_geom_t *g)
{
    espnn_tview_t f;
    espnn_prep_tensor(p, 1, &f);
    g->in_w = cg->w;
    g->in_h = cg->h;
    g->in_ch = cg->cin;
    g->filter_w = cg->kw;
    g->filter_h = cg->kh;
    g->out_w = cg->ow;
    g->out_h = cg->oh;
    g->out_ch = cg->cout;
    g->pad_w = cg->pad_left;
    g->pad_h = cg->pad_top;
    g->stride_w = cg->stride_w;
    g->stride_h = cg->stride_h;
    g->ch_mult = cg->groups;
    g->filter_aligned16 = ((p->consts_addr + f.offset) & 15u) == 0u;
}

espnn_status_t espnn_prep_scratch(espnn_prep_t *p, uint32_t need)
{
    if (need > p->scratch_size) {
        /* the message names another target or ESP-NN version: see errors.c */
        return espnn_prep_fail_status(p, ESPNN_ERR_TARGET, "scratch_size", p->scratch_size, need);
    }
    return ESPNN_OK;
}
