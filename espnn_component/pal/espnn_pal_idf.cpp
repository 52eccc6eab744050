/*
 * The ExecuTorch platform layer on ESP-IDF: the one definition of each et_pal_* function in a
 * firmware build (these strong definitions replace the runtime's weak defaults).  Compiled only
 * when CONFIG_ESPNN_ET_PROVIDE_PAL=y (cmake/idf.cmake); the host build links espnn_pal_host.cpp
 * instead, never both.
 *  - ticks: esp_timer_get_time(), a 64-bit microsecond count since boot, so timestamps do not
 *    wrap (a 32-bit CPU cycle counter at 240 MHz wraps every ~18 s);
 *  - logging: ESP_LOG* under the tag "executorch", filtered by CONFIG_ESPNN_ET_LOG_LEVEL;
 *  - allocation: the memory policy (espnn_mem.h), so PAL allocations obey the placement rules
 *    and the internal RAM cap, and a failure is logged with what is free.
 */
#include <executorch/runtime/platform/platform.h>

#include <climits>
#include <cstdlib>
#include <cstring>

#include "esp_log.h"
#include "esp_timer.h"
#include "espnn_config.h"
#include "espnn_mem.h"
#include "espnn_pal_util.h"

#if !ESPNN_CFG_PROVIDE_PAL
#error "espnn_pal_idf.cpp is built only with CONFIG_ESPNN_ET_PROVIDE_PAL=y (see cmake/idf.cmake)"
#endif

namespace {

constexpr const char *kTag = "executorch";

} // namespace

extern "C" {

void et_pal_init(void) {
    /* esp_timer and the log are up before app_main; nothing to initialise. */
}

ET_NORETURN void et_pal_abort(void) {
    std::abort(); /* ESP-IDF's panic handler prints the backtrace and resets */
}

et_timestamp_t et_pal_current_ticks(void) {
    return static_cast<et_timestamp_t>(esp_timer_get_time());
}

et_tick_ratio_t et_pal_ticks_to_ns_multiplier(void) {
    return et_tick_ratio_t{1000, 1}; /* one tick is one microsecond */
}

void et_pal_emit_log_message(et_timestamp_t timestamp, et_pal_log_level_t level,
                             const char *filename, const char *function, size_t line,
                             const char *message, size_t length) {
    (void)timestamp; /* ESP_LOG prints its own */
    (void)function;
    if (!espnn_pal::log_enabled(level) || message == nullptr) {
        return;
    }
    length = espnn_pal::trimmed_length(message, length); /* ESP_LOG ends the line itself */
    const int len = length > static_cast<size_t>(INT_MAX) ? INT_MAX : static_cast<int>(length);
    const char *file = espnn_pal::base_name(filename);
    const unsigned long ln = static_cast<unsigned long>(line);
    switch (level) {
    case kFatal:
    case kError:
        ESP_LOGE(kTag, "%s:%lu %.*s", file, ln, len, message);
        break;
    case kDebug:
        ESP_LOGD(kTag, "%s:%lu %.*s", file, ln, len, message);
        break;
    case kInfo:
        ESP_LOGI(kTag, "%s:%lu %.*s", file, ln, len, message);
        break;
    case kUnknown:
    default:
        ESP_LOGW(kTag, "%s:%lu %.*s", file, ln, len, message);
        break;
    }
}

void *et_pal_allocate(size_t size) {
    return espnn_mem_malloc(ESPNN_MEM_STATE, size, "et_pal_allocate");
}

void et_pal_free(void *ptr) {
    espnn_mem_release(ptr);
}

} // extern "C"
