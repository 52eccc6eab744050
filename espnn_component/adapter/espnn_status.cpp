#include "espnn_status.h"

#include <stdio.h>
#include <string.h>

#include <executorch/runtime/platform/log.h>

#include "espnn_lock.h"

namespace espnn_et {

namespace {

/* One line is enough: every message is a single sentence with numbers and field names. */
constexpr size_t kLastErrorSize = 512;

struct Status {
    char last_error[kLastErrorSize];
    LiveMemory live;
};

Status &status() {
    static Status instance{};
    return instance;
}

} // namespace

void report_error(const char *fmt, ...) {
    char line[kLastErrorSize];
    va_list args;
    va_start(args, fmt);
    vsnprintf(line, sizeof line, fmt, args);
    va_end(args);
    /* Everything formatted here is ASCII (our literals, numbers, the engine's static field
     * names): the Python runtime's log bridge aborts the process on invalid UTF-8. */
    for (char *p = line; *p != '\0'; ++p) {
        if (static_cast<unsigned char>(*p) >= 0x80 || (*p < 0x20 && *p != '\t')) {
            *p = '?';
        }
    }
    ET_LOG(Error, "EspNNDelegateBackend: %s", line);
    ScopedLock lock(LockId::kStatus);
    memcpy(status().last_error, line, sizeof line);
}

void clear_last_error() {
    ScopedLock lock(LockId::kStatus);
    status().last_error[0] = '\0';
}

size_t copy_last_error(char *buf, size_t size) {
    ScopedLock lock(LockId::kStatus);
    const size_t len = strlen(status().last_error);
    if (buf != nullptr && size > 0) {
        const size_t n = len < size - 1 ? len : size - 1;
        memcpy(buf, status().last_error, n);
        buf[n] = '\0';
    }
    return len;
}

void live_memory_add(const LiveMemory &delta) {
    ScopedLock lock(LockId::kStatus);
    LiveMemory &live = status().live;
    live.delegates += delta.delegates;
    live.handle_bytes += delta.handle_bytes;
    live.state_bytes += delta.state_bytes;
    live.arena_bytes += delta.arena_bytes;
    live.weights_bytes += delta.weights_bytes;
}

void live_memory_remove(const LiveMemory &delta) {
    ScopedLock lock(LockId::kStatus);
    LiveMemory &live = status().live;
    live.delegates -= delta.delegates;
    live.handle_bytes -= delta.handle_bytes;
    live.state_bytes -= delta.state_bytes;
    live.arena_bytes -= delta.arena_bytes;
    live.weights_bytes -= delta.weights_bytes;
}

LiveMemory live_memory() {
    ScopedLock lock(LockId::kStatus);
    return status().live;
}

} // namespace espnn_et
