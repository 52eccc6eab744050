/*
 * Memory policy: every buffer the delegate or EspnnModel allocates at init goes through here,
 * so placement (internal RAM / PSRAM / automatic) is decided in one place from Kconfig
 * (CONFIG_ESPNN_ET_*), and a failure names the buffer, the bytes, the memory and what is free.
 * ESP-IDF builds implement it on heap_caps_* (memory/espnn_mem_idf.c); host builds on aligned
 * malloc (memory/espnn_mem_host.c).  Exactly one of the two is linked; both share the decision
 * logic of memory/espnn_mem_core.c.  docs/memory.md describes each option.
 *
 * Thread safety: all functions may be called from several tasks at once.
 */
#ifndef ESPNN_MEM_H
#define ESPNN_MEM_H

#include <stdbool.h>
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

/* Where ARENA/STATE (Kconfig choice ESPNN_ET_ARENA_PLACEMENT) and PLANNED (choice
 * ESPNN_ET_PLANNED_PLACEMENT) buffers go. */
typedef enum espnn_mem_placement {
    ESPNN_PLACE_AUTO = 0,     /* internal RAM when it fits (and stays under the cap), else PSRAM */
    ESPNN_PLACE_INTERNAL = 1, /* internal RAM only */
    ESPNN_PLACE_PSRAM = 2,    /* PSRAM only */
} espnn_mem_placement_t;

/* What happens to the delegate constants (Kconfig choice ESPNN_ET_WEIGHTS). */
typedef enum espnn_mem_weights {
    ESPNN_WEIGHTS_IN_PLACE = 0, /* read in place from the .pte in flash: zero copy, no allocation */
    ESPNN_WEIGHTS_INTERNAL = 1, /* copied into internal RAM at init */
    ESPNN_WEIGHTS_PSRAM = 2,    /* copied into PSRAM at init */
} espnn_mem_weights_t;

/* The policy this build was configured with (from the CONFIG_ESPNN_ET_* macros). */
typedef struct espnn_mem_config {
    espnn_mem_placement_t arena;   /* ARENA and STATE */
    espnn_mem_placement_t planned; /* PLANNED */
    espnn_mem_weights_t weights;   /* WEIGHTS */
    size_t internal_cap;           /* bytes of internal RAM all models together may hold; 0 = no cap */
    bool psram_enabled;            /* CONFIG_SPIRAM: PSRAM support compiled in */
} espnn_mem_config_t;

typedef struct espnn_mem_block {
    void *ptr;
    size_t bytes; /* as requested: pass the block back unchanged to espnn_mem_free */
    espnn_mem_kind_t kind;
} espnn_mem_block_t;

/* Longest message espnn_mem_alloc writes (a buffer of this size never truncates). */
#define ESPNN_MEM_MSG_MAX 384

/* Allocate `bytes` aligned to `align` (a power of two; 0 means 16) for `use`.  `what` names the
 * buffer in messages ("arena of delegate 0").  A request of 0 bytes gets a valid 1-byte block.
 * On failure returns a block with ptr == NULL and kind NONE and writes a message such as
 * "arena of delegate 0: 412000 bytes do not fit in internal RAM (largest free block 180224,
 * free 231000); ..." followed by what to change, into msg (always NUL-terminated when
 * msg_size > 0; msg may be NULL).  Asking for WEIGHTS while the weights are used in place is
 * an error (check espnn_mem_get_config()->weights first). */
espnn_mem_block_t espnn_mem_alloc(espnn_mem_use_t use, size_t bytes, size_t align,
                                  const char *what, char *msg, size_t msg_size);

/* Release a block from espnn_mem_alloc.  A block with ptr == NULL is ignored. */
void espnn_mem_free(espnn_mem_block_t block);

/* malloc-style pair on top of the policy for callers that only keep the pointer (the PAL's
 * et_pal_allocate/et_pal_free): 16-byte aligned; a failure is logged with the message above. */
void *espnn_mem_malloc(espnn_mem_use_t use, size_t bytes, const char *what);
void espnn_mem_release(void *ptr);

/* The configuration compiled into this build. */
const espnn_mem_config_t *espnn_mem_get_config(void);

/* Bytes of internal RAM currently held through this policy (what the cap is compared with). */
size_t espnn_mem_internal_in_use(void);

const char *espnn_mem_kind_name(espnn_mem_kind_t kind);
const char *espnn_mem_use_name(espnn_mem_use_t use);

#ifdef __cplusplus
}
#endif

#endif /* ESPNN_MEM_H */
