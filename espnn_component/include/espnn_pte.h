/*
 * Description of an embedded .pte, as the build's generated header (model_pte.h) defines it.
 * EspnnModel takes one of these and sizes every pool from it: nobody guesses arena sizes.
 */
#ifndef ESPNN_PTE_H
#define ESPNN_PTE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ESPNN_PTE_DESC_VERSION 1

typedef struct espnn_pte_tensor {
    const char *name;
    uint8_t dtype; /* ESPNN_DTYPE_* of espnn_format.h: int8 or float32 */
    uint8_t rank;
    uint32_t dims[4];
    float scale;        /* quantization of the int8 side (0 when the tensor is not quantized) */
    int32_t zero_point;
    /* appended: a program input/output ExecuTorch does not plan (lower(..., io_arena=True))
     * lives in the delegate arena at arena_offset when in_arena is 1; a header without these
     * leaves them 0 (planned, or given a buffer of its own) */
    uint8_t in_arena;
    uint32_t arena_offset;
} espnn_pte_tensor_t;

/* The self-test model_pte.h embeds with custom_executorch_selftest = N (EspnnModel::self_test()).
 * Values of one program input or output, for every case, case after case. */
typedef struct espnn_selftest_tensor {
    const void *data; /* n_cases * numel values of `dtype`, 16-byte aligned, in flash */
    uint32_t numel;   /* values per case: the program tensor's element count */
    uint8_t dtype;    /* ESPNN_DTYPE_INT8 or ESPNN_DTYPE_FLOAT32: how the values are stored */
    /* int8 values of a float program tensor: its int8 grid (scale > 0).  An input is fed as
     * (float)(q - zero_point) * scale; an output is compared as
     * clamp(nearbyint((double)y / (double)scale) + zero_point).  0: the tensor's own values. */
    float scale;
    int32_t zero_point;
} espnn_selftest_tensor_t;

/* self_test() keeps one latency per case on the stack (for the median) */
#define ESPNN_SELFTEST_MAX_CASES 64

typedef struct espnn_selftest {
    uint32_t n_cases;
    const char *source;                       /* "validation", "calibration" or "random" */
    const espnn_selftest_tensor_t *inputs;    /* one per program input (n_inputs of the desc) */
    const espnn_selftest_tensor_t *expected;  /* one per program output (n_outputs) */
} espnn_selftest_t;

/* The layer table model_pte.h carries in a profiling build (custom_executorch_profile = yes):
 * what EspnnModel::profile() prints its measured times against.  Every string is printable
 * ASCII without quotes. */
typedef struct espnn_pte_profile_layer {
    const char *name;     /* the report's layer: the graph value the op writes ("" if none) */
    const char *location; /* "model.py:42 in forward", "" when unknown */
    const char *family;   /* the payload opcode, "CONV2D" */
    uint16_t partition;   /* the delegate (partition) index */
    uint16_t op;          /* the op index inside that delegate's payload */
} espnn_pte_profile_layer_t;

typedef struct espnn_pte_profile {
    uint32_t n_layers;                       /* every delegated op, in execution order */
    const espnn_pte_profile_layer_t *layers;
    uint32_t n_partitions;                   /* delegate calls of one method execution */
    const char *const *cpu_ops;              /* n_partitions + 1: the CPU operators before each
                                                delegate call and after the last ("" if none) */
} espnn_pte_profile_t;

typedef struct espnn_pte_desc {
    uint32_t desc_version; /* ESPNN_PTE_DESC_VERSION */
    const uint8_t *data;   /* the .pte, 16-byte aligned (delegate segments are 128-aligned inside) */
    uint32_t size;
    const char *sha256;    /* hex of the .pte bytes */
    const char *method;    /* "forward" */
    /* version stamps: compared with what the runtime was built with at begin() */
    const char *executorch_version;   /* e.g. "1.5.1" */
    const char *package_version;      /* executorch-espnn, e.g. "0.1.0" */
    uint16_t payload_format_major;
    uint16_t payload_format_minor;
    /* exact sizes, computed at build time */
    uint32_t arena_bytes;            /* sum over delegates of activation arenas (scratch included) */
    uint32_t state_bytes;            /* sum over delegates of decoded engine state and handles */
    uint32_t planned_bytes;          /* ExecuTorch memory-planned buffers (all mem ids) */
    uint32_t method_allocator_bytes; /* Method metadata, for ESPNN_MODEL_SIZES_POINTER_BYTES pointers */
    uint32_t temp_allocator_bytes;
    uint32_t n_inputs;
    uint32_t n_outputs;
    const espnn_pte_tensor_t *inputs;
    const espnn_pte_tensor_t *outputs;
    /* appended: a header without it leaves it NULL (no self-test), so the layout version
     * stays 1 */
    const espnn_selftest_t *selftest;
    /* appended for custom_executorch_storage = partition (docs/model-partition.md); a header
     * without them leaves them zero: the embedded model above */
    uint32_t storage;                /* ESPNN_STORAGE_EMBEDDED or ESPNN_STORAGE_PARTITION */
    const char *partition_label;     /* the data partition that holds the model image */
    uint32_t partition_size;         /* its size in bytes (the image must fit) */
    const char *target;              /* the lowering target the firmware was built for */
    const char *io_signature;        /* names, dtypes and shapes of the inputs and outputs */
    const char *io_signature_sha256; /* hex sha256 of io_signature: what an image must match */
    const char *host_image_path;     /* host board: the file that stands for the partition */
    /* appended for custom_executorch_profile = yes; NULL otherwise (no profiling) */
    const espnn_pte_profile_t *profile;
} espnn_pte_desc_t;

#define ESPNN_STORAGE_EMBEDDED 0u
#define ESPNN_STORAGE_PARTITION 1u

#ifdef __cplusplus
}
#endif

#endif /* ESPNN_PTE_H */
