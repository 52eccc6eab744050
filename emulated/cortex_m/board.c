/*
 * Board support of the emulated Cortex-M7 (qemu-system-arm -M mps2-an500): the tick source the
 * bare-metal PAL asks for (include/espnn_baremetal.h), from the core's SysTick counter.  SysTick
 * is a 24-bit down-counter at the core clock; its wrap interrupt extends it to 64 bits.  Under
 * QEMU the count follows the emulator's virtual clock, so latencies are emulation figures, not
 * a chip's.  Start-up, semihosting I/O and exit come from picolibc's semihosting crt0.
 */
#include <stdint.h>

#include "espnn_baremetal.h"

#define CORE_CLOCK_HZ 25000000u /* the MPS2 FPGA images' system clock, as QEMU models it */
#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)
#define SYST_CSR_ENABLE 1u
#define SYST_CSR_TICKINT 2u
#define SYST_CSR_CLKSOURCE 4u /* the core clock */
#define SYST_CSR_COUNTFLAG (1u << 16)
#define RELOAD 0xFFFFFFu

static volatile uint64_t s_wraps;

/* picolibc's vector table calls this (a weak name there) on every SysTick wrap. */
void arm_systick_isr(void) { s_wraps++; }

static void systick_start(void) {
    SYST_RVR = RELOAD;
    SYST_CVR = 0;
    SYST_CSR = SYST_CSR_ENABLE | SYST_CSR_TICKINT | SYST_CSR_CLKSOURCE;
}

uint64_t espnn_baremetal_ticks(void) {
    static int started;
    if (!started) {
        started = 1;
        systick_start();
    }
    /* read the wrap count around the counter so a wrap in between is not lost */
    uint64_t wraps;
    uint32_t now;
    do {
        wraps = s_wraps;
        now = SYST_CVR;
    } while (wraps != s_wraps);
    return wraps * (RELOAD + 1u) + (RELOAD - now);
}

uint32_t espnn_baremetal_ticks_per_second(void) { return CORE_CLOCK_HZ; }
