/*
 * MAX_POOL2D and AVG_POOL2D (no requantisation: input and output share quantization).
 * ESP-NN's kernels run one batch image per call.  Average pooling with PyTorch's
 * count_include_pad=True (divisor_mode 1) and any padding divides by the window clipped to
 * the padded input, which ESP-NN cannot: the engine's own kernel does it.
 *
 * AVG_POOL2D_FLOAT is the average PyTorch's quantized reference computes (dequantize, the
 * float32 kernel of avg_pool2d, adaptive_avg_pool2d or mean, quantize), operation for
 * operation: ESP-NN's integer average rounds a window sum that ties away from zero, PyTorch
 * rounds its float32 result (half to even, after the float rounding of every step).  The
 * dequantized value of each int8 code comes from the payload's table, so the sums are
 * additions of table entries only (src/espnn_float.h: nothing a compiler could fuse).
 */
#include <stddef.h>

#include "espnn_s3_kernels.h"
#include "espnn_fixedpoint.h"
#include "espnn_float.h"
#include "espnn_internal.h"

enum { POOL_KERNEL_ESPNN = 1, POOL_KERNEL_AVG_INCLUDE_PAD = 2 };
/* AVG_POOL2D_FLOAT's kernels: which PyTorch CPU kernel's float32 arithmetic */
enum { FLOAT_KERNEL_POOL = 1, FLOAT_KERNEL_ADAPTIVE = 2, FLOAT_KERNEL_MEAN = 3 };
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
/* AVG_POOL2D_FLOAT's parameters are AVG_POOL2D's, then torch_op */
ESPNN_STATIC_ASSERT(ESPNN_PARAMS_AVG_POOL2D + 1 == ESPNN_PARAMS_AVG_POOL2D_FLOAT &&
                        ESPNN_P_AVG_POOL2D_FLOAT_KERNEL_H == ESPNN_P_AVG_POOL2D_KERNEL_H &&
                        ESPNN_P_AVG_POOL2D_FLOAT_KERNEL_W == ESPNN_P_AVG_POOL2D_KERNEL_W &&
                        ESPNN_P_AVG_POOL2D_FLOAT_STRIDE_H == ESPNN_P_AVG_POOL2D_STRIDE_H &&
                        ESPNN_P_AVG_POOL2D_FLOAT_STRIDE_W == ESPNN_P_AVG_POOL2D_STRIDE_W &&
                        ESPNN_P_AVG_POOL2D_FLOAT_PAD_TOP == ESPNN_P_AVG_POOL2D_PAD_TOP &&
                        ESPNN_P_AVG_POOL2D_FLOAT_PAD_LEFT == ESPNN_P_AVG_POOL2D_PAD_LEFT &&
                        ESPNN_P_AVG_POOL2D_FLOAT_PAD_BOTTOM == ESPNN_P_AVG_POOL2D_PAD_BOTTOM &&
                        ESPNN_P_AVG_POOL2D_FLOAT_PAD_RIGHT == ESPNN_P_AVG_POOL2D_PAD_RIGHT &&
                        ESPNN_P_AVG_POOL2D_FLOAT_ACT_MIN == ESPNN_P_AVG_POOL2D_ACT_MIN &&
                        ESPNN_P_AVG_POOL2D_FLOAT_ACT_MAX == ESPNN_P_AVG_POOL2D_ACT_MAX &&
                        ESPNN_P_AVG_POOL2D_FLOAT_DIVISOR_MODE == ESPNN_P_AVG_POOL2D_DIVISOR_MODE,
                    "float pool parameter layout diverged (executorch_espnn/payload/format.py)");

typedef struct pool_state {
    uint16_t n, h, w, c;
    uint16_t oh, ow, kh, kw;
    uint16_t sh, sw, pt, pl;
    uint16_t pb, pr;
    int32_t act_min, act_max;
    int32_t zero_point; /* divisor_mode 1: padding taps hold real 0 */
} pool_state_t;
ESPNN_FAMILY_STATE(pool_state_t, ESPNN_STATE_BYTES_MAX_POOL2D);
ESPNN_FAMILY_STATE(pool_state_t, ESPNN_STATE_BYTES_AVG_POOL2D);

typedef struct float_pool_state {
    pool_state_t pool;
    float inv_scale; /* 1 / the output's scale, rounded to float32 as quantize_per_tensor's */
    int32_t out_zero_point;
    uint32_t include_pad; /* avg_pool2d's count_include_pad with padding */
} float_pool_state_t;
ESPNN_FAMILY_STATE(float_pool_state_t, ESPNN_STATE_BYTES_AVG_POOL2D_FLOAT);

/* avg: 0 max pool, 1 average pool (ESP-NN's arithmetic), 2 the float32 average pool */
static espnn_status_t prepare(espnn_prep_t *p, int avg)
{
    pool_state_t *s = (pool_state_t *)p->data;
    espnn_tview_t x, o;
    espnn_status_t st = espnn_prep_int8_rank4_io(p, p->n_inputs, &x, &o);
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
    if (avg != 2 && (x.scale != o.scale || x.zero_point != o.zero_point)) {
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
    return prepare(p, 0);
}

static espnn_status_t prepare_avg(espnn_prep_t *p)
{
    return prepare(p, 1);
}

static espnn_status_t prepare_avg_float(espnn_prep_t *p)
{
    espnn_status_t st = prepare(p, 2);
    const pool_state_t *s = (const pool_state_t *)p->data;
    float_pool_state_t *f = (float_pool_state_t *)p->data;
    const bool include_pad = p->kernel == POOL_KERNEL_AVG_INCLUDE_PAD;
    espnn_tview_t t, o;
    if (st == ESPNN_OK) {
        st = espnn_prep_const(p, 1, &t, "dequant");
    }
    if (st == ESPNN_OK) {
        st = espnn_prep_dtype(p, &t, ESPNN_DTYPE_FLOAT32, "dequant");
    }
    if (st == ESPNN_OK) {
        st = espnn_prep_rank(p, &t, 1, "dequant");
    }
    if (st == ESPNN_OK && t.dims[0] != ESPNN_DEQUANT_TABLE_SIZE) {
        st = espnn_prep_fail(p, "dequant", t.dims[0], ESPNN_DEQUANT_TABLE_SIZE);
    }
    int32_t op = 0;
    if (st == ESPNN_OK) {
        st = espnn_prep_param(p, ESPNN_P_AVG_POOL2D_FLOAT_TORCH_OP, ESPNN_AVG_TORCH_POOL,
                              ESPNN_AVG_TORCH_MEAN, &op);
    }
    if (st != ESPNN_OK) {
        return st;
    }
    const bool padded = (s->pt | s->pl | s->pb | s->pr) != 0;
    const bool divide_valid =
        p->params[ESPNN_P_AVG_POOL2D_FLOAT_DIVISOR_MODE] == ESPNN_AVG_DIVISOR_VALID;
    /* adaptive_avg_pool2d and mean have no padding and divide by the whole window */
    if (op != ESPNN_AVG_TORCH_POOL && padded) {
        return espnn_prep_fail(p, s->pt ? "pad_top" : s->pl ? "pad_left" : s->pb ? "pad_bottom"
                                                                             : "pad_right",
                               s->pt | s->pl | s->pb | s->pr, 0);
    }
    if (op != ESPNN_AVG_TORCH_POOL && !divide_valid) {
        return espnn_prep_fail(p, "divisor_mode", p->params[ESPNN_P_AVG_POOL2D_FLOAT_DIVISOR_MODE],
                               ESPNN_AVG_DIVISOR_VALID);
    }
    /* mean: one window over the whole input (its taps are the input plane, in order) */
    if (op == ESPNN_AVG_TORCH_MEAN && (s->kh != s->h || s->kw != s->w)) {
        return espnn_prep_fail(p, s->kh != s->h ? "kernel_h" : "kernel_w",
                               s->kh != s->h ? s->kh : s->kw, s->kh != s->h ? s->h : s->w);
    }
    if (op == ESPNN_AVG_TORCH_MEAN && (s->oh != 1 || s->ow != 1)) {
        return espnn_prep_fail(p, "output", s->oh != 1 ? s->oh : s->ow, 1);
    }
    espnn_prep_tensor(p, p->n_inputs, &o);
    if (!(o.scale > 0.0f)) { /* finite was checked with the tensor */
        return espnn_prep_fail(p, "scale", (int64_t)o.scale_bits, 0);
    }
    const float one = 1.0f;
    f->inv_scale = one / o.scale;
    f->out_zero_point = o.zero_point;
    p->kernel = op == ESPNN_AVG_TORCH_MEAN       ? FLOAT_KERNEL_MEAN
                : op == ESPNN_AVG_TORCH_ADAPTIVE ? FLOAT_KERNEL_ADAPTIVE
                                                 : FLOAT_KERNEL_POOL;
    f->include_pad = include_pad ? 1u : 0u;
    return ESPNN_OK;
}

static void eval_max(const espnn_exec_t *x)
{
    const pool_state_t *s = (const pool_state_t *)x->data;
    const size_t in_img = (size_t)s->h * s->w * s->c, out_img = (size_t)s->oh * s->ow * s->c;
    for (uint32_t n = 0; n < s->n; n++) {
        espnn_max_pool_s8((const int8_t *)x->in[0] + n * in_img, s->w, s->h,
                          (int8_t *)x->out + n * out_img, s->ow, s->oh, s->sw, s->sh, s->kw, s->kh,
                          s->pl, s->pt, s->act_min, s->act_max, s->c);
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
            espnn_avg_pool_s8(in, s->w, s->h, out, s->ow, s->oh, s->sw, s->sh, s->kw, s->kh,
                              s->pl, s->pt, s->act_min, s->act_max, s->c);
        }
    }
}

/* ---- AVG_POOL2D_FLOAT ----------------------------------------------------------------- */

/* a sequence of int8 codes base[i * stride], read as their dequantized float32 values */
typedef struct float_seq {
    const int8_t *base;
    size_t stride;
    const float *table; /* the value of code q at table[q + 128] */
} float_seq_t;

static float seq_at(const float_seq_t *q, uint32_t i)
{
    return q->table[q->base[(size_t)i * q->stride] + 128];
}

/*
 * ATen's row_sum over the elements first + j * step, j < size (aten/src/ATen/native/cpu/
 * SumKernel.cpp, as torch 2.x sums float32 on the CPU): four interleaved accumulators
 * (multi_row_sum with ilp_factor 4) whose partial sums cascade through four levels every 16
 * rows, then the leftover elements into the first accumulator, then the four added in order.
 * The level width is max(4, ceil(log2(rows)) / 4) bits: 4 for fewer than 2^20 rows, which the
 * format's 2^23-element window guarantees.
 */
static float aten_row_sum(const float_seq_t *q, uint32_t first, uint32_t step, uint32_t size)
{
    enum { ILP = 4, LEVELS = 4, LEVEL_POWER = 4, LEVEL_STEP = 1 << LEVEL_POWER };
    float acc[LEVELS][ILP] = {{0.0f}};
    const uint32_t rows = size / ILP;
    uint32_t i = 0;
    while (i + LEVEL_STEP <= rows) {
        for (uint32_t j = 0; j < LEVEL_STEP; j++, i++) {
            for (uint32_t k = 0; k < ILP; k++) {
                acc[0][k] = acc[0][k] + seq_at(q, first + (i * ILP + k) * step);
            }
        }
        for (uint32_t j = 1; j < LEVELS; j++) {
            for (uint32_t k = 0; k < ILP; k++) {
                acc[j][k] = acc[j][k] + acc[j - 1][k];
                acc[j - 1][k] = 0.0f;
            }
            if ((i & ((uint32_t)(LEVEL_STEP - 1) << (j * LEVEL_POWER))) != 0) {
                break;
            }
        }
    }
    for (; i < rows; i++) {
        for (uint32_t k = 0; k < ILP; k++) {
            acc[0][k] = acc[0][k] + seq_at(q, first + (i * ILP + k) * step);
        }
    }
    for (uint32_t j = 1; j < LEVELS; j++) {
        for (uint32_t k = 0; k < ILP; k++) {
            acc[0][k] = acc[0][k] + acc[j][k];
        }
    }
    for (uint32_t e = rows * ILP; e < size; e++) {
        acc[0][0] = acc[0][0] + seq_at(q, first + e * step);
    }
    for (uint32_t k = 1; k < ILP; k++) {
        acc[0][0] = acc[0][0] + acc[0][k];
    }
    return acc[0][0];
}

/* ATen's sum of n contiguous float32 values (vectorized_inner_sum with 8-lane vectors, the
 * width of at::Vectorized<float> that sum uses on x86 and ARM): each lane sums every 8th
 * element by row_sum; then 0 + the leftover elements + the lanes in order.  Fewer than 8
 * values: one scalar row_sum. */
static float aten_sum(const float_seq_t *q, uint32_t n)
{
    enum { LANES = 8 };
    if (n < LANES) {
        return aten_row_sum(q, 0, 1, n);
    }
    const uint32_t vectors = n / LANES;
    float lanes[LANES];
    for (uint32_t l = 0; l < LANES; l++) {
        lanes[l] = aten_row_sum(q, l, LANES, vectors);
    }
    float total = 0.0f;
    for (uint32_t e = vectors * LANES; e < n; e++) {
        total = total + seq_at(q, e);
    }
    for (uint32_t l = 0; l < LANES; l++) {
        total = total + lanes[l];
    }
    return total;
}

static void eval_avg_float(const espnn_exec_t *x)
{
    const float_pool_state_t *f = (const float_pool_state_t *)x->data;
    const pool_state_t *s = &f->pool;
    const float *table = (const float *)x->in[1];
    const size_t in_img = (size_t)s->h * s->w * s->c, out_img = (size_t)s->oh * s->ow * s->c;
    const int32_t lo = s->act_min, hi = s->act_max;
    for (uint32_t n = 0; n < s->n; n++) {
        const int8_t *in = (const int8_t *)x->in[0] + n * in_img;
        int8_t *out = (int8_t *)x->out + n * out_img;
        if (x->op->kernel == FLOAT_KERNEL_MEAN) {
            const float count = (float)((uint32_t)s->h * s->w);
            for (uint32_t c = 0; c < s->c; c++) {
                const float_seq_t q = {in + c, s->c, table};
                const float mean = aten_sum(&q, (uint32_t)s->h * s->w) / count;
                out[c] = (int8_t)espnn_clamp(espnn_quantize_f32(mean, f->inv_scale,
                                                                f->out_zero_point), lo, hi);
            }
            continue;
        }
        for (int32_t oy = 0; oy < s->oh; oy++) {
            const int32_t y0 = oy * s->sh - s->pt;
            const int32_t y_lo = imax(y0, 0), y_hi = imin(y0 + s->kh, s->h);
            for (int32_t ox = 0; ox < s->ow; ox++) {
                const int32_t x0 = ox * s->sw - s->pl;
                const int32_t x_lo = imax(x0, 0), x_hi = imin(x0 + s->kw, s->w);
                /* avg_pool2d's divisor: the taps inside the input, or count_include_pad's
                 * window clipped to the padded input */
                const int32_t cnt = f->include_pad
                                        ? (imin(y0 + s->kh, s->h + s->pb) - y0) *
                                              (imin(x0 + s->kw, s->w + s->pr) - x0)
                                        : (y_hi - y_lo) * (x_hi - x_lo);
                for (int32_t c = 0; c < s->c; c++) {
                    float sum = 0.0f; /* PyTorch's order: row by row, left to right */
                    for (int32_t y = y_lo; y < y_hi; y++) {
                        for (int32_t xx = x_lo; xx < x_hi; xx++) {
                            sum = sum + table[in[((size_t)y * s->w + (size_t)xx) * s->c + c] + 128];
                        }
                    }
                    float avg;
                    if (x->op->kernel == FLOAT_KERNEL_ADAPTIVE) {
                        avg = sum / (float)s->kh; /* adaptive_avg_pool2d: sum / kh / kw */
                        avg = avg / (float)s->kw;
                    } else {
                        avg = sum / (float)cnt;
                    }
                    *out++ = (int8_t)espnn_clamp(
                        espnn_quantize_f32(avg, f->inv_scale, f->out_zero_point), lo, hi);
                }
            }
        }
    }
}

const espnn_op_family_t espnn_family_max_pool2d = {prepare_max, eval_max,
                                                   ESPNN_STATE_BYTES_MAX_POOL2D};
const espnn_op_family_t espnn_family_avg_pool2d = {prepare_avg, eval_avg,
                                                   ESPNN_STATE_BYTES_AVG_POOL2D};
const espnn_op_family_t espnn_family_avg_pool2d_float = {prepare_avg_float, eval_avg_float,
                                                         ESPNN_STATE_BYTES_AVG_POOL2D_FLOAT};
