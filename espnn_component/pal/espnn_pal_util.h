/*
 * What every PAL of the component shares (espnn_pal_idf.cpp, espnn_pal_host.cpp,
 * espnn_pal_baremetal.cpp): the log-level filter of the Kconfig choice ESPNN_ET_LOG_LEVEL and
 * the file name without its folders.  Header-only, private to pal/.
 */
#ifndef ESPNN_PAL_UTIL_H
#define ESPNN_PAL_UTIL_H

#include <executorch/runtime/platform/platform.h>

#include <cstring>

#include "espnn_config.h"

namespace espnn_pal {

inline const char *base_name(const char *path) {
    if (path == nullptr) {
        return "?";
    }
    const char *slash = std::strrchr(path, '/');
    return slash != nullptr ? slash + 1 : path;
}

/* 0 none, 1 error, 2 info, 3 debug: the Kconfig choice ESPNN_ET_LOG_LEVEL. */
inline bool log_enabled(et_pal_log_level_t level) {
    switch (level) {
    case kFatal:
    case kError:
        return ESPNN_CFG_LOG_LEVEL >= 1;
    case kDebug:
        return ESPNN_CFG_LOG_LEVEL >= 3;
    case kInfo:
    case kUnknown:
    default:
        return ESPNN_CFG_LOG_LEVEL >= 2;
    }
}

/* The message without the line ends the runtime may leave on it (each PAL ends lines itself). */
inline size_t trimmed_length(const char *message, size_t length) {
    while (length > 0 && (message[length - 1] == '\n' || message[length - 1] == '\r')) {
        length--;
    }
    return length;
}

} // namespace espnn_pal

#endif /* ESPNN_PAL_UTIL_H */
