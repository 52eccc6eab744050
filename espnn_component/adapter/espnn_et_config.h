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

#if defined(ESP_PLATFORM) && !defined(ESPNN_ET_HOST_LOCKS)
#define ESPNN_ET_FREERTOS_LOCKS 1
#else
#define ESPNN_ET_FREERTOS_LOCKS 0
#endif

#endif /* ESPNN_ET_CONFIG_H */
