/* Payload parsing and validation (private). */
#ifndef ESPNN_PARSE_H
#define ESPNN_PARSE_H

#include "espnn_internal.h"

/* One op record, decoded after the structural checks passed. */
typedef struct espnn_oprec {
    uint32_t pos; /* byte offset of the record in the payload */
    uint32_t opcode, n_inputs, record_size, scratch_offset, scratch_size;
    uint16_t ids[ESPNN_MAX_OP_INPUTS + 1]; /* inputs, then the output */
    int32_t params[16];
} espnn_oprec_t;

void espnn_oprec_decode(const uint8_t *payload, uint32_t pos, espnn_oprec_t *r);

/* Header, tensor table, io table and op records (docs/payload-format.md, "Layout"). */
espnn_status_t espnn_parse_structure(const uint8_t *buf, size_t len, espnn_hdr_t *hdr,
                                     espnn_error_t *err);

/* Every op's semantic rules (its family's prepare) and the dataflow rules.  `consts` is where
 * the kernels will read the constants (NULL: in the payload): prepare checks the real filter
 * alignment the S3 kernels' scratch depends on.  With `sink` non-NULL, each op's prepared
 * state is handed to it (used by espnn_init to fill the state). */
typedef void (*espnn_prep_sink_t)(void *ctx, uint32_t op_index, const espnn_oprec_t *rec,
                                  const espnn_prep_t *p);
espnn_status_t espnn_validate_ops(const uint8_t *buf, const espnn_hdr_t *hdr,
                                  const uint8_t *consts, espnn_error_t *err,
                                  espnn_prep_sink_t sink, void *sink_ctx);

/* Tensors with a full record in the decoded state: up to the last one that is not a constant
 * (the constants after it keep only their offset). */
uint32_t espnn_state_records(const uint8_t *buf, const espnn_hdr_t *hdr);

/* Bytes the decoded state needs (same formula as executorch_espnn/payload/state.py). */
uint32_t espnn_state_bytes(const uint8_t *buf, const espnn_hdr_t *hdr);

#endif /* ESPNN_PARSE_H */
