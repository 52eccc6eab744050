/*
 * The memory policy's decision logic, shared by the ESP-IDF and host implementations and
 * tested on the host with a stand-in heap: which memory to try for a buffer and in which
 * order, the internal-RAM cap, and the failure message.  It touches memory only through the
 * heap table below, so it is pure C11 with no platform header.  Private to memory/.
 */
#ifndef ESPNN_MEM_CORE_H
#define ESPNN_MEM_CORE_H

#include <stdatomic.h>

#include "espnn_mem.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ESPNN_MEM_UNKNOWN_SIZE ((size_t)-1) /* a free-size query the heap cannot answer */

/* The world's heap.  `kind` is ESPNN_MEM_KIND_INTERNAL or ESPNN_MEM_KIND_PSRAM. */
typedef struct espnn_mem_heap {
    void *ctx;
    bool (*present)(void *ctx, espnn_mem_kind_t kind); /* usable now (PSRAM found at boot) */
    void *(*alloc)(void *ctx, espnn_mem_kind_t kind, size_t bytes, size_t align);
    void (*free)(void *ctx, espnn_mem_kind_t kind, void *ptr);
    size_t (*free_size)(void *ctx, espnn_mem_kind_t kind);
    size_t (*largest_free_block)(void *ctx, espnn_mem_kind_t kind);
    /* how internal blocks are labelled to callers: INTERNAL on chips, HOST on the host */
    espnn_mem_kind_t internal_kind;
} espnn_mem_heap_t;

typedef struct espnn_mem_state {
    atomic_size_t internal_in_use; /* bytes held in internal RAM through the policy */
} espnn_mem_state_t;

espnn_mem_block_t espnn_mem_core_alloc(const espnn_mem_config_t *cfg, const espnn_mem_heap_t *heap,
                                       espnn_mem_state_t *state, espnn_mem_use_t use,
                                       size_t bytes, size_t align, const char *what, char *msg,
                                       size_t msg_size);

void espnn_mem_core_free(const espnn_mem_heap_t *heap, espnn_mem_state_t *state,
                         espnn_mem_block_t block);

/* malloc-style: the block is remembered in a 16-byte header in front of the pointer. */
void *espnn_mem_core_malloc(const espnn_mem_config_t *cfg, const espnn_mem_heap_t *heap,
                            espnn_mem_state_t *state, espnn_mem_use_t use, size_t bytes,
                            const char *what, char *msg, size_t msg_size);

void espnn_mem_core_release(const espnn_mem_heap_t *heap, espnn_mem_state_t *state, void *ptr);

#ifdef __cplusplus
}
#endif

#endif /* ESPNN_MEM_CORE_H */
