/*
 * The component's build configuration as plain 0/1/number macros (ESPNN_CFG_*), derived from
 * the CONFIG_ESPNN_ET_* options of espnn_component/Kconfig:
 *  - ESP-IDF (and Arduino as an ESP-IDF component): sdkconfig.h, written by ESP-IDF;
 *  - Arduino and host builds: espnn_sdkconfig.h, written by executorch_espnn.kconfig from the
 *    project's sdkconfig files (the builder puts it on the include path); on Arduino the
 *    framework's sdkconfig.h still says whether PSRAM support (CONFIG_SPIRAM) is linked;
 *  - neither (e.g. a plain CMake build of the host library): the Kconfig defaults, repeated
 *    below; tests/test_kconfig.py checks that they equal the Kconfig's.
 * sdkconfig.h leaves bools that are off undefined, so "off" and "no configuration" are told
 * apart by the placement choice, of which exactly one member is always defined.
 */
#ifndef ESPNN_CONFIG_H
#define ESPNN_CONFIG_H

#if defined(__has_include)
#if __has_include("espnn_sdkconfig.h")
#include "espnn_sdkconfig.h"
#endif
/* On ESP boards the framework's own sdkconfig.h is also the truth about CONFIG_SPIRAM (whether
 * esp_psram is linked), also for Arduino, whose prebuilt sdkconfig.h lacks our options. */
#if defined(ESP_PLATFORM) && __has_include("sdkconfig.h")
#include "sdkconfig.h"
#endif
#endif

#if defined(CONFIG_ESPNN_ET_ARENA_IN_AUTO) || defined(CONFIG_ESPNN_ET_ARENA_IN_INTERNAL) || \
    defined(CONFIG_ESPNN_ET_ARENA_IN_PSRAM)
#define ESPNN_CFG_FROM_KCONFIG 1
#else
#define ESPNN_CFG_FROM_KCONFIG 0
#endif

/* 0 automatic, 1 internal RAM only, 2 PSRAM only (espnn_mem_placement_t) */
#if defined(CONFIG_ESPNN_ET_ARENA_IN_INTERNAL)
#define ESPNN_CFG_ARENA_PLACEMENT 1
#elif defined(CONFIG_ESPNN_ET_ARENA_IN_PSRAM)
#define ESPNN_CFG_ARENA_PLACEMENT 2
#else
#define ESPNN_CFG_ARENA_PLACEMENT 0
#endif

#if defined(CONFIG_ESPNN_ET_PLANNED_IN_INTERNAL)
#define ESPNN_CFG_PLANNED_PLACEMENT 1
#elif defined(CONFIG_ESPNN_ET_PLANNED_IN_PSRAM)
#define ESPNN_CFG_PLANNED_PLACEMENT 2
#else
#define ESPNN_CFG_PLANNED_PLACEMENT 0
#endif

/* 0 in place from flash, 1 copy to internal RAM, 2 copy to PSRAM (espnn_mem_weights_t) */
#if defined(CONFIG_ESPNN_ET_WEIGHTS_TO_INTERNAL)
#define ESPNN_CFG_WEIGHTS 1
#elif defined(CONFIG_ESPNN_ET_WEIGHTS_TO_PSRAM)
#define ESPNN_CFG_WEIGHTS 2
#else
#define ESPNN_CFG_WEIGHTS 0
#endif

#if defined(CONFIG_ESPNN_ET_INTERNAL_RAM_CAP)
#define ESPNN_CFG_INTERNAL_RAM_CAP CONFIG_ESPNN_ET_INTERNAL_RAM_CAP
#else
#define ESPNN_CFG_INTERNAL_RAM_CAP 0
#endif

/* 0 none, 1 error, 2 info, 3 debug */
#if defined(CONFIG_ESPNN_ET_LOG_LEVEL)
#define ESPNN_CFG_LOG_LEVEL CONFIG_ESPNN_ET_LOG_LEVEL
#else
#define ESPNN_CFG_LOG_LEVEL 2
#endif

#if ESPNN_CFG_FROM_KCONFIG
#if defined(CONFIG_ESPNN_ET_PROVIDE_PAL)
#define ESPNN_CFG_PROVIDE_PAL 1
#else
#define ESPNN_CFG_PROVIDE_PAL 0
#endif
#if defined(CONFIG_ESPNN_ET_SERIALIZE_EXECUTE)
#define ESPNN_CFG_SERIALIZE_EXECUTE 1
#else
#define ESPNN_CFG_SERIALIZE_EXECUTE 0
#endif
#else /* Kconfig defaults */
#define ESPNN_CFG_PROVIDE_PAL 1
#define ESPNN_CFG_SERIALIZE_EXECUTE 1
#endif

/* PSRAM support compiled into the framework (ESP-IDF's CONFIG_SPIRAM). */
#if defined(CONFIG_SPIRAM)
#define ESPNN_CFG_SPIRAM 1
#else
#define ESPNN_CFG_SPIRAM 0
#endif

#if (ESPNN_CFG_ARENA_PLACEMENT == 2 || ESPNN_CFG_PLANNED_PLACEMENT == 2 || \
     ESPNN_CFG_WEIGHTS == 2) && !ESPNN_CFG_SPIRAM && defined(ESP_PLATFORM)
#error "a CONFIG_ESPNN_ET_* option places memory in PSRAM but CONFIG_SPIRAM is off: enable PSRAM support or choose automatic placement"
#endif

#endif /* ESPNN_CONFIG_H */
