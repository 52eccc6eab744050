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
} espnn_pte_tensor_t;

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
} espnn_pte_desc_t;

#ifdef __cplusplus
}
#endif

#endif /* ESPNN_PTE_H */
