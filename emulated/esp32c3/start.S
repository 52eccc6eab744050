/*
 * ESP32-C3 start-up, entered by the ROM's flash loader at the ELF's entry point in machine mode
 * (the ROM has loaded the RAM segments; interrupts are off; its own stack is in use).  Set gp,
 * sp, tp (picolibc's thread-local block) and the trap vector, clear .bss and .tbss (NOLOAD: the
 * ROM leaves whatever was there), let c3_boot() (boot.c, in IRAM) stop the watchdogs and map
 * flash, run the static constructors, main(), and end the run with main's return value
 * (emu_exit: the EMU EXIT line and a system reset).  All of this is in IRAM: flash is not
 * mapped before c3_boot() returns.
 */
    .option arch, +zicsr

/* The C3 core takes only vectored mtvec (MODE 1): exceptions enter at the base, interrupt n at
 * base + 4n.  Every entry reports the trap: nothing here enables an interrupt. */
    .section .iram.vectors, "ax"
    .balign 256
c3_vectors:
    .option push
    .option norvc
    .rept 32
    j c3_trap
    .endr
    .option pop

    .section .iram.start, "ax"
    .globl _start
_start:
    .option push
    .option norelax
    la gp, __global_pointer$
    .option pop
    la sp, __stack
    la tp, __tls_base
    la t0, c3_vectors
    ori t0, t0, 1
    csrw mtvec, t0
    la t0, __tbss_start
    la t1, __tls_end
    call c3_zero
    la t0, __bss_start
    la t1, __bss_end
    call c3_zero
    call c3_boot
    call __libc_init_array
    call main
    call emu_exit

/* zero the words of [t0, t1) (both 4-aligned); a leaf that touches nothing else */
c3_zero:
1:  bgeu t0, t1, 2f
    sw zero, 0(t0)
    addi t0, t0, 4
    j 1b
2:  ret

/* mcause, mepc and mtval to emu_trap() (emulated/common/emu_print.c), on a fresh stack */
    .balign 4
c3_trap:
    csrr a0, mcause
    csrr a1, mepc
    csrr a2, mtval
    la sp, __stack
    call emu_trap
