/* Test stand-in for ESP-IDF's esp_psram.h, which exists from ESP-IDF 5.0 on (the esp_psram
 * component): pretending to be ESP-IDF 4.4, including it fails as the missing file would. */
#ifndef ESPNN_TEST_ESP_PSRAM_H
#define ESPNN_TEST_ESP_PSRAM_H

#include <stdbool.h>
#include <stddef.h>

#include "esp_idf_version.h"

#if ESP_IDF_VERSION < ESP_IDF_VERSION_VAL(5, 0, 0)
#error "esp_psram.h: no such file in ESP-IDF 4.x (stand-in pretending to be ESP-IDF 4.x)"
#endif

#ifdef __cplusplus
extern "C" {
#endif

bool esp_psram_is_initialized(void);
size_t esp_psram_get_size(void);

#ifdef __cplusplus
}
#endif

#endif
