/*
 * Memory policy for host builds: the shared decision logic over the C library heap.  The host
 * behaves like a board without PSRAM whose internal RAM is the process heap; the cap
 * (CONFIG_ESPNN_ET_INTERNAL_RAM_CAP) still applies, so a host run can show whether a model
 * stays within the budget set for the board.
 */
#include "espnn_mem.h"

#include <stdio.h>
#include <stdlib.h>

#include "espnn_mem_config.h"
#include "espnn_mem_core.h"

static const espnn_mem_config_t s_config = ESPNN_MEM_CONFIG_INIT;
static espnn_mem_state_t s_state;

static bool host_present(void *ctx, espnn_mem_kind_t kind) {
    (void)ctx;
    return kind != ESPNN_MEM_KIND_PSRAM;
}

static void *host_alloc(void *ctx, espnn_mem_kind_t kind, size_t bytes, size_t align) {
    (void)ctx;
    if (kind == ESPNN_MEM_KIND_PSRAM) {
        return NULL;
    }
    if (align < sizeof(void *)) {
        align = sizeof(void *);
    }
    /* C11 aligned_alloc wants a size that is a multiple of the alignment. */
    size_t rounded = (bytes + align - 1) / align * align;
    if (rounded < bytes) {
        return NULL;
    }
    return aligned_alloc(align, rounded);
}

static void host_free(void *ctx, espnn_mem_kind_t kind, void *ptr) {
    (void)ctx;
    (void)kind;
    free(ptr);
}

static size_t host_unknown(void *ctx, espnn_mem_kind_t kind) {
    (void)ctx;
    (void)kind;
    return ESPNN_MEM_UNKNOWN_SIZE;
}

static const espnn_mem_heap_t s_heap = {
    NULL, host_present, host_alloc, host_free, host_unknown, host_unknown, ESPNN_MEM_KIND_HOST,
};

espnn_mem_block_t espnn_mem_alloc(espnn_mem_use_t use, size_t bytes, size_t align,
                                  const char *what, char *msg, size_t msg_size) {
    return espnn_mem_core_alloc(&s_config, &s_heap, &s_state, use, bytes, align, what, msg,
                                msg_size);
}

void espnn_mem_free(espnn_mem_block_t block) {
    espnn_mem_core_free(&s_heap, &s_state, block);
}

void *espnn_mem_malloc(espnn_mem_use_t use, size_t bytes, const char *what) {
    char msg[ESPNN_MEM_MSG_MAX];
    void *p = espnn_mem_core_malloc(&s_config, &s_heap, &s_state, use, bytes, what, msg,
                                    sizeof msg);
    if (p == NULL) {
        fprintf(stderr, "espnn_mem: %s\n", msg);
    }
    return p;
}

void espnn_mem_release(void *ptr) {
    espnn_mem_core_release(&s_heap, &s_state, ptr);
}

const espnn_mem_config_t *espnn_mem_get_config(void) {
    return &s_config;
}

size_t espnn_mem_internal_in_use(void) {
    return atomic_load(&s_state.internal_in_use);
}
