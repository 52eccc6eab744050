/*
 * Memory policy: every buffer the delegate or EspnnModel allocates at init goes through here,
 * so placement (internal RAM / PSRAM / automatic) is decided in one place from Kconfig
 * (CONFIG_ESPNN_ET_*), and a failure names the buffer, the bytes, the memory and what is free.
 * ESP-IDF builds implement it on heap_caps_*; host builds on aligned malloc (or a test stand-in).
 */
#ifndef ESPNN_MEM_H
#define ESPNN_MEM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum espnn_mem_use {
    ESPNN_MEM_ARENA = 0,   /* delegate activation arena (hot: internal RAM preferred) */
    ESPNN_MEM_PLANNED = 1, /* ExecuTorch's planned buffers (inputs/outputs, CPU-op tensors) */
    ESPNN_MEM_WEIGHTS = 2, /* a copy of the delegate constants, when not used in place */
    ESPNN_MEM_STATE = 3,   /* delegate handle, decoded tables, method allocator pool */
} espnn_mem_use_t;

typedef enum espnn_mem_kind {
    ESPNN_MEM_KIND_NONE = 0,
    ESPNN_MEM_KIND_INTERNAL = 1,
    ESPNN_MEM_KIND_PSRAM = 2,
    ESPNN_MEM_KIND_HOST = 3, /* the host simulator's heap */
} espnn_mem_kind_t;

typedef struct espnn_mem_block {
    void *ptr;
    size_t bytes;
    espnn_mem_kind_t kind;
} espnn_mem_block_t;

/* Allocate `bytes` aligned to `align` (a power of two) for `use`.  `what` names the buffer in
 * messages ("arena of delegate 0").  On failure returns a block with ptr == NULL and writes a
 * message such as "arena of delegate 0: 412000 bytes do not fit in internal RAM (largest
 * free block 180224, free 231000); enable PSRAM placement (CONFIG_ESPNN_ET_PLACEMENT_AUTO)"
 * into msg (always NUL-terminated when msg_size > 0). */
espnn_mem_block_t espnn_mem_alloc(espnn_mem_use_t use, size_t bytes, size_t align,
                                  const char *what, char *msg, size_t msg_size);

void espnn_mem_free(espnn_mem_block_t block);

const char *espnn_mem_kind_name(espnn_mem_kind_t kind);

#ifdef __cplusplus
}
#endif

#endif /* ESPNN_MEM_H */
