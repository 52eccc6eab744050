/* ESP-IDF logging on the host board: ESP_LOGx(tag, fmt, ...) print "L (ms) tag: message". */
#ifndef ESPNN_HOST_ESP_LOG_H
#define ESPNN_HOST_ESP_LOG_H

#include <stdint.h>
#include <stdio.h>

#include "esp_timer.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ESPNN_HOST_LOG(letter, tag, fmt, ...)                                              \
    printf(letter " (%lu) %s: " fmt "\n", (unsigned long)(esp_timer_get_time() / 1000), \
           tag, ##__VA_ARGS__)

#define ESP_LOGE(tag, fmt, ...) ESPNN_HOST_LOG("E", tag, fmt, ##__VA_ARGS__)
#define ESP_LOGW(tag, fmt, ...) ESPNN_HOST_LOG("W", tag, fmt, ##__VA_ARGS__)
#define ESP_LOGI(tag, fmt, ...) ESPNN_HOST_LOG("I", tag, fmt, ##__VA_ARGS__)
#define ESP_LOGD(tag, fmt, ...) ((void)(tag))
#define ESP_LOGV(tag, fmt, ...) ((void)(tag))

#ifdef __cplusplus
}
#endif

#endif /* ESPNN_HOST_ESP_LOG_H */
