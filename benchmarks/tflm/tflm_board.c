/*
 * What the TFLM firmware of benchmarks/vs_tflm.py needs from the board: an instruction count
 * (emu_instructions(), the one our firmware's EMU INSN lines read on the same board: the
 * Cortex-M7's SysTick under -icount, the ESP32-C3's minstret, the ESP32-S3's CCOUNT under
 * -icount), TFLM's debug log on stdout, and esp_timer_get_time() for the esp-nn kernels'
 * optional per-op timing (include/esp_timer.h).
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#include "esp_timer.h"
#include "espnn_baremetal.h"

uint64_t emu_instructions(void); /* the board's (emulated/cortex_m/icount.c, esp32c3/board.c, ...) */
uint64_t tflm_instructions(void);

uint64_t tflm_instructions(void)
{
#ifdef __ARM_ARCH
    /* the Cortex-M7's first read starts its SysTick, whose counter reads 0 until its first
     * reload: wait for it to move once, so every later read is a count (the ESP32s' counters
     * run from reset) */
    static int started;
    if (!started) {
        started = 1;
        const uint64_t first = espnn_baremetal_ticks();
        while (espnn_baremetal_ticks() == first) {
        }
    }
#endif
    return emu_instructions();
}

int64_t esp_timer_get_time(void)
{
    return (int64_t)(espnn_baremetal_ticks() * 1000000u / espnn_baremetal_ticks_per_second());
}

/* tensorflow/lite/micro/debug_log.h */
void DebugLog(const char *format, va_list args) { vprintf(format, args); }
int DebugVsnprintf(char *buffer, size_t buf_size, const char *format, va_list vlist)
{
    return vsnprintf(buffer, buf_size, format, vlist);
}
