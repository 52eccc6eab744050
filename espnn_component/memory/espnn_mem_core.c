/*
 * Decision logic of the memory policy (see espnn_mem_core.h and docs/memory.md).
 *
 * For each buffer: pick the list of memories to try from its use and the configuration
 * (automatic: internal RAM then PSRAM; internal only; PSRAM only), skip internal RAM when the
 * buffer would push the models' internal RAM over the cap, and on failure describe every
 * attempt with the free memory it saw, then say which option to change.
 */
#include "espnn_mem_core.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define DEFAULT_ALIGN 16u
#define MALLOC_HEADER 16u /* keeps the caller's pointer 16-byte aligned */
#define MAX_TRIES 2

typedef struct mem_header {
    size_t bytes;
    espnn_mem_kind_t kind;
} mem_header_t;

_Static_assert(sizeof(mem_header_t) <= MALLOC_HEADER, "malloc header must fit in 16 bytes");

typedef struct msg_buf {
    char *s;
    size_t size;
    size_t len;
} msg_buf_t;

static void put(msg_buf_t *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(msg_buf_t *m, const char *fmt, ...) {
    if (m->s == NULL || m->size == 0 || m->len >= m->size - 1) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(m->s + m->len, m->size - m->len, fmt, ap);
    va_end(ap);
    if (n > 0) {
        size_t room = m->size - 1 - m->len;
        m->len += (size_t)n < room ? (size_t)n : room;
    }
}

/* %lu, not %zu: newlib-nano's printf on ESP-IDF does not know the z modifier. */
static void put_free(msg_buf_t *m, const espnn_mem_heap_t *heap, espnn_mem_kind_t kind) {
    size_t largest = heap->largest_free_block(heap->ctx, kind);
    size_t total = heap->free_size(heap->ctx, kind);
    if (largest == ESPNN_MEM_UNKNOWN_SIZE || total == ESPNN_MEM_UNKNOWN_SIZE) {
        put(m, " (free memory unknown)");
    } else {
        put(m, " (largest free block %lu, free %lu)", (unsigned long)largest,
            (unsigned long)total);
    }
}

const char *espnn_mem_kind_name(espnn_mem_kind_t kind) {
    switch (kind) {
    case ESPNN_MEM_KIND_INTERNAL:
        return "internal RAM";
    case ESPNN_MEM_KIND_PSRAM:
        return "PSRAM";
    case ESPNN_MEM_KIND_HOST:
        return "host heap";
    case ESPNN_MEM_KIND_NONE:
        break;
    }
    return "no memory";
}

const char *espnn_mem_use_name(espnn_mem_use_t use) {
    switch (use) {
    case ESPNN_MEM_ARENA:
        return "arena";
    case ESPNN_MEM_PLANNED:
        return "planned buffers";
    case ESPNN_MEM_WEIGHTS:
        return "weights copy";
    case ESPNN_MEM_STATE:
        return "delegate state";
    }
    return "buffer";
}

/* The Kconfig choice that governs a use, for hints ("CONFIG_ESPNN_ET_ARENA_IN_AUTO"). */
static const char *choice_prefix(espnn_mem_use_t use) {
    return use == ESPNN_MEM_PLANNED ? "CONFIG_ESPNN_ET_PLANNED_IN" : "CONFIG_ESPNN_ET_ARENA_IN";
}

/* Reserve bytes of internal RAM against the cap; false when the cap would be crossed. */
static bool reserve_internal(const espnn_mem_config_t *cfg, espnn_mem_state_t *state,
                             size_t bytes, size_t *held) {
    size_t cur = atomic_load(&state->internal_in_use);
    for (;;) {
        *held = cur;
        if (cfg->internal_cap != 0 &&
            (bytes > cfg->internal_cap || cur > cfg->internal_cap - bytes)) {
            return false;
        }
        if (atomic_compare_exchange_weak(&state->internal_in_use, &cur, cur + bytes)) {
            return true;
        }
    }
}

static void unreserve_internal(espnn_mem_state_t *state, size_t bytes) {
    atomic_fetch_sub(&state->internal_in_use, bytes);
}

static espnn_mem_block_t failed(void) {
    espnn_mem_block_t b = {NULL, 0, ESPNN_MEM_KIND_NONE};
    return b;
}

static void placement_hint(msg_buf_t *m, const espnn_mem_config_t *cfg, espnn_mem_use_t use,
                           espnn_mem_placement_t place, bool psram_tried) {
    const char *choice = choice_prefix(use);
    if (use == ESPNN_MEM_WEIGHTS) {
        put(m, "; use the weights in place from flash (CONFIG_ESPNN_ET_WEIGHTS_IN_FLASH=y)");
        return;
    }
    switch (place) {
    case ESPNN_PLACE_INTERNAL:
        if (cfg->psram_enabled) {
            put(m, "; let it go to PSRAM with %s_AUTO=y or %s_PSRAM=y", choice, choice);
        } else {
            put(m, "; this build has no PSRAM support (CONFIG_SPIRAM): shrink the model or "
                   "use a board with PSRAM");
        }
        return;
    case ESPNN_PLACE_PSRAM:
        put(m, "; choose %s_AUTO=y to use internal RAM too, or a board with more PSRAM", choice);
        return;
    case ESPNN_PLACE_AUTO:
        break;
    }
    if (!cfg->psram_enabled) {
        put(m, "; this build has no PSRAM support (CONFIG_SPIRAM): shrink the model or "
               "use a board with PSRAM and enable it");
    } else if (psram_tried) {
        put(m, "; free memory before loading the model, or shrink the model");
    } else {
        put(m, "; check the board's PSRAM, or shrink the model");
    }
}

static void hint(msg_buf_t *m, const espnn_mem_config_t *cfg, espnn_mem_use_t use,
                 espnn_mem_placement_t place, bool capped, bool psram_tried) {
    placement_hint(m, cfg, use, place, psram_tried);
    if (capped) {
        put(m, ", or raise CONFIG_ESPNN_ET_INTERNAL_RAM_CAP");
    }
}

/* `extra` bytes (the malloc header) are allocated in front but left out of messages. */
static espnn_mem_block_t alloc_impl(const espnn_mem_config_t *cfg, const espnn_mem_heap_t *heap,
                                    espnn_mem_state_t *state, espnn_mem_use_t use, size_t bytes,
                                    size_t extra, size_t align, const char *what, char *msg,
                                    size_t msg_size) {
    msg_buf_t m = {msg, msg_size, 0};
    if (msg != NULL && msg_size > 0) {
        msg[0] = '\0';
    }
    if (what == NULL) {
        what = espnn_mem_use_name(use);
    }
    if (align == 0) {
        align = DEFAULT_ALIGN;
    }
    if ((align & (align - 1)) != 0) {
        put(&m, "%s: alignment %lu is not a power of two", what, (unsigned long)align);
        return failed();
    }
    if (bytes == 0) {
        bytes = 1; /* a valid, distinct pointer; callers need not special-case empty buffers */
    }
    if (bytes > (size_t)-1 - extra) {
        put(&m, "%s: %lu bytes is more than any memory can hold", what, (unsigned long)bytes);
        return failed();
    }
    size_t total = bytes + extra;

    espnn_mem_kind_t order[MAX_TRIES];
    int n_order = 0;
    espnn_mem_placement_t place = ESPNN_PLACE_AUTO;
    switch (use) {
    case ESPNN_MEM_WEIGHTS:
        if (cfg->weights == ESPNN_WEIGHTS_IN_PLACE) {
            put(&m, "%s: the weights are used in place from flash "
                    "(CONFIG_ESPNN_ET_WEIGHTS_IN_FLASH): nothing to allocate",
                what);
            return failed();
        }
        place = cfg->weights == ESPNN_WEIGHTS_PSRAM ? ESPNN_PLACE_PSRAM : ESPNN_PLACE_INTERNAL;
        break;
    case ESPNN_MEM_PLANNED:
        place = cfg->planned;
        break;
    case ESPNN_MEM_ARENA:
    case ESPNN_MEM_STATE:
    default:
        place = cfg->arena;
        break;
    }
    if (place != ESPNN_PLACE_PSRAM) {
        order[n_order++] = ESPNN_MEM_KIND_INTERNAL;
    }
    if (place == ESPNN_PLACE_PSRAM || (place == ESPNN_PLACE_AUTO && cfg->psram_enabled)) {
        order[n_order++] = ESPNN_MEM_KIND_PSRAM;
    }

    put(&m, "%s: %lu bytes", what, (unsigned long)bytes);
    bytes = total;
    bool capped = false;
    bool psram_tried = false;
    for (int i = 0; i < n_order; i++) {
        espnn_mem_kind_t kind = order[i];
        if (i > 0) {
            put(&m, " and");
        }
        if (kind == ESPNN_MEM_KIND_PSRAM) {
            if (!cfg->psram_enabled) {
                put(&m, " cannot use PSRAM: PSRAM support is off (CONFIG_SPIRAM)");
                continue;
            }
            if (!heap->present(heap->ctx, kind)) {
                put(&m, " cannot use PSRAM: none was found at boot");
                continue;
            }
            psram_tried = true;
            void *p = heap->alloc(heap->ctx, kind, bytes, align);
            if (p != NULL) {
                if (msg != NULL && msg_size > 0) {
                    msg[0] = '\0';
                }
                espnn_mem_block_t b = {p, bytes, ESPNN_MEM_KIND_PSRAM};
                return b;
            }
            put(&m, " do not fit in PSRAM");
            put_free(&m, heap, kind);
            continue;
        }
        size_t held = 0;
        if (!reserve_internal(cfg, state, bytes, &held)) {
            capped = true;
            put(&m, " would take the models' internal RAM over the cap "
                    "(CONFIG_ESPNN_ET_INTERNAL_RAM_CAP=%lu, %lu already held)",
                (unsigned long)cfg->internal_cap, (unsigned long)held);
            continue;
        }
        void *p = heap->alloc(heap->ctx, kind, bytes, align);
        if (p != NULL) {
            if (msg != NULL && msg_size > 0) {
                msg[0] = '\0';
            }
            espnn_mem_block_t b = {p, bytes, heap->internal_kind};
            return b;
        }
        unreserve_internal(state, bytes);
        put(&m, " do not fit in %s", espnn_mem_kind_name(heap->internal_kind));
        put_free(&m, heap, kind);
    }
    hint(&m, cfg, use, place, capped, psram_tried);
    return failed();
}

espnn_mem_block_t espnn_mem_core_alloc(const espnn_mem_config_t *cfg, const espnn_mem_heap_t *heap,
                                       espnn_mem_state_t *state, espnn_mem_use_t use,
                                       size_t bytes, size_t align, const char *what, char *msg,
                                       size_t msg_size) {
    return alloc_impl(cfg, heap, state, use, bytes, 0, align, what, msg, msg_size);
}

void espnn_mem_core_free(const espnn_mem_heap_t *heap, espnn_mem_state_t *state,
                         espnn_mem_block_t block) {
    if (block.ptr == NULL) {
        return;
    }
    if (block.kind == ESPNN_MEM_KIND_PSRAM) {
        heap->free(heap->ctx, ESPNN_MEM_KIND_PSRAM, block.ptr);
        return;
    }
    heap->free(heap->ctx, ESPNN_MEM_KIND_INTERNAL, block.ptr);
    unreserve_internal(state, block.bytes);
}

void *espnn_mem_core_malloc(const espnn_mem_config_t *cfg, const espnn_mem_heap_t *heap,
                            espnn_mem_state_t *state, espnn_mem_use_t use, size_t bytes,
                            const char *what, char *msg, size_t msg_size) {
    espnn_mem_block_t b = alloc_impl(cfg, heap, state, use, bytes, MALLOC_HEADER, MALLOC_HEADER,
                                     what, msg, msg_size);
    if (b.ptr == NULL) {
        return NULL;
    }
    mem_header_t h = {b.bytes, b.kind};
    memcpy(b.ptr, &h, sizeof h);
    return (unsigned char *)b.ptr + MALLOC_HEADER;
}

void espnn_mem_core_release(const espnn_mem_heap_t *heap, espnn_mem_state_t *state, void *ptr) {
    if (ptr == NULL) {
        return;
    }
    unsigned char *base = (unsigned char *)ptr - MALLOC_HEADER;
    mem_header_t h;
    memcpy(&h, base, sizeof h);
    espnn_mem_block_t b = {base, h.bytes, h.kind};
    espnn_mem_core_free(heap, state, b);
}
