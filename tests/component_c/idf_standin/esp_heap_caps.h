/* Test stand-in for ESP-IDF's esp_heap_caps.h: the declarations the memory policy uses, with
 * ESP-IDF's documented signatures and capability bits; heap_caps_standin.c implements them
 * over scripted capacities.  As in ESP-IDF 5.x, heap_caps_aligned_free is deprecated there
 * (heap_caps_free frees aligned memory); pretending to be 4.x it is the call that must free
 * heap_caps_aligned_alloc memory (esp_idf_version.h). */
#ifndef ESPNN_TEST_ESP_HEAP_CAPS_H
#define ESPNN_TEST_ESP_HEAP_CAPS_H

#include <stddef.h>
#include <stdint.h>

#include "esp_idf_version.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MALLOC_CAP_8BIT (1u << 2)
#define MALLOC_CAP_SPIRAM (1u << 10)
#define MALLOC_CAP_INTERNAL (1u << 11)

void *heap_caps_aligned_alloc(size_t alignment, size_t size, uint32_t caps);
void heap_caps_free(void *ptr);
#if ESP_IDF_VERSION >= ESP_IDF_VERSION_VAL(5, 0, 0)
void __attribute__((deprecated)) heap_caps_aligned_free(void *ptr);
#else
void heap_caps_aligned_free(void *ptr);
#endif
size_t heap_caps_get_total_size(uint32_t caps);
size_t heap_caps_get_free_size(uint32_t caps);
size_t heap_caps_get_largest_free_block(uint32_t caps);

#ifdef __cplusplus
}
#endif

#endif
