/* The one ESP-IDF function esp-tflite-micro's ESP-NN kernels call (their per-op timing), for the
 * emulated Cortex-M7 of benchmarks/vs_tflm.py: microseconds from the board's tick count. */
#ifndef VS_TFLM_ESP_TIMER_H
#define VS_TFLM_ESP_TIMER_H
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
int64_t esp_timer_get_time(void);
#ifdef __cplusplus
}
#endif
#endif
