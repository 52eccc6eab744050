/*
 * Engine internals shared by the parser (src/) and the op families (ops/).
 *
 * Lifecycle: parse (header, tables, op records) -> validate (each op family's prepare, then
 * the dataflow rules) -> bind (decode into the caller's state buffer) -> invoke (each op
 * family's eval).  See docs/engine.md.
 *
 * The decoded state holds offsets and fixed-width fields of at most 4-byte alignment; the one
 * address it keeps (an io record's bound buffer) sits in an 8-byte slot whatever the pointer
 * size, so its size (espnn_info_t.state_bytes) is the same on 32- and 64-bit builds and
 * executorch_espnn/payload/state.py computes it ahead of time from payload/format.py.
 */
#ifndef ESPNN_INTERNAL_H
#define ESPNN_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "espnn_engine.h"
#include "espnn_format.h"

#define ESPNN_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)

/* ---- parsed header -------------------------------------------------------------------- */

typedef struct espnn_hdr {
    uint16_t format_major, format_minor;
    uint8_t producer[3];
    uint8_t target;
    uint32_t total_size, flags;
    uint32_t n_tensors, n_ops, n_inputs, n_outputs;
    uint32_t tensors_offset, io_offset, ops_offset, ops_size, const_offset, const_size;
    uint32_t arena_size;
    uint32_t homes_offset; /* the io-homes table (ESPNN_HEADER_FLAG_IO_HOMES), else 0 */
} espnn_hdr_t;

/* One tensor record, decoded (only ever produced for records that passed the checks). */
typedef struct espnn_tview {
    uint8_t dtype, rank, storage, flags;
    uint32_t dims[ESPNN_MAX_RANK]; /* 1 past rank */
    uint32_t offset, nbytes, numel, esize;
    uint32_t scale_bits;
    float scale;
    int32_t zero_point;
} espnn_tview_t;

/* ---- the decoded state (caller memory, pointer-free) ----------------------------------- */

#define ESPNN_STATE_MAGIC 0x54534E45u /* "ENST" */

/* Tensors 0 .. n_records-1 (up to the last one that is not a constant) get a full record; the
 * constants after them only their byte offset (ESPNN_STATE_CONST_BYTES each): eval needs no
 * more of a constant than its address, and a model's constants outnumber its activations
 * (DS-CNN: 32 of 45 tensors), so the AOT side numbers them last (payload/order.py). */
struct espnn_state {
    uint32_t magic;
    uint32_t total_bytes;
    uint32_t n_tensors, n_records, n_ops, n_inputs, n_outputs;
    uint32_t tensors_at, consts_at, io_at, ops_at, data_at; /* byte offsets from the state start */
};

typedef struct espnn_tensor_rt {
    uint32_t offset; /* arena/const byte offset, or the io index */
    uint32_t nbytes;
    uint16_t dims[ESPNN_MAX_RANK];
    uint8_t dtype, rank, storage, flags;
} espnn_tensor_rt_t;

typedef struct espnn_io_rt {
    uint16_t tensor;
    uint16_t reserved;
    float scale;
    int32_t zero_point;
    uint32_t home; /* arena offset the io tensor lives at when no buffer is bound, or ESPNN_NO_HOME */
    /* the bound buffer's address (memcpy'd, sizeof(void *) <= 8): here rather than in
     * espnn_model_t, which would otherwise carry 2 * ESPNN_MAX_IO pointers for every delegate */
    uint32_t bound[2];
} espnn_io_rt_t;

typedef struct espnn_op_rt {
    uint8_t opcode;
    uint8_t kernel; /* the variant prepare chose (family specific) */
    uint8_t n_inputs;
    uint8_t reserved0;
    uint16_t output;
    uint16_t reserved1;
    uint32_t scratch_offset, scratch_size;
    uint32_t data_at; /* uint16 input ids (padded to 4 bytes), then the family's state */
} espnn_op_rt_t;

/* the record sizes are the payload format's (espnn_format.h, from payload/format.py) */
ESPNN_STATIC_ASSERT(sizeof(struct espnn_state) == ESPNN_STATE_HEADER_BYTES, "state header");
ESPNN_STATIC_ASSERT(sizeof(espnn_tensor_rt_t) == ESPNN_STATE_TENSOR_BYTES, "tensor record");
ESPNN_STATIC_ASSERT(sizeof(espnn_io_rt_t) == ESPNN_STATE_IO_BYTES, "io record");
ESPNN_STATIC_ASSERT(sizeof(void *) <= sizeof(((espnn_io_rt_t *)0)->bound), "io bound slot");
ESPNN_STATIC_ASSERT(sizeof(espnn_op_rt_t) == ESPNN_STATE_OP_BYTES, "op record");
ESPNN_STATIC_ASSERT(sizeof(float) == 4, "float32");

/* Largest family state.  Each family pins its struct's size with ESPNN_FAMILY_STATE against
 * the ESPNN_STATE_BYTES_<OP> of each opcode it runs: that number is OpSpec.state_bytes in
 * executorch_espnn/payload/format.py, part of the state_bytes formula computed ahead of time,
 * so a struct that grows fails to compile naming the opcode rather than overrunning the state
 * buffer the generated model header sized. */
#define ESPNN_MAX_FAMILY_STATE 128u
#define ESPNN_FAMILY_STATE(type, bytes)                                              \
    ESPNN_STATIC_ASSERT(sizeof(type) == (bytes) && (bytes) % 4u == 0 &&              \
                            (bytes) <= ESPNN_MAX_FAMILY_STATE,                       \
                        #type " must be " #bytes " bytes (change state_bytes in "    \
                        "executorch_espnn/payload/format.py and regenerate)")

/* ---- op specs (src/registry.c, generated from executorch_espnn/payload/format.py) ------ */

typedef struct espnn_op_spec {
    const char *name;
    uint8_t n_inputs;      /* fixed count; 0 for variadic (CONCAT) */
    uint8_t n_params;
    uint8_t optional_mask; /* bit s: input slot s may be absent */
    uint8_t in_place_mask; /* bit s: the output may take exactly the bytes of input slot s */
    uint8_t in_place_any_dims; /* ... whatever its dims (RESHAPE); else the dims must match */
    uint8_t since_minor;   /* the format minor that introduced the opcode */
    const char *const *params;
} espnn_op_spec_t;

const espnn_op_spec_t *espnn_op_spec(uint32_t opcode); /* NULL if unknown */

/* ---- prepare (validation + precomputation, once) --------------------------------------- */

typedef struct espnn_prep {
    const uint8_t *payload;
    const espnn_hdr_t *hdr;
    const uint8_t *consts; /* the constants (payload + const_offset, or the caller's copy): read
                            * byte-wise only */
    /* where the kernels will read the constants from: the real address in espnn_init, the
     * payload's own offset in espnn_inspect (placement unknown: a 16-aligned payload) */
    uintptr_t consts_addr;
    espnn_error_t *err;
    uint32_t op_index, opcode, n_inputs;
    uint16_t ids[ESPNN_MAX_OP_INPUTS + 1]; /* inputs, then the output */
    int32_t params[16];
    uint32_t scratch_offset, scratch_size;
    /* outputs of prepare */
    uint8_t kernel;
    void *data; /* the family's state, zero-filled, ESPNN_MAX_FAMILY_STATE bytes, aligned */
} espnn_prep_t;

/* The field of the error for an opcode this firmware did not link (ESPNN_ENGINE_SELECTS_OPS):
 * espnn_format_error() words that one as the fix rather than as a field and a limit. */
extern const char espnn_field_not_linked[];

espnn_status_t espnn_fail(espnn_error_t *err, espnn_status_t status, const char *field,
                          int32_t op, int32_t opcode, int32_t tensor, int64_t value,
                          int64_t limit);
espnn_status_t espnn_prep_fail(espnn_prep_t *p, const char *field, int64_t value, int64_t limit);
espnn_status_t espnn_prep_fail_status(espnn_prep_t *p, espnn_status_t status, const char *field,
                                      int64_t value, int64_t limit);

/* Decode a tensor record that the parser has already checked. */
void espnn_tensor_decode(const uint8_t *payload, const espnn_hdr_t *hdr, uint32_t id,
                         espnn_tview_t *t);
/* Input slot (slot < n_inputs, present) or the output (slot == n_inputs). */
void espnn_prep_tensor(const espnn_prep_t *p, uint32_t slot, espnn_tview_t *t);
bool espnn_prep_has(const espnn_prep_t *p, uint32_t slot);

/* Parameter `index` of the op within [lo, hi], else an error naming it. */
espnn_status_t espnn_prep_param(espnn_prep_t *p, uint32_t index, int64_t lo, int64_t hi,
                                int32_t *out);
const char *espnn_prep_param_name(const espnn_prep_t *p, uint32_t index);

espnn_status_t espnn_prep_dtype(espnn_prep_t *p, const espnn_tview_t *t, uint8_t want,
                                const char *field);
espnn_status_t espnn_prep_rank(espnn_prep_t *p, const espnn_tview_t *t, uint8_t want,
                               const char *field);
/* The prologue of the 4-D int8 ops (convolutions, pooling, upsampling, spatial mean): reads
 * input slot 0 into *x and output slot `out_slot` into *o, then checks int8 and rank 4 on
 * each, input first. */
espnn_status_t espnn_prep_int8_rank4_io(espnn_prep_t *p, uint32_t out_slot, espnn_tview_t *x,
                                        espnn_tview_t *o);
/* storage must be constant */
espnn_status_t espnn_prep_const(espnn_prep_t *p, uint32_t slot, espnn_tview_t *t,
                                const char *field);
/* act_min/act_max at the given parameter indices */
espnn_status_t espnn_prep_act(espnn_prep_t *p, uint32_t i_min, uint32_t i_max);
/* in_offset-style parameters (-127 .. 128) and an out_offset (-128 .. 127) */
espnn_status_t espnn_prep_in_offset(espnn_prep_t *p, uint32_t index);
espnn_status_t espnn_prep_out_offset(espnn_prep_t *p, uint32_t index);
/* filter (slot 1, int8 in [-127, 127]) and optional bias (slot 2, int32 [n], |b| <= 2^24) */
espnn_status_t espnn_prep_filter_bias(espnn_prep_t *p, uint32_t n_out);
/* mult (slot 3) and shift (slot 4): int32 [n], mult >= 0, shift in [-31, 0] */
espnn_status_t espnn_prep_requant_arrays(espnn_prep_t *p, uint32_t n);
/* what every weighted op (conv, transposed conv, fully connected) checks after its shapes, in
 * this order: in_offset, out_offset, act_min/act_max (parameter indices), filter and bias,
 * mult and shift for n_out output channels */
espnn_status_t espnn_prep_weighted(espnn_prep_t *p, uint32_t i_in_offset, uint32_t i_out_offset,
                                   uint32_t i_act_min, uint32_t i_act_max, uint32_t n_out);

int32_t espnn_const_i32(const espnn_prep_t *p, const espnn_tview_t *t, uint32_t index);

bool espnn_dims_equal(const espnn_tview_t *a, const espnn_tview_t *b);

/* ---- eval (no checks, no allocation) --------------------------------------------------- */

typedef struct espnn_exec {
    const espnn_tensor_rt_t *tensors;
    const espnn_op_rt_t *op;
    const uint16_t *ids; /* input ids */
    const void *data;    /* the family's state */
    const void *in[ESPNN_MAX_OP_INPUTS]; /* NULL for an absent optional input */
    void *out;
    void *scratch; /* arena + scratch_offset, or NULL without scratch */
} espnn_exec_t;

typedef struct espnn_op_family {
    espnn_status_t (*prepare)(espnn_prep_t *p);
    void (*eval)(const espnn_exec_t *x);
    uint32_t state_bytes; /* multiple of 4, <= ESPNN_MAX_FAMILY_STATE */
} espnn_op_family_t;

/* Which op families this firmware links (src/registry.c): every one unless the build says its
 * models are all embedded (ESPNN_ENGINE_OPS_FROM_MODELS=1) and nobody asked for all
 * (-DESPNN_ENGINE_ALL_OPS=1, or CONFIG_ESPNN_ET_ALL_OPS in the build's Kconfig header:
 * espnn_sdkconfig.h on host and Arduino builds, ESP-IDF's sdkconfig.h).  Selecting needs weak
 * references to undefined symbols: ELF only. */
#if defined(ESPNN_ENGINE_OPS_FROM_MODELS) && ESPNN_ENGINE_OPS_FROM_MODELS && \
    !defined(ESPNN_ENGINE_ALL_OPS) && defined(__has_include)
#if __has_include("espnn_sdkconfig.h")
#include "espnn_sdkconfig.h"
#elif defined(ESP_PLATFORM) && __has_include("sdkconfig.h")
#include "sdkconfig.h"
#endif
#if defined(CONFIG_ESPNN_ET_ALL_OPS) && CONFIG_ESPNN_ET_ALL_OPS
#define ESPNN_ENGINE_ALL_OPS 1
#endif
#endif
#if defined(ESPNN_ENGINE_OPS_FROM_MODELS) && ESPNN_ENGINE_OPS_FROM_MODELS && \
    !(defined(ESPNN_ENGINE_ALL_OPS) && ESPNN_ENGINE_ALL_OPS) && defined(__ELF__)
#define ESPNN_ENGINE_SELECTS_OPS 1
#else
#define ESPNN_ENGINE_SELECTS_OPS 0
#endif

/* NULL if unknown, or (ESPNN_ENGINE_SELECTS_OPS) if no embedded model uses the opcode;
 * espnn_family_<opcode>, each defined in ops/<family>.c */
const espnn_op_family_t *espnn_op_family(uint32_t opcode);

/* element size of a dtype (0 if unknown) */
uint32_t espnn_dtype_size(uint32_t dtype);

/* ---- the target this runtime's kernels belong to --------------------------------------- */
/* -1: any (host simulator, bare-metal test builds).  On ESP-IDF, the chip's target id. */
#if defined(ESP_PLATFORM)
#include "sdkconfig.h"
#endif
#ifndef ESPNN_BUILD_TARGET
#if defined(ESP_PLATFORM)
#if defined(CONFIG_IDF_TARGET_ESP32)
#define ESPNN_BUILD_TARGET ESPNN_TARGET_ESP32
#elif defined(CONFIG_IDF_TARGET_ESP32S2)
#define ESPNN_BUILD_TARGET ESPNN_TARGET_ESP32S2
#elif defined(CONFIG_IDF_TARGET_ESP32S3)
#define ESPNN_BUILD_TARGET ESPNN_TARGET_ESP32S3
#elif defined(CONFIG_IDF_TARGET_ESP32C3)
#define ESPNN_BUILD_TARGET ESPNN_TARGET_ESP32C3
#elif defined(CONFIG_IDF_TARGET_ESP32C6)
#define ESPNN_BUILD_TARGET ESPNN_TARGET_ESP32C6
#elif defined(CONFIG_IDF_TARGET_ESP32P4)
#define ESPNN_BUILD_TARGET ESPNN_TARGET_ESP32P4
#else
#define ESPNN_BUILD_TARGET (-1)
#endif
#else
#define ESPNN_BUILD_TARGET (-1)
#endif
#endif

#endif /* ESPNN_INTERNAL_H */
