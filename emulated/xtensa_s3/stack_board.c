/* Board support of the whole firmware stack on the ESP32-S3 (emulated/mcu_stack.py): the tick
 * source the bare-metal PAL asks for (include/espnn_baremetal.h) and the instruction count of
 * the EMU INSN lines.
 *
 * Ticks: the core's CCOUNT, 32 bits at the core model's 40 MHz of virtual time, widened to 64
 * bits (a wrap is seen as long as the PAL reads it at least once every 107 s of virtual time).
 * Instructions: under QEMU's -icount shift=0,sleep=off one tick is 25 instructions
 * (emulated/esp_qemu.py; board.c does the same for the golden harness); on a chip these would
 * be cycles times 25, which is why only the emulated runs print them. */
#include <stdint.h>

#include "espnn_baremetal.h"

#define CCOUNT_HZ 40000000u
#define INSNS_PER_TICK 25u

uint32_t emu_s3_ccount(void); /* start.S */
uint64_t emu_instructions(void);

static uint64_t ticks_high;
static uint32_t ticks_last;

uint64_t espnn_baremetal_ticks(void)
{
    const uint32_t now = emu_s3_ccount();
    if (now < ticks_last) {
        ticks_high += UINT64_C(1) << 32;
    }
    ticks_last = now;
    return ticks_high | now;
}

uint32_t espnn_baremetal_ticks_per_second(void)
{
    return CCOUNT_HZ;
}

uint64_t emu_instructions(void)
{
    return espnn_baremetal_ticks() * INSNS_PER_TICK;
}
