/* rv32imac startup for qemu-system-riscv32 -M virt -bios none: QEMU loads the ELF into RAM and
 * jumps to _start in machine mode.  Set up gp/sp, install the trap vector, clear .bss, run
 * main() and exit through semihosting with its return value. */
    .option arch, +zicsr
    .section .text.init, "ax"
    .globl _start
_start:
    .option push
    .option norelax
    la gp, __global_pointer$
    .option pop
    la sp, __stack
    la t0, emu_trap_entry
    csrw mtvec, t0
    la t0, __bss_start
    la t1, __bss_end
1:  bgeu t0, t1, 2f
    sw zero, 0(t0)
    addi t0, t0, 4
    j 1b
2:  call main
    call emu_exit

/* Direct-mode vector (mtvec needs 4-byte alignment): report mcause, mepc and mtval. */
    .align 4
emu_trap_entry:
    csrr a0, mcause
    csrr a1, mepc
    csrr a2, mtval
    la sp, __stack
    call emu_trap
