/* Xtensa lx106 (call0 ABI) startup for qemu-system-xtensa -M sim -cpu lx106.
 *
 * QEMU 7.2 loads the ELF, then its machine reset puts the PC on the core's reset vector
 * (0x50000000, the start of sysrom0; 0x40000080 with the alternate static vectors), so both
 * hold a stub that jumps to _start.  _start points VECBASE at our own vectors (the lx106 has
 * relocatable vectors), leaves exception mode (reset sets PS.EXCM), sets the stack, clears
 * .bss, run main() and exit through the simulator call with its return value.  Every
 * exception vector reports EXCCAUSE/EPC1/EXCVADDR and exits with EMU_EXIT_TRAP, so an
 * unaligned load (LoadStoreAlignmentCause, 9) fails the run instead of hanging it. */

    .section .vectors, "ax"
    .align 256
    .globl emu_vectors
emu_vectors:
    .org emu_vectors + 0x10    /* debug */
    j emu_trap_common
    .org emu_vectors + 0x20    /* NMI */
    j emu_trap_common
    .org emu_vectors + 0x30    /* kernel exception */
    j emu_trap_common
    .org emu_vectors + 0x50    /* user exception */
    j emu_trap_common
    .org emu_vectors + 0x70    /* double exception */
    j emu_trap_common
    .org emu_vectors + 0x80    /* alternate reset vector */
    j emu_reset_far

    /* l32r reaches literals only at lower addresses: keep them just above the vectors. */
    .align 4
.Lemu_trap_fn:
    .word emu_trap
.Lemu_stack_top:
    .word __stack

    .align 4
.Lemu_start_a:
    .word _start
emu_reset_far:
    l32r a0, .Lemu_start_a
    jx a0

    .align 4
emu_trap_common:
    rsr a2, exccause
    rsr a3, epc1
    rsr a4, excvaddr
    l32r a1, .Lemu_stack_top
    l32r a0, .Lemu_trap_fn
    callx0 a0
1:  j 1b

    .section .reset, "ax"
    .globl emu_reset
emu_reset:
    j 1f
    .align 4
.Lemu_start_r:
    .word _start
1:  l32r a0, .Lemu_start_r
    jx a0

    .section .text.init, "ax"
    .align 4
.Lvecbase:
    .word emu_vectors
.Lstack:
    .word __stack
.Lbss_start:
    .word __bss_start
.Lbss_end:
    .word __bss_end
.Lmain:
    .word main
.Lexit:
    .word emu_exit

    .globl _start
    .align 4
_start:
    l32r a2, .Lvecbase
    wsr a2, vecbase
    /* PS: user vector mode (UM), interrupts masked (INTLEVEL 15), EXCM cleared */
    movi a2, 0x2f
    wsr a2, ps
    rsync
    l32r a1, .Lstack
    l32r a2, .Lbss_start
    l32r a3, .Lbss_end
    movi a4, 0
1:  bgeu a2, a3, 2f
    s32i a4, a2, 0
    addi a2, a2, 4
    j 1b
2:  l32r a0, .Lmain
    callx0 a0
    l32r a3, .Lexit
    callx0 a3
3:  j 3b
