/* The C library functions the engine, ESP-NN and the harness call, for the windowed Xtensa
 * ABI (Debian's only Xtensa C library, picolibc for the lx106, is call0).  Built
 * -ffreestanding, which also keeps clang from turning these loops into calls to themselves. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "emu.h"

void *memcpy(void *restrict dst, const void *restrict src, size_t n)
{
    uint8_t *d = dst;
    const uint8_t *s = src;
    if ((((uintptr_t)d | (uintptr_t)s) & 3u) == 0u) {
        for (; n >= 4u; n -= 4u, d += 4, s += 4) {
            *(uint32_t *)(void *)d = *(const uint32_t *)(const void *)s;
        }
    }
    while (n-- > 0u) {
        *d++ = *s++;
    }
    return dst;
}

void *memmove(void *dst, const void *src, size_t n)
{
    uint8_t *d = dst;
    const uint8_t *s = src;
    if (d < s) {
        while (n-- > 0u) {
            *d++ = *s++;
        }
    } else {
        while (n-- > 0u) {
            d[n] = s[n];
        }
    }
    return dst;
}

void *memset(void *dst, int c, size_t n)
{
    uint8_t *d = dst;
    while (n-- > 0u) {
        *d++ = (uint8_t)c;
    }
    return dst;
}

int memcmp(const void *a, const void *b, size_t n)
{
    const uint8_t *x = a, *y = b;
    for (size_t i = 0; i < n; i++) {
        if (x[i] != y[i]) {
            return x[i] < y[i] ? -1 : 1;
        }
    }
    return 0;
}

size_t strlen(const char *s)
{
    size_t n = 0;
    while (s[n] != '\0') {
        n++;
    }
    return n;
}

/* the whole-stack firmware has the full printf family (stack_libc.c) */
#ifndef EMU_S3_STACK_LIBC
int puts(const char *s)
{
    emu_puts(s);
    emu_write("\n", 1);
    return 0;
}

int printf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    for (const char *p = fmt; *p != '\0'; p++) {
        if (*p != '%' || p[1] == '\0') {
            emu_write(p, 1);
            continue;
        }
        switch (*++p) {
        case 's':
            emu_puts(va_arg(ap, const char *));
            break;
        case 'd':
        case 'i':
            emu_put_i32(va_arg(ap, int));
            break;
        case 'u':
            emu_put_u32(va_arg(ap, unsigned));
            break;
        case 'x':
            emu_put_hex32(va_arg(ap, unsigned));
            break;
        case 'c': {
            const char ch = (char)va_arg(ap, int);
            emu_write(&ch, 1);
            break;
        }
        default:
            emu_write(p, 1);
            break;
        }
    }
    va_end(ap);
    return 0;
}
#endif /* EMU_S3_STACK_LIBC */
