/*
 * The emulated harness's I/O (emulated/include/emu.h) on the ESP32-C3: UART0, as a sketch's
 * Serial or ESP-IDF's console would use it (QEMU's -nographic puts UART0 on stdio), picolibc's
 * stdio on top of it, and the end of a run through boot.c's c3_finish().
 */
#include <stdint.h>
#include <stdio.h>

#include "emu.h"

#define UART0_FIFO (*(volatile uint32_t *)0x60000000u)
#define UART0_STATUS (*(volatile uint32_t *)0x6000001Cu)
#define UART_TXFIFO_CNT(status) (((status) >> 16) & 0x3FFu)
#define UART_FIFO_BYTES 128u

_Noreturn void c3_finish(int code); /* boot.c */

const char emu_target_name[] = "esp32c3";

static void uart_put(char c)
{
    while (UART_TXFIFO_CNT(UART0_STATUS) >= UART_FIFO_BYTES - 1u) {
    }
    UART0_FIFO = (uint8_t)c;
}

void emu_write(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uart_put(s[i]);
    }
}

_Noreturn void emu_exit(int code)
{
    c3_finish(code);
}

/* picolibc: exit() ends here after the destructors */
_Noreturn void _exit(int code)
{
    c3_finish(code);
}

static int stdio_put(char c, FILE *f)
{
    (void)f;
    uart_put(c);
    return (unsigned char)c;
}

static FILE uart_stdio = FDEV_SETUP_STREAM(stdio_put, NULL, NULL, _FDEV_SETUP_WRITE);
FILE *const stdin = &uart_stdio;
FILE *const stdout = &uart_stdio;
FILE *const stderr = &uart_stdio;
