/*
 * QUANTIZE (float32 -> int8) and DEQUANTIZE (int8 -> float32), each with an optional
 * permutation so layout changes at the delegate boundary cost no extra pass.
 * QUANTIZE is ExecuTorch's quantize_per_tensor: q = clamp(round_half_even(x * (1/scale)) + zp),
 * all in float32, NaN -> zp (src/espnn_float.h).
 */
#include <string.h>

#include "espnn_float.h"
#include "espnn_permute.h"

typedef struct quant_state {
    espnn_perm_plan_t plan;
    float scale; /* QUANTIZE: 1/scale of the output; DEQUANTIZE: scale of the input */
    int32_t zero_point;
    uint32_t identity; /* no permutation: a flat loop */
} quant_state_t;
ESPNN_FAMILY_STATE(quant_state_t, ESPNN_STATE_BYTES_QUANTIZE);
ESPNN_FAMILY_STATE(quant_state_t, ESPNN_STATE_BYTES_DEQUANTIZE);

static bool is_identity(const espnn_prep_t *p)
{
    for (int32_t i = 0; i < ESPNN_MAX_RANK; i++) {
        if (p->params[i] != i) {
            return false;
        }
    }
    return true;
}

static espnn_status_t prepare_common(espnn_prep_t *p, bool quantize)
{
    quant_state_t *s = (quant_state_t *)p->data;
    espnn_status_t st = espnn_prep_permuted(p, quantize ? ESPNN_DTYPE_FLOAT32 : ESPNN_DTYPE_INT8,
                                            quantize ? ESPNN_DTYPE_INT8 : ESPNN_DTYPE_FLOAT32,
                                            &s->plan);
    if (st != ESPNN_OK) {
        return st;
    }
    espnn_tview_t q;
    espnn_prep_tensor(p, quantize ? p->n_inputs : 0u, &q);
    /* float32 arithmetic, as ExecuTorch's kernel: the reciprocal is rounded to float */
    const float one = 1.0f;
    s->scale = quantize ? one / q.scale : q.scale;
    s->zero_point = q.zero_point;
    s->identity = is_identity(p) ? 1u : 0u;
    return ESPNN_OK;
}

static espnn_status_t prepare_quantize(espnn_prep_t *p)
{
    return prepare_common(p, true);
}

static espnn_status_t prepare_dequantize(espnn_prep_t *p)
{
    return prepare_common(p, false);
}

static void quantize_elem(const espnn_exec_t *x, uint32_t in, uint32_t out)
{
    const quant_state_t *s = (const quant_state_t *)x->data;
    ((int8_t *)x->out)[out] =
        espnn_quantize_f32(((const float *)x->in[0])[in], s->scale, s->zero_point);
}

static void dequantize_elem(const espnn_exec_t *x, uint32_t in, uint32_t out)
{
    const quant_state_t *s = (const quant_state_t *)x->data;
    const int32_t q = ((const int8_t *)x->in[0])[in];
    ((float *)x->out)[out] = (float)(q - s->zero_point) * s->scale;
}

static void eval_quantize(const espnn_exec_t *x)
{
    const quant_state_t *s = (const quant_state_t *)x->data;
    if (s->identity) {
        const uint32_t n = x->tensors[x->op->output].nbytes;
        const float *in = (const float *)x->in[0];
        int8_t *out = (int8_t *)x->out;
        for (uint32_t i = 0; i < n; i++) {
            out[i] = espnn_quantize_f32(in[i], s->scale, s->zero_point);
        }
        return;
    }
    espnn_perm_for_each(x, &s->plan, quantize_elem);
}

static void eval_dequantize(const espnn_exec_t *x)
{
    const quant_state_t *s = (const quant_state_t *)x->data;
    if (s->identity) {
        const uint32_t n = x->tensors[x->op->output].nbytes / 4u;
        const int8_t *in = (const int8_t *)x->in[0];
        float *out = (float *)x->out;
        for (uint32_t i = 0; i < n; i++) {
            out[i] = (float)(in[i] - s->zero_point) * s->scale;
        }
        return;
    }
    espnn_perm_for_each(x, &s->plan, dequantize_elem);
}

const espnn_op_family_t espnn_family_quantize = {prepare_quantize, eval_quantize,
                                                 ESPNN_STATE_BYTES_QUANTIZE};
const espnn_op_family_t espnn_family_dequantize = {prepare_dequantize, eval_dequantize,
                                                   ESPNN_STATE_BYTES_DEQUANTIZE};
