/* ESP-IDF esp_timer on the host board: microseconds since the program started. */
#ifndef ESPNN_HOST_ESP_TIMER_H
#define ESPNN_HOST_ESP_TIMER_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

int64_t esp_timer_get_time(void);

#ifdef __cplusplus
}
#endif

#endif /* ESPNN_HOST_ESP_TIMER_H */
