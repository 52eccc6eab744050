/*
 * espnn engine: parses, validates and runs an EspNNDelegateBackend payload on the ESP-NN API.
 *
 * Plain C11, no allocation, no ExecuTorch.  The caller owns every byte of memory:
 *
 *   espnn_info_t info;
 *   espnn_inspect(payload, len, &info, &err);                 // validates everything
 *   state = alloc(info.state_bytes); arena = alloc16(info.arena_bytes);
 *   espnn_init(&model, payload, len, NULL, state, info.state_bytes, arena, info.arena_bytes, &err);
 *   espnn_set_io(&model, 0, 0, input_ptr, input_bytes);      // before every invoke, if moved
 *   espnn_set_io(&model, 1, 0, output_ptr, output_bytes);
 *   espnn_invoke(&model, &err);
 *
 * After espnn_init() returns, the payload bytes are read again only for the constants region,
 * and not at all when a copy of the constants was passed as `consts` (so the caller may free
 * the payload).  A model is not thread-safe and ESP-NN keeps its scratch pointers in globals:
 * callers serialise espnn_invoke() across all models (the ExecuTorch adapter holds a mutex).
 */
#ifndef ESPNN_ENGINE_H
#define ESPNN_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "espnn_format.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum espnn_status {
    ESPNN_OK = 0,
    ESPNN_ERR_ARGUMENT,    /* a NULL pointer or an index out of range from the caller */
    ESPNN_ERR_TRUNCATED,   /* the buffer is shorter than the header or than total_size */
    ESPNN_ERR_MAGIC,       /* not an ESNN payload */
    ESPNN_ERR_VERSION,     /* format version this engine does not read */
    ESPNN_ERR_TARGET,      /* built for a target whose kernels this runtime does not have */
    ESPNN_ERR_INVALID,     /* a field violates the format; err->field names it */
    ESPNN_ERR_UNSUPPORTED, /* an opcode or parameter combination this engine cannot run */
    ESPNN_ERR_ALIGNMENT,   /* payload, constants or arena not aligned as required */
    ESPNN_ERR_MEMORY,      /* state or arena smaller than espnn_inspect() asked for */
    ESPNN_ERR_IO,          /* an input/output buffer missing or of the wrong size */
    ESPNN_ERR_STATE,       /* invoke before init, or after a failed init */
    ESPNN_STATUS_COUNT
} espnn_status_t;

/* Where a failure is.  `field` is a static ASCII string; numbers are numbers (never raw
 * payload bytes), so a log line built from this struct is always valid UTF-8. */
typedef struct espnn_error {
    espnn_status_t status;
    const char *field; /* e.g. "stride_h", "dims[2]", "offset"; NULL if none */
    int32_t op;        /* op index, or -1 */
    int32_t opcode;    /* that op's opcode, or -1 */
    int32_t tensor;    /* tensor index, or -1 */
    int64_t value;     /* the offending value, when there is one */
    int64_t limit;     /* the bound it broke, when there is one */
} espnn_error_t;

typedef struct espnn_info {
    uint16_t format_major;
    uint16_t format_minor;
    uint8_t producer_major;
    uint8_t producer_minor;
    uint8_t producer_patch;
    uint8_t target;
    uint32_t n_tensors;
    uint32_t n_ops;
    uint32_t n_inputs;
    uint32_t n_outputs;
    uint32_t arena_bytes;  /* activation arena incl. scratch; pass a 16-byte aligned buffer */
    uint32_t state_bytes;  /* decoded tables; 4-byte aligned buffer; same on 32 and 64 bit */
    uint32_t const_offset; /* where the constants region starts in the payload */
    uint32_t const_bytes;  /* its size: what a caller copies to keep weights in RAM */
} espnn_info_t;

typedef struct espnn_io_info {
    uint8_t dtype; /* ESPNN_DTYPE_INT8 or ESPNN_DTYPE_FLOAT32 */
    uint8_t rank;
    uint32_t dims[ESPNN_MAX_RANK]; /* logical (contiguous, as ExecuTorch sees it) */
    uint32_t nbytes;
    float scale;
    int32_t zero_point;
    /* where in the arena the tensor lives when no buffer is bound (format 2.4's io homes: the
     * program's I/O planned in the arena like an activation), or ESPNN_NO_HOME */
    uint32_t arena_home;
} espnn_io_info_t;

struct espnn_state;

typedef struct espnn_model {
    const uint8_t *consts;
    uint8_t *arena;
    struct espnn_state *state; /* also holds the bound io buffers' addresses */
    espnn_info_t info;
    uint32_t ready; /* set by a successful espnn_init() */
} espnn_model_t;

/* Validate the whole payload (header, tables, every op's shapes, parameters and constant
 * values) without touching memory outside [payload, payload + len). */
espnn_status_t espnn_inspect(const void *payload, size_t len, espnn_info_t *info,
                             espnn_error_t *err);

/* Validate, then decode the payload into `state` and bind `arena`.  `consts` is NULL to use
 * the payload's constants in place (zero copy from flash), or a 16-byte aligned copy of the
 * info.const_bytes bytes at info.const_offset.
 * Fails with ESPNN_ERR_MEMORY if state_bytes/arena_bytes are below what espnn_inspect()
 * reported, ESPNN_ERR_ALIGNMENT if state is not 4-byte aligned, arena not 16-byte aligned,
 * or a multi-byte constant does not sit at a multiple of its element size (err->tensor
 * names it: a payload copied to an odd address), and with any espnn_inspect() error.
 * `model` is reset first: after a failure model->ready is 0 and invoke refuses it. */
espnn_status_t espnn_init(espnn_model_t *model, const void *payload, size_t len,
                          const void *consts, void *state, size_t state_bytes, void *arena,
                          size_t arena_bytes, espnn_error_t *err);

espnn_status_t espnn_io_info(const espnn_model_t *model, int is_output, uint32_t index,
                             espnn_io_info_t *out);

/* Bind the buffer of delegate input/output `index`; nbytes must equal its io_info nbytes
 * (else ESPNN_ERR_IO) and a float32 buffer must be 4-byte aligned (else
 * ESPNN_ERR_ALIGNMENT).  Buffers must not overlap each other or the arena.  data == NULL
 * binds the tensor's arena home (io_info's arena_home; ESPNN_ERR_ARGUMENT without one), where
 * espnn_init() binds it: an input is then written there before invoke and read back from
 * nowhere after (its bytes are reused once consumed); an output is read there after invoke. */
espnn_status_t espnn_set_io(espnn_model_t *model, int is_output, uint32_t index, void *data,
                            size_t nbytes);

/* Run every op.  Allocates nothing; sets the ESP-NN scratch pointers before each call.
 * ESPNN_ERR_STATE without a successful init, ESPNN_ERR_IO if an input/output is unbound;
 * once validated a payload cannot fail here. */
espnn_status_t espnn_invoke(espnn_model_t *model, espnn_error_t *err);

const char *espnn_status_name(espnn_status_t status);
const char *espnn_opcode_name(uint32_t opcode); /* "CONV2D", or "?" */

/* "payload invalid: op 3 (CONV2D): field 'stride_h' = 0 (limit 1)": always NUL-terminated,
 * returns the length it would have written. */
size_t espnn_format_error(const espnn_error_t *err, char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* ESPNN_ENGINE_H */
