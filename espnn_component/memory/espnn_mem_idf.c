/*
 * Memory policy on ESP-IDF: the shared decision logic (espnn_mem_core.c) over heap_caps_*.
 * Internal RAM is MALLOC_CAP_INTERNAL | MALLOC_CAP_8BIT, PSRAM is MALLOC_CAP_SPIRAM |
 * MALLOC_CAP_8BIT; PSRAM counts as present only when it was initialised at boot (a board
 * without the chip and CONFIG_SPIRAM_IGNORE_NOTFOUND boots with it absent).
 *
 * ESP-IDF 5.x and 4.4 (Arduino-ESP32 2.0.x, espressif32 6.x's Arduino) differ here:
 *  - 5.x: esp_psram.h's esp_psram_is_initialized() (the esp_psram component, new in 5.0);
 *  - 4.4: no esp_psram.h; its PSRAM calls live in per-chip headers (esp32/spiram.h,
 *    esp32s3/spiram.h, ...).  PSRAM counts as present when the heap holds any
 *    (heap_caps_get_total_size(MALLOC_CAP_SPIRAM) > 0): ESP-IDF adds it to the heap only once
 *    it initialised, and PSRAM outside the heap is none heap_caps_* could hand out anyway;
 *  - heap_caps_aligned_alloc memory: 5.x frees it with heap_caps_free (heap_caps_aligned_free
 *    is deprecated there); before 5.0 it is freed with heap_caps_aligned_free, which is right on
 *    every 4.x (before the TLSF heap it was the only correct call).
 * esp_idf_version.h exists since ESP-IDF 4.0.
 */
#include "espnn_mem.h"

#include "esp_heap_caps.h"
#include "esp_idf_version.h"
#include "esp_log.h"
#include "espnn_mem_config.h"
#include "espnn_mem_core.h"

#if ESP_IDF_VERSION >= ESP_IDF_VERSION_VAL(5, 0, 0)
#define ESPNN_IDF_5 1
#else
#define ESPNN_IDF_5 0
#endif

#if ESPNN_CFG_SPIRAM && ESPNN_IDF_5
#include "esp_psram.h"
#endif

static const char *const TAG = "espnn_mem";

static const espnn_mem_config_t s_config = ESPNN_MEM_CONFIG_INIT;
static espnn_mem_state_t s_state;

static uint32_t caps_of(espnn_mem_kind_t kind) {
    return (kind == ESPNN_MEM_KIND_PSRAM ? MALLOC_CAP_SPIRAM : MALLOC_CAP_INTERNAL) |
           MALLOC_CAP_8BIT;
}

static bool idf_present(void *ctx, espnn_mem_kind_t kind) {
    (void)ctx;
    if (kind != ESPNN_MEM_KIND_PSRAM) {
        return true;
    }
#if ESPNN_CFG_SPIRAM && ESPNN_IDF_5
    return esp_psram_is_initialized();
#elif ESPNN_CFG_SPIRAM
    return heap_caps_get_total_size(MALLOC_CAP_SPIRAM | MALLOC_CAP_8BIT) > 0;
#else
    return false;
#endif
}

static void *idf_alloc(void *ctx, espnn_mem_kind_t kind, size_t bytes, size_t align) {
    (void)ctx;
    return heap_caps_aligned_alloc(align, bytes, caps_of(kind));
}

static void idf_free(void *ctx, espnn_mem_kind_t kind, void *ptr) {
    (void)ctx;
    (void)kind;
#if ESPNN_IDF_5
    heap_caps_free(ptr); /* frees heap_caps_aligned_alloc memory since ESP-IDF 5.0 */
#else
    heap_caps_aligned_free(ptr); /* ESP-IDF 4.x: the free that matches heap_caps_aligned_alloc */
#endif
}

static size_t idf_free_size(void *ctx, espnn_mem_kind_t kind) {
    (void)ctx;
    return heap_caps_get_free_size(caps_of(kind));
}

static size_t idf_largest(void *ctx, espnn_mem_kind_t kind) {
    (void)ctx;
    return heap_caps_get_largest_free_block(caps_of(kind));
}

static const espnn_mem_heap_t s_heap = {
    NULL, idf_present, idf_alloc, idf_free, idf_free_size, idf_largest, ESPNN_MEM_KIND_INTERNAL,
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
        ESP_LOGE(TAG, "%s", msg);
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
