/*
 * The ExecuTorch platform layer for a bare-metal firmware (no RTOS, no ESP-IDF): the one
 * definition of each et_pal_* function in such a build, linked instead of espnn_pal_idf.cpp or
 * espnn_pal_host.cpp (pal/sources.cmake: ESPNN_PAL_BAREMETAL_SOURCES).  Its strong definitions
 * replace the runtime's weak defaults, so the runtime is built without a default PAL.
 *  - ticks: the board's counter, espnn_baremetal_ticks() / espnn_baremetal_ticks_per_second()
 *    (include/espnn_baremetal.h; weak defaults use the C library's clock());
 *  - logging: one line per message on the C library's stderr (semihosting, a UART, whatever the
 *    firmware's C library writes to), filtered by CONFIG_ESPNN_ET_LOG_LEVEL;
 *  - allocation: the memory policy (espnn_mem.h) and nothing else, so the runtime never takes
 *    heap behind the policy's back;
 *  - abort: the C library's abort().
 * It takes no lock: a bare-metal firmware runs models from one thread (the adapter is built
 * with ESPNN_ET_LOCKS_NONE there).
 */
#include <executorch/runtime/platform/platform.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include "espnn_baremetal.h"
#include "espnn_mem.h"
#include "espnn_pal_util.h"

extern "C" {

__attribute__((weak)) uint64_t espnn_baremetal_ticks(void) {
    return static_cast<uint64_t>(std::clock()); /* clock_t is signed on some C libraries, not all */
}

__attribute__((weak)) uint32_t espnn_baremetal_ticks_per_second(void) {
    return static_cast<uint32_t>(CLOCKS_PER_SEC);
}

void et_pal_init(void) {}

ET_NORETURN void et_pal_abort(void) {
    std::fflush(stderr);
    std::abort();
}

et_timestamp_t et_pal_current_ticks(void) {
    return static_cast<et_timestamp_t>(espnn_baremetal_ticks());
}

et_tick_ratio_t et_pal_ticks_to_ns_multiplier(void) {
    /* ns per tick = 10^9 / rate, reduced so ticks * numerator overflows as late as possible */
    uint64_t num = 1000000000u;
    uint64_t den = espnn_baremetal_ticks_per_second();
    if (den == 0) {
        den = 1;
    }
    uint64_t a = num;
    uint64_t b = den;
    while (b != 0) {
        const uint64_t t = a % b;
        a = b;
        b = t;
    }
    return et_tick_ratio_t{num / a, den / a};
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
    const et_tick_ratio_t ratio = et_pal_ticks_to_ns_multiplier();
    const unsigned long long us =
        static_cast<unsigned long long>(timestamp * ratio.numerator / ratio.denominator / 1000u);
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
