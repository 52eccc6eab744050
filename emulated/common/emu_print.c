/* Target-independent formatting on top of emu_write(). */
#include "emu.h"

void emu_puts(const char *s)
{
    size_t n = 0;
    while (s[n] != '\0') {
        n++;
    }
    emu_write(s, n);
}

void emu_put_u32(uint32_t v)
{
    char buf[10];
    size_t i = sizeof buf;
    do {
        buf[--i] = (char)('0' + v % 10u);
        v /= 10u;
    } while (v != 0u);
    emu_write(buf + i, sizeof buf - i);
}

void emu_put_i32(int32_t v)
{
    if (v < 0) {
        emu_write("-", 1);
        /* via uint32_t so INT32_MIN does not overflow */
        emu_put_u32(0u - (uint32_t)v);
    } else {
        emu_put_u32((uint32_t)v);
    }
}

void emu_put_hex32(uint32_t v)
{
    static const char digits[] = "0123456789abcdef";
    char buf[10] = {'0', 'x'};
    for (int i = 0; i < 8; i++) {
        buf[2 + i] = digits[(v >> (28 - 4 * i)) & 0xFu];
    }
    emu_write(buf, sizeof buf);
}

_Noreturn void emu_trap(uint32_t cause, uint32_t pc, uint32_t addr)
{
    emu_puts("\nEMU TRAP on ");
    emu_puts(emu_target_name);
    emu_puts(": cause ");
    emu_put_u32(cause);
    emu_puts(" pc ");
    emu_put_hex32(pc);
    emu_puts(" addr ");
    emu_put_hex32(addr);
    emu_puts("\n");
    emu_exit(EMU_EXIT_TRAP);
}
