/* Test stand-in for ESP-IDF's esp_log.h: each macro prints "<letter> (<tag>) <text>" on stdout,
 * so tests can see which level a message used. */
#ifndef ESPNN_TEST_ESP_LOG_H
#define ESPNN_TEST_ESP_LOG_H

#include <stdio.h>

#define ESPNN_STANDIN_LOG(letter, tag, fmt, ...) \
    printf("%c (%s) " fmt "\n", letter, tag, ##__VA_ARGS__)
#define ESP_LOGE(tag, fmt, ...) ESPNN_STANDIN_LOG('E', tag, fmt, ##__VA_ARGS__)
#define ESP_LOGW(tag, fmt, ...) ESPNN_STANDIN_LOG('W', tag, fmt, ##__VA_ARGS__)
#define ESP_LOGI(tag, fmt, ...) ESPNN_STANDIN_LOG('I', tag, fmt, ##__VA_ARGS__)
#define ESP_LOGD(tag, fmt, ...) ESPNN_STANDIN_LOG('D', tag, fmt, ##__VA_ARGS__)
#define ESP_LOGV(tag, fmt, ...) ESPNN_STANDIN_LOG('V', tag, fmt, ##__VA_ARGS__)

#endif
