/*
 * Links the host PAL (pal/espnn_pal_host.cpp) with the wheel's libexecutorch.so and goes through
 * the runtime's own entry points (runtime_init, ET_LOG, pal_* dispatch), so the test sees that
 * the runtime really uses our definitions rather than its weak defaults (tests/test_pal.py).
 */
#include <executorch/runtime/platform/log.h>
#include <executorch/runtime/platform/platform.h>
#include <executorch/runtime/platform/runtime.h>

#include <cinttypes>
#include <cstdio>

#include "espnn_mem.h"

int main() {
    executorch::runtime::runtime_init();
    ET_LOG(Info, "hello from the host PAL %d", 42);
    ET_LOG(Error, "an error line");
    et_timestamp_t a = executorch::runtime::pal_current_ticks();
    et_timestamp_t b = executorch::runtime::pal_current_ticks();
    et_tick_ratio_t r = executorch::runtime::pal_ticks_to_ns_multiplier();
    std::printf("monotonic %d ratio %" PRIu64 "/%" PRIu64 "\n", b >= a, r.numerator,
                r.denominator);
    void *p = executorch::runtime::pal_allocate(100);
    std::printf("allocate %s inuse %lu\n", p ? "ok" : "null",
                (unsigned long)espnn_mem_internal_in_use());
    executorch::runtime::pal_free(p);
    std::printf("free inuse %lu\n", (unsigned long)espnn_mem_internal_in_use());
    return 0;
}
