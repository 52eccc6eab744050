/* RISC-V semihosting (QEMU: -semihosting-config enable=on,target=native). */
#include "emu.h"

#define SYS_WRITE0 0x04
#define SYS_EXIT_EXTENDED 0x20
#define ADP_STOPPED_APPLICATION_EXIT 0x20026

const char emu_target_name[] = "rv32imac";

/* The semihosting call is the uncompressed slli/ebreak/srai triple, which must not straddle
 * a page: keep it out of line, aligned. */
__attribute__((noinline, aligned(16))) static uintptr_t semihost(uintptr_t op, uintptr_t arg)
{
    register uintptr_t a0 __asm__("a0") = op;
    register uintptr_t a1 __asm__("a1") = arg;
    __asm__ volatile(".option push\n"
                     ".option norvc\n"
                     "slli zero, zero, 0x1f\n"
                     "ebreak\n"
                     "srai zero, zero, 7\n"
                     ".option pop\n"
                     : "+r"(a0)
                     : "r"(a1)
                     : "memory");
    return a0;
}

void emu_write(const char *s, size_t n)
{
    /* SYS_WRITE0 prints a NUL-terminated string: send it in bounded, terminated chunks. */
    char chunk[129];
    while (n > 0) {
        size_t k = n < sizeof chunk - 1 ? n : sizeof chunk - 1;
        for (size_t i = 0; i < k; i++) {
            chunk[i] = s[i];
        }
        chunk[k] = '\0';
        semihost(SYS_WRITE0, (uintptr_t)chunk);
        s += k;
        n -= k;
    }
}

_Noreturn void emu_exit(int code)
{
    /* SYS_EXIT_EXTENDED carries the status on 32-bit targets (plain SYS_EXIT cannot). */
    static uintptr_t block[2];
    block[0] = ADP_STOPPED_APPLICATION_EXIT;
    block[1] = (uintptr_t)code;
    semihost(SYS_EXIT_EXTENDED, (uintptr_t)block);
    for (;;) {
    }
}
