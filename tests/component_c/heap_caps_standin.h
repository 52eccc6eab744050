/* Scripting interface of the stand-in heap (heap_caps_standin.c). */
#ifndef ESPNN_TEST_HEAP_CAPS_STANDIN_H
#define ESPNN_TEST_HEAP_CAPS_STANDIN_H

#include <stdbool.h>
#include <stddef.h>

#define STANDIN_INTERNAL 0
#define STANDIN_PSRAM 1

#ifdef __cplusplus
extern "C" {
#endif

void standin_heap_script(int region, size_t free_bytes, size_t largest);
void standin_psram_present(bool present);
int standin_live_count(void);

#ifdef __cplusplus
}
#endif

#endif
