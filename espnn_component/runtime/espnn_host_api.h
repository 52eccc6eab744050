/*
 * C entry points of the host shared library (libexecutorch_espnn_host.so) for Python's ctypes,
 * besides the registration functions of executorch_espnn.h.  Host builds only.
 */
#ifndef ESPNN_HOST_API_H
#define ESPNN_HOST_API_H

#include <stddef.h>
#include <stdint.h>

#include "executorch_espnn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What EspnnModel needs to run one method of a program, measured by loading it and running
 * it once on zero inputs in this process (the kernels the program uses must be registered). */
typedef struct executorch_espnn_pte_sizes {
    uint64_t planned_bytes;          /* the planned buffers back to back, each starting 16-aligned */
    uint64_t method_allocator_bytes; /* what Method::load took from the method allocator */
    uint64_t temp_allocator_bytes;   /* peak temp allocation of one execute() */
    uint64_t delegate_handle_bytes;  /* the rest: what the EspNN delegates took from the policy */
    uint64_t delegate_state_bytes;
    uint64_t delegate_arena_bytes;   /* the largest delegate's arena: EspnnModel lends one to all */
    uint64_t delegate_weights_bytes;
    uint32_t n_planned_buffers;
    uint32_t n_delegates;
    uint32_t pointer_bytes; /* sizeof(void*) of the build that measured */
} executorch_espnn_pte_sizes_t;

/* 0 on success; otherwise the ExecuTorch error code (or -1 for a bad argument) and a message. */
EXECUTORCH_ESPNN_API int executorch_espnn_measure_pte(const void *pte, size_t size, const char *method,
                                                      executorch_espnn_pte_sizes_t *out, char *msg,
                                                      size_t msg_size);

/* The version strings this library was built with. */
EXECUTORCH_ESPNN_API const char *executorch_espnn_package_version(void);
EXECUTORCH_ESPNN_API const char *executorch_espnn_executorch_version(void);

#ifdef __cplusplus
}
#endif

#endif /* ESPNN_HOST_API_H */
