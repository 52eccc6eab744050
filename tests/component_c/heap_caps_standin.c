/*
 * Stand-in for ESP-IDF's heap_caps_* with scripted capacities: each region (internal RAM,
 * PSRAM) has a free total and a largest free block that the test sets; an allocation succeeds
 * when it fits the largest block, and then shrinks both.  Pointers are real memory.
 * Pretending to be ESP-IDF 4.x (esp_idf_version.h), memory from heap_caps_aligned_alloc must be
 * freed with heap_caps_aligned_free and there is no esp_psram (PSRAM is known by its heap
 * total); as 5.x, heap_caps_free frees it.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "esp_heap_caps.h"
#include "esp_idf_version.h"
#if ESP_IDF_VERSION >= ESP_IDF_VERSION_VAL(5, 0, 0)
#include "esp_psram.h"
#endif
#include "heap_caps_standin.h"

#define MAX_LIVE 64

typedef struct region {
    size_t free_bytes;
    size_t largest;
    size_t largest_initial;
    size_t total;
} region_t;

typedef struct live {
    void *ptr;
    size_t bytes;
    int region;
} live_t;

static region_t s_regions[2];
static bool s_psram_present;
static live_t s_live[MAX_LIVE];

static int region_of(uint32_t caps) {
    bool spiram = (caps & MALLOC_CAP_SPIRAM) != 0;
    bool internal = (caps & MALLOC_CAP_INTERNAL) != 0;
    if (spiram == internal || (caps & MALLOC_CAP_8BIT) == 0) {
        fprintf(stderr, "stand-in heap: unexpected caps 0x%x\n", (unsigned)caps);
        abort();
    }
    return spiram ? STANDIN_PSRAM : STANDIN_INTERNAL;
}

void standin_heap_script(int region, size_t free_bytes, size_t largest) {
    s_regions[region].free_bytes = free_bytes;
    s_regions[region].largest = largest;
    s_regions[region].largest_initial = largest;
    s_regions[region].total = free_bytes;
}

void standin_psram_present(bool present) {
    s_psram_present = present;
}

#if ESP_IDF_VERSION >= ESP_IDF_VERSION_VAL(5, 0, 0)
bool esp_psram_is_initialized(void) {
    return s_psram_present;
}

size_t esp_psram_get_size(void) {
    return s_psram_present ? s_regions[STANDIN_PSRAM].free_bytes : 0;
}
#endif

void *heap_caps_aligned_alloc(size_t alignment, size_t size, uint32_t caps) {
    int r = region_of(caps);
    if (r == STANDIN_PSRAM && !s_psram_present) {
        return NULL;
    }
    if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
        fprintf(stderr, "stand-in heap: bad alignment %zu\n", alignment);
        abort();
    }
    region_t *reg = &s_regions[r];
    if (size > reg->largest) {
        return NULL;
    }
    for (int i = 0; i < MAX_LIVE; i++) {
        if (s_live[i].ptr == NULL) {
            size_t rounded = (size + alignment - 1) / alignment * alignment;
            void *p = aligned_alloc(alignment < sizeof(void *) ? sizeof(void *) : alignment,
                                    rounded);
            if (p == NULL) {
                abort();
            }
            memset(p, 0xA5, size); /* callers must not rely on zeroed memory */
            s_live[i] = (live_t){p, size, r};
            reg->free_bytes -= size;
            reg->largest -= size;
            if (reg->largest > reg->free_bytes) {
                reg->largest = reg->free_bytes;
            }
            return p;
        }
    }
    abort();
}

static void release(void *ptr);

void heap_caps_free(void *ptr) {
#if ESP_IDF_VERSION < ESP_IDF_VERSION_VAL(5, 0, 0)
    if (ptr != NULL) { /* every block here came from heap_caps_aligned_alloc */
        fprintf(stderr, "stand-in heap (ESP-IDF 4.x): heap_caps_free(%p) of "
                        "heap_caps_aligned_alloc memory; use heap_caps_aligned_free\n", ptr);
        abort();
    }
#endif
    release(ptr);
}

void heap_caps_aligned_free(void *ptr) {
    release(ptr);
}

static void release(void *ptr) {
    if (ptr == NULL) {
        return;
    }
    for (int i = 0; i < MAX_LIVE; i++) {
        if (s_live[i].ptr == ptr) {
            region_t *reg = &s_regions[s_live[i].region];
            reg->free_bytes += s_live[i].bytes;
            reg->largest += s_live[i].bytes;
            if (reg->largest > reg->largest_initial) {
                reg->largest = reg->largest_initial;
            }
            free(ptr);
            s_live[i].ptr = NULL;
            return;
        }
    }
    fprintf(stderr, "stand-in heap: free of unknown pointer %p\n", ptr);
    abort();
}

size_t heap_caps_get_total_size(uint32_t caps) {
    int r = region_of(caps);
    return r == STANDIN_PSRAM && !s_psram_present ? 0 : s_regions[r].total;
}

size_t heap_caps_get_free_size(uint32_t caps) {
    int r = region_of(caps);
    return r == STANDIN_PSRAM && !s_psram_present ? 0 : s_regions[r].free_bytes;
}

size_t heap_caps_get_largest_free_block(uint32_t caps) {
    int r = region_of(caps);
    return r == STANDIN_PSRAM && !s_psram_present ? 0 : s_regions[r].largest;
}

int standin_live_count(void) {
    int n = 0;
    for (int i = 0; i < MAX_LIVE; i++) {
        n += s_live[i].ptr != NULL;
    }
    return n;
}
