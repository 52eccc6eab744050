/*
 * Scratch bytes ESP-NN's conv and depthwise kernels TOUCH (one past the highest byte they
 * write) for given operands on a given target (private).
 *
 * The C twin of executorch_espnn/scratch.py: the lowering writes this size into each op's
 * scratch_size, and prepare refuses a payload that carries less.  Both read ESP-NN 1.2.3's
 * kernel sources (see scratch_rules.c for the function each rule comes from);
 * tests/test_scratch_rules.py checks the two agree over a sweep of geometries.
 */
#ifndef ESPNN_SCRATCH_RULES_H
#define ESPNN_SCRATCH_RULES_H

#include <stdbool.h>
#include <stdint.h>

typedef struct espnn_scratch_geom {
    int32_t in_w, in_h, in_ch;
    int32_t filter_w, filter_h;
    int32_t out_w, out_h, out_ch;
    int32_t pad_w, pad_h; /* top/left: all ESP-NN takes */
    int32_t stride_w, stride_h;
    int32_t ch_mult;          /* depthwise only */
    int32_t filter_aligned16; /* the filter constant starts on a 16-byte boundary */
} espnn_scratch_geom_t;

/* target: an ESPNN_TARGET_* id.  Results fit a uint32 for every uint16 geometry ESP-NN
 * accepts (the engine checks those limits before). */
uint32_t espnn_conv_scratch_touched(int32_t target, const espnn_scratch_geom_t *g);
uint32_t espnn_depthwise_scratch_touched(int32_t target, const espnn_scratch_geom_t *g);

/* Depthwise bands (docs/engine.md, "Depthwise bands"; scratch.py's twins of the same names):
 * whether g can run in bands of output rows on target; the geometry ESP-NN sees for a band of
 * rows output rows (its exact padded input, no padding left); the scratch such a band takes
 * (its input copy, aligned up to 16, then the kernel's own); and the most rows below out_h
 * whose band fits scratch bytes, 0 if none does or g is not bandable. */
bool espnn_depthwise_bandable(int32_t target, const espnn_scratch_geom_t *g);
void espnn_depthwise_band_geom(const espnn_scratch_geom_t *g, int32_t rows,
                               espnn_scratch_geom_t *band);
uint32_t espnn_depthwise_band_scratch(int32_t target, const espnn_scratch_geom_t *g,
                                      int32_t rows);
int32_t espnn_depthwise_band_rows(int32_t target, const espnn_scratch_geom_t *g,
                                  uint32_t scratch);

#endif /* ESPNN_SCRATCH_RULES_H */
