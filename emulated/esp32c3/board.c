/*
 * Board support of the ESP32-C3 firmware stack (emulated/mcu_stack.py): the tick source the
 * bare-metal PAL asks for (include/espnn_baremetal.h) and the instruction count of the EMU INSN
 * lines.
 *
 * Ticks: unit 0 of the system timer, 52 bits at 16 MHz (the clock ESP-IDF's esp_timer reads).
 * Under QEMU it follows the virtual clock; with -icount shift=0 one instruction is one
 * nanosecond, so "us emulated" are thousands of instructions, not the chip's microseconds.
 *
 * Instructions: the standard minstret counter, which Espressif's QEMU counts exactly under
 * -icount.  The chip itself has no minstret (its counters are the custom mpcer/mpcmr/mpccr), so
 * the count is read only when the emulator identifies itself (ESP-IDF's own test: the SYSCON
 * "origin" register reads "QEMU" there); on a chip it is 0.
 */
#include <stdint.h>

#include "espnn_baremetal.h"

#define SYSTIMER_UNIT0_OP (*(volatile uint32_t *)0x60023004u)
#define SYSTIMER_UNIT0_UPDATE (1u << 30)
#define SYSTIMER_UNIT0_VALUE_VALID (1u << 29)
#define SYSTIMER_UNIT0_VALUE_HI (*(volatile uint32_t *)0x60023040u)
#define SYSTIMER_UNIT0_VALUE_LO (*(volatile uint32_t *)0x60023044u)
#define SYSTIMER_HZ 16000000u
#define SYSCON_ORIGIN (*(volatile uint32_t *)0x600263F8u)
#define ORIGIN_QEMU 0x51454D55u /* "QEMU" */

uint64_t espnn_baremetal_ticks(void)
{
    SYSTIMER_UNIT0_OP = SYSTIMER_UNIT0_UPDATE; /* latch the counter, then read both halves */
    while ((SYSTIMER_UNIT0_OP & SYSTIMER_UNIT0_VALUE_VALID) == 0u) {
    }
    return ((uint64_t)(SYSTIMER_UNIT0_VALUE_HI & 0xFFFFFu) << 32) | SYSTIMER_UNIT0_VALUE_LO;
}

uint32_t espnn_baremetal_ticks_per_second(void)
{
    return SYSTIMER_HZ;
}

uint64_t emu_instructions(void)
{
    if (SYSCON_ORIGIN != ORIGIN_QEMU) {
        return 0;
    }
    uint32_t hi, lo, again;
    do { /* a carry into the high half between the reads is retried */
        __asm__ volatile(".option push\n.option arch, +zicsr\n"
                         "csrr %0, minstreth\ncsrr %1, minstret\ncsrr %2, minstreth\n"
                         ".option pop"
                         : "=r"(hi), "=r"(lo), "=r"(again));
    } while (hi != again);
    return ((uint64_t)hi << 32) | lo;
}
