/* Test stand-in for ESP-IDF's esp_timer.h: microseconds since boot, scripted by the test. */
#ifndef ESPNN_TEST_ESP_TIMER_H
#define ESPNN_TEST_ESP_TIMER_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif
int64_t esp_timer_get_time(void);
#ifdef __cplusplus
}
#endif

#endif
