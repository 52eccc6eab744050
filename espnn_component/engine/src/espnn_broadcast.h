/* Broadcast plan for ADD, MUL and DIV (private): equal-rank NumPy broadcasting over <= 4 dims. */
#ifndef ESPNN_BROADCAST_H
#define ESPNN_BROADCAST_H

#include "espnn_internal.h"

typedef struct espnn_bcast {
    uint32_t odims[ESPNN_MAX_RANK];
    uint32_t astride[ESPNN_MAX_RANK]; /* element strides per output dim, 0 where broadcast */
    uint32_t bstride[ESPNN_MAX_RANK];
    uint32_t run;   /* elements contiguous in a, b and the output: one kernel call */
    uint32_t outer; /* leading dims iterated around the runs (0..4) */
} espnn_bcast_t;
ESPNN_STATIC_ASSERT(sizeof(espnn_bcast_t) == 56, "bcast plan");

typedef enum espnn_bcast_shape {
    ESPNN_BCAST_SAME,       /* a, b and the output have one shape */
    ESPNN_BCAST_A_PER_CH,   /* b full, a is [1,..,1,C] */
    ESPNN_BCAST_B_PER_CH,   /* a full, b is [1,..,1,C] */
    ESPNN_BCAST_GENERAL
} espnn_bcast_shape_t;

/* dtype/rank/dims rules of validate.py's _check_broadcast, then the plan. */
espnn_status_t espnn_prep_broadcast(espnn_prep_t *p, espnn_bcast_t *plan,
                                    espnn_bcast_shape_t *shape);

/* Calls fn once per run: fn(ctx, a_elem_offset, b_elem_offset, out_elem_offset, run). */
typedef void (*espnn_bcast_fn_t)(const espnn_exec_t *x, uint32_t a, uint32_t b, uint32_t o,
                                 uint32_t n);
void espnn_bcast_for_each(const espnn_exec_t *x, const espnn_bcast_t *plan,
                          espnn_bcast_fn_t fn);

#endif /* ESPNN_BROADCAST_H */
