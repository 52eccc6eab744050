/*
 * SOFTMAX over the last dimension: ESP-NN's esp_nn_softmax_s8 on all rows at once, with its
 * scratch buffer set before the call.  Output scale 1/256, zero point -128.
 */
#include "esp_nn.h"
#include "espnn_internal.h"

enum { SOFTMAX_P_MULT = 0, SOFTMAX_P_SHIFT, SOFTMAX_P_DIFF_MIN };
enum { SOFTMAX_KERNEL_ESPNN = 1 };

typedef struct softmax_state {
    uint32_t rows, width;
    int32_t mult, shift, diff_min;
} softmax_state_t;
#define SOFTMAX_STATE_BYTES 20u
ESPNN_STATIC_ASSERT(sizeof(softmax_state_t) == SOFTMAX_STATE_BYTES, "softmax state");

static espnn_status_t prepare(espnn_prep_t *p)
{
    softmax_state_t *s = (softmax_state_t *)p->data;
    espnn_tview_t x, o;
    espnn_prep_tensor(p, 0, &x);
    espnn_prep_tensor(p, 1, &o);
    espnn_status_t st = espnn_prep_dtype(p, &x, ESPNN_DTYPE_INT8, "input");
    if (st == ESPNN_OK) {
        st = espnn_prep_dtype(p, &o, ESPNN_DTYPE_INT8, "output");
    }
    if (st != ESPNN_OK) {
        return st;
    }
    if (x.rank < 1 || !espnn_dims_equal(&x, &o)) {
        return espnn_prep_fail(p, "output", o.rank, x.rank);
    }
    int32_t shift = 0, diff_min = 0;
    st = espnn_prep_param(p, SOFTMAX_P_MULT, 0, INT32_MAX, NULL);
    if (st == ESPNN_OK) {
        st = espnn_prep_param(p, SOFTMAX_P_SHIFT, 0, ESPNN_SOFTMAX_SHIFT_MAX, &shift);
    }
    if (st == ESPNN_OK) {
        st = espnn_prep_param(p, SOFTMAX_P_DIFF_MIN, INT32_MIN, 0, &diff_min);
    }
    if (st != ESPNN_OK) {
        return st;
    }
    /* the kernel rescales differences >= max(diff_min, -255) by 2^shift in int32 */
    const uint32_t span = diff_min < -255 ? 255u : (uint32_t)-diff_min;
    if (span > (0x7FFFFFFFu >> shift)) {
        return espnn_prep_fail(p, "diff_min", diff_min, -(int64_t)(0x7FFFFFFFu >> shift));
    }
    if (o.scale != 1.0f / 256.0f || o.zero_point != ESPNN_SOFTMAX_OUT_ZERO_POINT) {
        return espnn_prep_fail(p, "output", o.zero_point, ESPNN_SOFTMAX_OUT_ZERO_POINT);
    }
    s->width = x.dims[x.rank - 1];
    s->rows = x.numel / s->width;
    s->mult = p->params[SOFTMAX_P_MULT];
    s->shift = shift;
    s->diff_min = diff_min;
    p->kernel = SOFTMAX_KERNEL_ESPNN;
    const int32_t need = esp_nn_get_softmax_scratch_size((int32_t)s->width, (int32_t)s->rows);
    if (need > 0 && (uint32_t)need > p->scratch_size) {
        return espnn_prep_fail_status(p, ESPNN_ERR_TARGET, "scratch_size", p->scratch_size, need);
    }
    return ESPNN_OK;
}

static void eval(const espnn_exec_t *x)
{
    const softmax_state_t *s = (const softmax_state_t *)x->data;
    esp_nn_set_softmax_scratch_buf(x->scratch);
    esp_nn_softmax_s8((const int8_t *)x->in[0], (int32_t)s->rows, (int32_t)s->width, s->mult,
                      s->shift, s->diff_min, (int8_t *)x->out);
}

const espnn_op_family_t espnn_family_softmax = {prepare, eval, SOFTMAX_STATE_BYTES};
