/*
 * Instructions on the emulated Cortex-M7 when QEMU runs with -icount shift=0 (one instruction
 * per virtual nanosecond): the 25 MHz SysTick (board.c) advances once per 40 instructions.  Only
 * meaningful under -icount (mcu_stack.icount_stack()); resolution 40 instructions.
 */
#include <stdint.h>

#include "espnn_baremetal.h"

#define INSN_PER_TICK 40u /* 1 GHz of virtual instructions over the 25 MHz core clock */

uint64_t emu_instructions(void);

uint64_t emu_instructions(void) { return espnn_baremetal_ticks() * INSN_PER_TICK; }
