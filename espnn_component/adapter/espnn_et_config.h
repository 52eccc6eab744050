/*
 * The adapter's build switches, derived in one place.  The component's Kconfig reaches C
 * through espnn_config.h (ESPNN_CFG_*: from ESP-IDF's sdkconfig.h, the builder's
 * espnn_sdkconfig.h, or the Kconfig defaults); a plain -D of the switch below wins.
 *
 *   ESPNN_ET_USE_MEMORY_POLICY  (defined by the build) delegate handle, state, arena and any
 *                               weight copy come from espnn_mem_alloc(), and whether weights
 *                               are copied is espnn_mem_get_config()->weights; otherwise they
 *                               come from ExecuTorch's runtime allocator and the weights are
 *                               used in place (plain desktop builds).
 *   ESPNN_ET_SERIALIZE          1: binding and espnn_invoke() run under one process-wide
 *                               mutex, because ESP-NN keeps its scratch pointers in globals.
 *   ESPNN_ET_LOCKS              the lock behind espnn_lock.h, chosen at compile time:
 *                                 ESPNN_ET_LOCKS_FREERTOS  statically allocated FreeRTOS mutexes
 *                                                          (the default on ESP-IDF, ESP_PLATFORM)
 *                                 ESPNN_ET_LOCKS_STD       std::mutex (the default elsewhere:
 *                                                          hosts with threads)
 *                                 ESPNN_ET_LOCKS_NONE      no lock at all, for a single-threaded
 *                                                          bare-metal firmware (no RTOS, no
 *                                                          threads, no model run from an
 *                                                          interrupt): its C++ library has no
 *                                                          std::mutex, and nothing can race
 *                                 e.g. -DESPNN_ET_LOCKS=ESPNN_ET_LOCKS_NONE
 */
#ifndef ESPNN_ET_CONFIG_H
#define ESPNN_ET_CONFIG_H

#if defined(__has_include)
#if __has_include("espnn_config.h")
#include "espnn_config.h"
#endif
#endif

#ifndef ESPNN_ET_SERIALIZE
#if defined(ESPNN_CFG_SERIALIZE_EXECUTE)
#define ESPNN_ET_SERIALIZE ESPNN_CFG_SERIALIZE_EXECUTE
#else
#define ESPNN_ET_SERIALIZE 1
#endif
#endif

#define ESPNN_ET_LOCKS_NONE 0
#define ESPNN_ET_LOCKS_STD 1
#define ESPNN_ET_LOCKS_FREERTOS 2

#ifndef ESPNN_ET_LOCKS
#if defined(ESP_PLATFORM)
#define ESPNN_ET_LOCKS ESPNN_ET_LOCKS_FREERTOS
#else
#define ESPNN_ET_LOCKS ESPNN_ET_LOCKS_STD
#endif
#endif

#if ESPNN_ET_LOCKS != ESPNN_ET_LOCKS_NONE && ESPNN_ET_LOCKS != ESPNN_ET_LOCKS_STD && \
    ESPNN_ET_LOCKS != ESPNN_ET_LOCKS_FREERTOS
#error "ESPNN_ET_LOCKS must be ESPNN_ET_LOCKS_NONE, ESPNN_ET_LOCKS_STD or ESPNN_ET_LOCKS_FREERTOS"
#endif

#endif /* ESPNN_ET_CONFIG_H */
