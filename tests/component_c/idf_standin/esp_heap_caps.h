/* Test stand-in for ESP-IDF's esp_heap_caps.h: the declarations the memory policy uses, with
 * ESP-IDF's documented signatures and capability bits; heap_caps_standin.c implements them
 * over scripted capacities. */
#ifndef ESPNN_TEST_ESP_HEAP_CAPS_H
#define ESPNN_TEST_ESP_HEAP_CAPS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MALLOC_CAP_8BIT (1u << 2)
#define MALLOC_CAP_SPIRAM (1u << 10)
#define MALLOC_CAP_INTERNAL (1u << 11)

void *heap_caps_aligned_alloc(size_t alignment, size_t size, uint32_t caps);
void heap_caps_free(void *ptr);
size_t heap_caps_get_free_size(uint32_t caps);
size_t heap_caps_get_largest_free_block(uint32_t caps);

#ifdef __cplusplus
}
#endif

#endif
