/*
 * Runs the ESP-IDF PAL (pal/espnn_pal_idf.cpp) on the host against stand-in esp_timer/esp_log
 * and the memory policy over the stand-in heap; prints what each et_pal_* call did
 * (tests/test_pal.py).
 */
#include <executorch/runtime/platform/platform.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "espnn_mem.h"
#include "heap_caps_standin.h"

static int64_t s_now_us;

extern "C" int64_t esp_timer_get_time(void) {
    return s_now_us;
}

int main() {
    et_pal_init();
    const int64_t times[] = {0, 18 * 1000000LL, 20 * 1000000LL, 5000000000000LL};
    for (int64_t t : times) {
        s_now_us = t;
        std::printf("ticks %" PRIu64 "\n", et_pal_current_ticks());
    }
    et_tick_ratio_t r = et_pal_ticks_to_ns_multiplier();
    std::printf("ratio %" PRIu64 " %" PRIu64 "\n", r.numerator, r.denominator);

    const char msg[] = "message text\n";
    const et_pal_log_level_t levels[] = {kDebug, kInfo, kError, kFatal, kUnknown};
    for (et_pal_log_level_t level : levels) {
        et_pal_emit_log_message(0, level, "/src/runtime/executor/method.cpp", "fn", 123, msg,
                                std::strlen(msg));
    }

    standin_heap_script(STANDIN_INTERNAL, 10000, 8000);
    standin_heap_script(STANDIN_PSRAM, 0, 0);
    standin_psram_present(false);
    void *p = et_pal_allocate(100);
    std::printf("allocate %s inuse %lu\n", p ? "ok" : "null",
                (unsigned long)espnn_mem_internal_in_use());
    et_pal_free(p);
    et_pal_free(nullptr);
    std::printf("free inuse %lu live %d\n", (unsigned long)espnn_mem_internal_in_use(),
                standin_live_count());
    void *q = et_pal_allocate(9000);
    std::printf("allocate %s\n", q ? "ok" : "null");
    return 0;
}
