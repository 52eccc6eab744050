/*
 * Bare-metal harness for the emulated 32-bit targets (rv32imac under qemu-system-riscv32 -M virt,
 * Xtensa lx106 under qemu-system-xtensa -M sim).  Each target supplies emu_write() and
 * emu_exit() through its semihosting interface, startup code that calls main(), and a trap
 * handler that reports the cause and exits with EMU_EXIT_TRAP, so a fault can never look like
 * a pass or hang until the timeout.
 */
#ifndef EMU_H
#define EMU_H

#include <stddef.h>
#include <stdint.h>

#define EMU_EXIT_TRAP 3
#define EMU_EXIT_ABORT 4

/* Raw output to the host's console. */
void emu_write(const char *s, size_t n);

/* End the emulator with `code` as its exit status. */
_Noreturn void emu_exit(int code);

/* Called by the target's trap vector: prints the cause and exits with EMU_EXIT_TRAP. */
_Noreturn void emu_trap(uint32_t cause, uint32_t pc, uint32_t addr);

/* Small formatting helpers (no printf: picolibc's stdio needs per-target glue we avoid). */
void emu_puts(const char *s);
void emu_put_u32(uint32_t v);
void emu_put_i32(int32_t v);
void emu_put_hex32(uint32_t v);

#ifdef EMU_INSN_COUNT
/* Guest instructions executed so far, modulo 2^32 (targets that can count them). */
uint32_t emu_insn_count(void);
#endif

/* The name of the target, for the verdict line ("rv32imac", "lx106"). */
extern const char emu_target_name[];

#endif /* EMU_H */
