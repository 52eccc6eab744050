/* Xtensa simulator calls (QEMU: -semihosting): SIMCALL with the call number in a2 and the
 * arguments in a3..a5. */
#include "emu.h"

#define SYS_EXIT 1
#define SYS_WRITE 4
#define STDOUT_FD 1

const char emu_target_name[] = "lx106";

static uint32_t simcall(uint32_t op, uint32_t a, uint32_t b, uint32_t c)
{
    register uint32_t a2 __asm__("a2") = op;
    register uint32_t a3 __asm__("a3") = a;
    register uint32_t a4 __asm__("a4") = b;
    register uint32_t a5 __asm__("a5") = c;
    __asm__ volatile("simcall" : "+r"(a2), "+r"(a3) : "r"(a4), "r"(a5) : "memory");
    return a2;
}

void emu_write(const char *s, size_t n)
{
    while (n > 0) {
        uint32_t done = simcall(SYS_WRITE, STDOUT_FD, (uint32_t)(uintptr_t)s, (uint32_t)n);
        if (done == 0u || done == UINT32_MAX || done > n) {
            return; /* console gone: nothing sensible left to do */
        }
        s += done;
        n -= done;
    }
}

_Noreturn void emu_exit(int code)
{
    simcall(SYS_EXIT, (uint32_t)code, 0u, 0u);
    for (;;) {
    }
}
