/*
 * What the TFLM firmware of benchmarks/vs_tflm.py needs from the board: a tick count (the
 * Cortex-M7's SysTick, as emulated/cortex_m/board.c reads it for our firmware), TFLM's debug
 * log on stdout (picolibc's semihosting stdio), and esp_timer_get_time() for the esp-nn
 * kernels' optional per-op timing (include/esp_timer.h).
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#include "esp_timer.h"

extern uint64_t espnn_baremetal_ticks(void);

uint64_t tflm_ticks(void)
{
    /* the first read starts the SysTick, whose counter reads 0 until its first reload (board.c
     * then says RELOAD): wait for it to move once, so every later read is a time */
    static int started;
    if (!started) {
        started = 1;
        const uint64_t first = espnn_baremetal_ticks();
        while (espnn_baremetal_ticks() == first) {
        }
    }
    return espnn_baremetal_ticks();
}

int64_t esp_timer_get_time(void) { return (int64_t)(espnn_baremetal_ticks() / 25u); }

/* tensorflow/lite/micro/debug_log.h */
void DebugLog(const char *format, va_list args) { vprintf(format, args); }
int DebugVsnprintf(char *buffer, size_t buf_size, const char *format, va_list vlist)
{
    return vsnprintf(buffer, buf_size, format, vlist);
}
