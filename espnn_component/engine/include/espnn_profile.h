/*
 * Per-op profiling of the engine (custom_executorch_profile = yes, CONFIG_ESPNN_ET_PROFILE).
 *
 * A compile-time switch: ESPNN_PROFILE is 1 when the build's Kconfig header says
 * CONFIG_ESPNN_ET_PROFILE (espnn_sdkconfig.h on host and Arduino builds, ESP-IDF's sdkconfig.h),
 * or when the compiler is given -DESPNN_PROFILE=1.  Without it nothing below exists: the engine,
 * the adapter and EspnnModel contain no clock read and no counting code, and espnn_invoke() is
 * the same loop as before (docs/engine.md, "Profiling").
 */
#ifndef ESPNN_PROFILE_H
#define ESPNN_PROFILE_H

#ifndef ESPNN_PROFILE
#if defined(__has_include)
#if __has_include("espnn_sdkconfig.h")
#include "espnn_sdkconfig.h"
#elif defined(ESP_PLATFORM) && __has_include("sdkconfig.h")
#include "sdkconfig.h"
#endif
#endif
#if defined(CONFIG_ESPNN_ET_PROFILE) && CONFIG_ESPNN_ET_PROFILE
#define ESPNN_PROFILE 1
#else
#define ESPNN_PROFILE 0
#endif
#endif

#if ESPNN_PROFILE

#include <stdint.h>

#include "espnn_engine.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The profile clock now: a free-running 32-bit count (differences are taken modulo 2^32, so one
 * measured stretch must stay below 2^32 units: ~17.9 s of cycles at 240 MHz, ~4.29 s of ns on the
 * host).  The source is the target's (engine/src/espnn_clock.h). */
uint32_t espnn_profile_now(void);

/* What one unit of espnn_profile_now() is: "cycles" (CCOUNT, the RISC-V cycle counter, DWT
 * CYCCNT; under QEMU -icount the instruction count), "ns" (the host's monotonic clock) or
 * "ticks" (a board's own counter). */
const char *espnn_profile_unit(void);

/* espnn_invoke(), also writing the time each op took into op_ticks[0 .. info.n_ops). */
espnn_status_t espnn_invoke_profiled(espnn_model_t *model, uint32_t *op_ticks, espnn_error_t *err);

#ifdef __cplusplus
}
#endif

#endif /* ESPNN_PROFILE */

#endif /* ESPNN_PROFILE_H */
