/*
 * The ExecuTorch platform layer for host builds (the simulator board and desktop apps): the
 * host's one definition of each et_pal_* function.  Linked into an executable, these strong
 * definitions take the place of the weak defaults in the wheel's libexecutorch.so.  Firmware
 * links espnn_pal_idf.cpp instead, never both.  Not for the Python runtime, which has its own.
 *  - ticks: CLOCK_MONOTONIC in nanoseconds;
 *  - logging: one line per message on stderr, filtered by CONFIG_ESPNN_ET_LOG_LEVEL;
 *  - allocation: the memory policy (espnn_mem.h), as on the chip.
 */
#include <executorch/runtime/platform/platform.h>

#include <time.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "espnn_config.h"
#include "espnn_mem.h"
#include "espnn_pal_util.h"

extern "C" {

void et_pal_init(void) {}

ET_NORETURN void et_pal_abort(void) {
    std::fflush(stderr);
    std::abort();
}

et_timestamp_t et_pal_current_ticks(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<et_timestamp_t>(ts.tv_sec) * 1000000000u +
           static_cast<et_timestamp_t>(ts.tv_nsec);
}

et_tick_ratio_t et_pal_ticks_to_ns_multiplier(void) {
    return et_tick_ratio_t{1, 1};
}

void et_pal_emit_log_message(et_timestamp_t timestamp, et_pal_log_level_t level,
                             const char *filename, const char *function, size_t line,
                             const char *message, size_t length) {
    (void)function;
    if (!espnn_pal::log_enabled(level) || message == nullptr) {
        return;
    }
    length = espnn_pal::trimmed_length(message, length);
    const int len = length > static_cast<size_t>(INT_MAX) ? INT_MAX : static_cast<int>(length);
    const unsigned long long us = static_cast<unsigned long long>(timestamp / 1000u);
    std::fprintf(stderr, "%c %llu.%06llu executorch %s:%lu] %.*s\n", static_cast<char>(level),
                 us / 1000000u, us % 1000000u, espnn_pal::base_name(filename),
                 static_cast<unsigned long>(line), len, message);
}

void *et_pal_allocate(size_t size) {
    return espnn_mem_malloc(ESPNN_MEM_STATE, size, "et_pal_allocate");
}

void et_pal_free(void *ptr) {
    espnn_mem_release(ptr);
}

} // extern "C"
