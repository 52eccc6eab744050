/* Test stand-in for ESP-IDF's esp_psram.h. */
#ifndef ESPNN_TEST_ESP_PSRAM_H
#define ESPNN_TEST_ESP_PSRAM_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

bool esp_psram_is_initialized(void);
size_t esp_psram_get_size(void);

#ifdef __cplusplus
}
#endif

#endif
