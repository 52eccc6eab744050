/* Permuted copy plan for QUANTIZE, DEQUANTIZE and TRANSPOSE (private). */
#ifndef ESPNN_PERMUTE_H
#define ESPNN_PERMUTE_H

#include "espnn_internal.h"

typedef struct espnn_perm_plan {
    uint32_t odims[ESPNN_MAX_RANK];
    uint32_t istride[ESPNN_MAX_RANK]; /* input element stride of output dim i (= of input dim perm[i]) */
} espnn_perm_plan_t;
ESPNN_STATIC_ASSERT(sizeof(espnn_perm_plan_t) == 32, "perm plan");

/* validate.py's _check_permuted: din/dout 0 means "any, but equal". */
espnn_status_t espnn_prep_permuted(espnn_prep_t *p, uint8_t din, uint8_t dout,
                                   espnn_perm_plan_t *plan);

/* Calls fn(ctx, in_elem, out_elem) for every output element in order. */
typedef void (*espnn_perm_fn_t)(const espnn_exec_t *x, uint32_t in, uint32_t out);
void espnn_perm_for_each(const espnn_exec_t *x, const espnn_perm_plan_t *plan, espnn_perm_fn_t fn);

#endif /* ESPNN_PERMUTE_H */
