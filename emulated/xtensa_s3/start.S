/* ESP32-S3 (Xtensa LX7, windowed ABI) bare-metal startup, booted by the chip's ROM from a flash
 * image (esptool elf2image --chip esp32s3) under Espressif's QEMU (-M esp32s3).
 *
 * The ROM loads the image's segments into IRAM/DRAM and calls the entry point as a windowed
 * function on its own stack, with its vectors (VECBASE 0x40000000) in place.  _start masks
 * interrupts, enables the coprocessors (FPU, SIMD), points VECBASE at our vectors, restarts the register window (WINDOWBASE 0,
 * WINDOWSTART 1: no frame of the ROM is live any more), switches to our stack (link.ld), clears
 * .bss, calls emu_s3_board_init (watchdogs off), main, then emu_exit with main's status.
 *
 * Vectors: the window overflow/underflow handlers are the architecture's standard sequences
 * (Xtensa ISA reference, "Windowed Register Option"): every call deeper than the 64 physical
 * registers spills through them, so C code cannot run without them.  Every other exception
 * (user, kernel, double, debug, NMI, high-priority interrupts) reports EXCCAUSE, the PC and
 * EXCVADDR through emu_trap() and exits with EMU_EXIT_TRAP; a double exception reports its
 * cause plus 1000 and DEPC. */

#define PS_INTLEVEL15 0x0000000f
#define PS_UM 0x00000020
#define PS_WOE 0x00040000

    .section .vectors, "ax"
    .align 1024
    .globl emu_s3_vectors
emu_s3_vectors:
    .org emu_s3_vectors + 0x000 /* WindowOverflow4 */
    s32e a0, a5, -16
    s32e a1, a5, -12
    s32e a2, a5, -8
    s32e a3, a5, -4
    rfwo
    .org emu_s3_vectors + 0x040 /* WindowUnderflow4 */
    l32e a0, a5, -16
    l32e a1, a5, -12
    l32e a2, a5, -8
    l32e a3, a5, -4
    rfwu
    .org emu_s3_vectors + 0x080 /* WindowOverflow8 */
    s32e a0, a9, -16
    l32e a0, a1, -12
    s32e a2, a9, -8
    s32e a1, a9, -12
    s32e a3, a9, -4
    s32e a4, a0, -32
    s32e a5, a0, -28
    s32e a6, a0, -24
    s32e a7, a0, -20
    rfwo
    .org emu_s3_vectors + 0x0c0 /* WindowUnderflow8 */
    l32e a1, a9, -12
    l32e a0, a9, -16
    l32e a7, a1, -12
    l32e a2, a9, -8
    l32e a4, a7, -32
    l32e a3, a9, -4
    l32e a5, a7, -28
    l32e a6, a7, -24
    l32e a7, a7, -20
    rfwu
    .org emu_s3_vectors + 0x100 /* WindowOverflow12 */
    s32e a0, a13, -16
    l32e a0, a1, -12
    s32e a1, a13, -12
    s32e a2, a13, -8
    s32e a3, a13, -4
    s32e a4, a0, -48
    s32e a5, a0, -44
    s32e a6, a0, -40
    s32e a7, a0, -36
    s32e a8, a0, -32
    s32e a9, a0, -28
    s32e a10, a0, -24
    s32e a11, a0, -20
    rfwo
    .org emu_s3_vectors + 0x140 /* WindowUnderflow12 */
    l32e a1, a13, -12
    l32e a0, a13, -16
    l32e a11, a1, -12
    l32e a2, a13, -8
    l32e a4, a11, -48
    l32e a8, a11, -32
    l32e a3, a13, -4
    l32e a5, a11, -44
    l32e a6, a11, -40
    l32e a7, a11, -36
    l32e a9, a11, -28
    l32e a10, a11, -24
    l32e a11, a11, -20
    rfwu
    .org emu_s3_vectors + 0x180 /* Level2 interrupt */
    j emu_s3_trap_epc1
    .org emu_s3_vectors + 0x1c0 /* Level3 */
    j emu_s3_trap_epc1
    .org emu_s3_vectors + 0x200 /* Level4 */
    j emu_s3_trap_epc1
    .org emu_s3_vectors + 0x240 /* Level5 */
    j emu_s3_trap_epc1
    .org emu_s3_vectors + 0x280 /* Debug (Level6) */
    j emu_s3_trap_epc1
    .org emu_s3_vectors + 0x2c0 /* NMI (Level7) */
    j emu_s3_trap_epc1
    .org emu_s3_vectors + 0x300 /* Kernel exception */
    j emu_s3_trap_epc1
    .org emu_s3_vectors + 0x340 /* User exception */
    j emu_s3_trap_epc1
    .org emu_s3_vectors + 0x3c0 /* Double exception */
    j emu_s3_trap_double

    /* l32r reaches literals only at lower addresses: keep them between vectors and code. */
    .align 4
.Ltrap_fn:
    .word emu_trap
.Ltrap_stack:
    .word __emu_trap_stack_top
.Ltrap_ps:
    .word PS_INTLEVEL15 | PS_UM | PS_WOE

    .align 4
emu_s3_trap_epc1:
    rsr a2, exccause
    rsr a3, epc1
    j 1f
emu_s3_trap_double:
    rsr a2, exccause
    movi a3, 1000
    add a2, a2, a3
    rsr a3, depc
1:  rsr a4, excvaddr
    /* Only the current window stays live, so the call below spills nothing of the faulting
     * code (whose stack may be what faulted); then leave exception mode on the trap stack. */
    rsr a5, windowbase
    ssl a5
    movi a6, 1
    sll a6, a6
    wsr a6, windowstart
    rsync
    l32r a1, .Ltrap_stack
    l32r a5, .Ltrap_ps
    wsr a5, ps
    rsync
    mov a10, a2
    mov a11, a3
    mov a12, a4
    l32r a8, .Ltrap_fn
    callx8 a8
2:  j 2b

    .section .text.init, "ax"
    .align 4
.Lvecbase:
    .word emu_s3_vectors
.Lstack:
    .word __emu_stack_top
.Lps:
    .word PS_INTLEVEL15 | PS_UM | PS_WOE
.Lbss_start:
    .word __bss_start
.Lbss_end:
    .word __bss_end
.Lboard:
    .word emu_s3_board_init
.Lmain:
    .word main
.Lexit:
    .word emu_exit

    .globl _start
    .type _start, @function
    .align 4
_start:
    rsil a2, 15
    /* the FPU (coprocessor 0) and the SIMD unit's TIE state are coprocessors: enable all, or
     * the first float or ee.* instruction raises Coprocessor*Disabled (cause 32 + n) */
    movi a2, 0xff
    wsr a2, cpenable
    l32r a2, .Lvecbase
    wsr a2, vecbase
    rsync
    movi a0, 0
    wsr a0, windowbase
    rsync
    movi a0, 1
    wsr a0, windowstart
    rsync
    l32r a1, .Lstack
    l32r a2, .Lps
    wsr a2, ps
    rsync
    movi a0, 0 /* a zero return address ends backtraces here */
    l32r a2, .Lbss_start
    l32r a3, .Lbss_end
    movi a4, 0
1:  bgeu a2, a3, 2f
    s32i a4, a2, 0
    addi a2, a2, 4
    j 1b
    /* call4: _start's frame spills (if ever) through WindowOverflow4, which writes only the
     * 16 bytes below the callee's stack pointer, never through a caller's save area */
2:  l32r a4, .Lboard
    callx4 a4
    l32r a4, .Lmain
    callx4 a4
    l32r a4, .Lexit
    callx4 a4
3:  j 3b
    .size _start, . - _start

    /* uint32_t emu_s3_ccount(void): the cycle counter.  Under -icount shift=0,sleep=off QEMU's
     * virtual clock advances 1 ns per guest instruction and CCOUNT ticks at the core model's
     * 40 MHz, so one tick is 25 instructions (board.c, INSNS_PER_TICK). */
    .globl emu_s3_ccount
    .type emu_s3_ccount, @function
    .align 4
emu_s3_ccount:
    entry a1, 32
    rsr a2, ccount
    retw.n
    .size emu_s3_ccount, . - emu_s3_ccount

    /* Where the APP CPU (core 1) is sent from the ROM's wait loop (board.c): interrupts masked,
     * then WAITI, which halts the core for good (nothing can raise a level above 15).  It
     * touches no stack and never returns, so it works however the ROM jumps here. */
    .section .text.emu_s3_park, "ax"
    .globl emu_s3_park
    .type emu_s3_park, @function
    .align 4
emu_s3_park:
    rsil a2, 15
1:  waiti 15
    j 1b
    .size emu_s3_park, . - emu_s3_park
