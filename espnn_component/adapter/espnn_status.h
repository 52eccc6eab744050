/*
 * Adapter status shared with EspnnModel and the host API: the last failure's text (so a
 * caller that only sees an ExecuTorch error code can still say what went wrong) and the bytes
 * held by live delegates (so sizes can be measured rather than guessed).
 */
#ifndef ESPNN_STATUS_H
#define ESPNN_STATUS_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

namespace espnn_et {

/* Formats an ASCII line, emits it through ET_LOG(Error) and keeps it as the last error. */
void report_error(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

void clear_last_error();

/* Copies the last error (empty when none) into buf; returns its full length. */
size_t copy_last_error(char *buf, size_t size);

struct LiveMemory {
    uint64_t delegates = 0;
    uint64_t handle_bytes = 0;
    uint64_t state_bytes = 0;
    uint64_t arena_bytes = 0;
    uint64_t weights_bytes = 0;
};

void live_memory_add(const LiveMemory &delta);
void live_memory_remove(const LiveMemory &delta);
LiveMemory live_memory();

} // namespace espnn_et

#endif /* ESPNN_STATUS_H */
