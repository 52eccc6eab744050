/*
 * The profile clock of each target, in one place (included by engine.c only when ESPNN_PROFILE
 * is on).  espnn_clock_now() returns a free-running 32-bit count; ESPNN_CLOCK_UNIT names it.
 *  - ESP-IDF / Arduino-ESP32 (ESP_PLATFORM): esp_cpu_get_cycle_count() (esp_cpu_get_ccount() on
 *    ESP-IDF 4.4), which reads the chip's
 *    counter (CCOUNT on ESP32/S2/S3; the machine performance counter on C3/C6/H2, which
 *    ESP-IDF's start-up enables; mcycle on P4), so no chip-specific register is named here;
 *  - other Xtensa (the emulated S3 and lx106): CCOUNT;
 *  - other RISC-V (bare metal, QEMU -M virt): the cycle CSR (rdcycle; under -icount the
 *    instruction count);
 *  - Arm M-profile with a DWT cycle counter (ARMv7-M/v8-M mainline): DWT CYCCNT, switched on at
 *    first use; a core without one (or an emulator that does not count: QEMU's mps2 models read
 *    it as 0) falls back to the SysTick counter the firmware runs (the bare-metal PAL's tick
 *    source on the emulated Cortex-M7), widened to 32 bits; a firmware may instead define
 *    ESPNN_PROFILE_CLOCK_EXTERN and provide uint32_t espnn_profile_clock_extern(void);
 *  - hosted builds (Linux, macOS): clock_gettime(CLOCK_MONOTONIC) in nanoseconds.
 */
#ifndef ESPNN_CLOCK_H
#define ESPNN_CLOCK_H

#include <stdint.h>

#if defined(ESPNN_PROFILE_CLOCK_EXTERN)
uint32_t espnn_profile_clock_extern(void);
#define ESPNN_CLOCK_UNIT "ticks"
static inline uint32_t espnn_clock_now(void) { return espnn_profile_clock_extern(); }

#elif defined(ESP_PLATFORM)
#include "esp_cpu.h"
#include "esp_idf_version.h"
#define ESPNN_CLOCK_UNIT "cycles"
#if ESP_IDF_VERSION_MAJOR >= 5
static inline uint32_t espnn_clock_now(void) { return (uint32_t)esp_cpu_get_cycle_count(); }
#else /* ESP-IDF 4.4 (Arduino-ESP32 2.0.x) names it esp_cpu_get_ccount() */
static inline uint32_t espnn_clock_now(void) { return (uint32_t)esp_cpu_get_ccount(); }
#endif

#elif defined(__XTENSA__)
#define ESPNN_CLOCK_UNIT "cycles"
static inline uint32_t espnn_clock_now(void)
{
    uint32_t v;
    __asm__ volatile("rsr %0, ccount" : "=a"(v));
    return v;
}

#elif defined(__riscv)
#define ESPNN_CLOCK_UNIT "cycles"
static inline uint32_t espnn_clock_now(void)
{
    uint32_t v;
    __asm__ volatile("rdcycle %0" : "=r"(v));
    return v;
}

#elif defined(__ARM_ARCH_7M__) || defined(__ARM_ARCH_7EM__) || defined(__ARM_ARCH_8M_MAIN__)
#define ESPNN_CLOCK_UNIT "cycles"
#define ESPNN_DEMCR (*(volatile uint32_t *)0xE000EDFCu)
#define ESPNN_DWT_CTRL (*(volatile uint32_t *)0xE0001000u)
#define ESPNN_DWT_CYCCNT (*(volatile uint32_t *)0xE0001004u)
#define ESPNN_SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define ESPNN_SYST_CVR (*(volatile uint32_t *)0xE000E018u)
static inline uint32_t espnn_clock_now(void)
{
    static int state; /* 0 unknown, 1 CYCCNT counts, 2 SysTick */
    static uint32_t last_cvr, count;
    if (state == 0) {
        ESPNN_DEMCR |= 1u << 24; /* TRCENA: the DWT unit on */
        if ((ESPNN_DWT_CTRL & (1u << 25)) == 0) { /* NOCYCCNT clear: a cycle counter exists */
            ESPNN_DWT_CYCCNT = 0;
            ESPNN_DWT_CTRL |= 1u;
        }
        const uint32_t a = ESPNN_DWT_CYCCNT;
        for (volatile int i = 0; i < 8; i++) {
        }
        state = ESPNN_DWT_CYCCNT != a ? 1 : 2;
        last_cvr = ESPNN_SYST_CVR;
    }
    if (state == 1) {
        return ESPNN_DWT_CYCCNT;
    }
    /* SysTick (24 bits, counting down from RVR): widened here to 32 bits, which holds while the
     * clock is read at least once per SysTick period (the profiler reads it at every op) */
    const uint32_t cvr = ESPNN_SYST_CVR & 0xFFFFFFu;
    const uint32_t period = (ESPNN_SYST_RVR & 0xFFFFFFu) + 1u;
    count += last_cvr >= cvr ? last_cvr - cvr : last_cvr + period - cvr;
    last_cvr = cvr;
    return count;
}

#else
#include <time.h>
#define ESPNN_CLOCK_UNIT "ns"
static inline uint32_t espnn_clock_now(void)
{
    struct timespec ts;
    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint32_t)((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec);
}
#endif

#endif /* ESPNN_CLOCK_H */
