/* Test stand-in for ESP-IDF's esp_log.h: like ESP-IDF, the macros call esp_log_write(), which
 * esp_log_standin.c implements by printing "<letter> (<tag>) <text>" on stdout, so tests see
 * which level each message used. */
#ifndef ESPNN_TEST_ESP_LOG_H
#define ESPNN_TEST_ESP_LOG_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    ESP_LOG_NONE,
    ESP_LOG_ERROR,
    ESP_LOG_WARN,
    ESP_LOG_INFO,
    ESP_LOG_DEBUG,
    ESP_LOG_VERBOSE,
} esp_log_level_t;

void esp_log_write(esp_log_level_t level, const char *tag, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

#ifdef __cplusplus
}
#endif

#define ESPNN_STANDIN_LOG(level, letter, tag, fmt, ...) \
    esp_log_write(level, tag, letter " (%s) " fmt "\n", tag, ##__VA_ARGS__)
#define ESP_LOGE(tag, fmt, ...) ESPNN_STANDIN_LOG(ESP_LOG_ERROR, "E", tag, fmt, ##__VA_ARGS__)
#define ESP_LOGW(tag, fmt, ...) ESPNN_STANDIN_LOG(ESP_LOG_WARN, "W", tag, fmt, ##__VA_ARGS__)
#define ESP_LOGI(tag, fmt, ...) ESPNN_STANDIN_LOG(ESP_LOG_INFO, "I", tag, fmt, ##__VA_ARGS__)
#define ESP_LOGD(tag, fmt, ...) ESPNN_STANDIN_LOG(ESP_LOG_DEBUG, "D", tag, fmt, ##__VA_ARGS__)
#define ESP_LOGV(tag, fmt, ...) ESPNN_STANDIN_LOG(ESP_LOG_VERBOSE, "V", tag, fmt, ##__VA_ARGS__)

#endif
