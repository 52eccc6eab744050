/* Test stand-in for ESP-IDF's esp_idf_version.h (ESP-IDF 4.0 and newer have it).  The version
 * is the test's choice: -DESPNN_STANDIN_IDF_MAJOR=4 -DESPNN_STANDIN_IDF_MINOR=4 pretends to be
 * ESP-IDF 4.4 (Arduino-ESP32 2.0.x), the default is ESP-IDF 5.3. */
#ifndef ESPNN_TEST_ESP_IDF_VERSION_H
#define ESPNN_TEST_ESP_IDF_VERSION_H

#ifndef ESPNN_STANDIN_IDF_MAJOR
#define ESPNN_STANDIN_IDF_MAJOR 5
#define ESPNN_STANDIN_IDF_MINOR 3
#endif
#ifndef ESPNN_STANDIN_IDF_MINOR
#define ESPNN_STANDIN_IDF_MINOR 0
#endif

#define ESP_IDF_VERSION_MAJOR ESPNN_STANDIN_IDF_MAJOR
#define ESP_IDF_VERSION_MINOR ESPNN_STANDIN_IDF_MINOR
#define ESP_IDF_VERSION_PATCH 0
#define ESP_IDF_VERSION_VAL(major, minor, patch) (((major) << 16) | ((minor) << 8) | (patch))
#define ESP_IDF_VERSION \
    ESP_IDF_VERSION_VAL(ESP_IDF_VERSION_MAJOR, ESP_IDF_VERSION_MINOR, ESP_IDF_VERSION_PATCH)

#endif
