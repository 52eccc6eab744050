/*
 * The emulated harness's I/O (emulated/include/emu.h) on the Cortex-M7 target, on top of
 * picolibc's semihosting stdio and exit: the golden-suite program runs here unchanged.  Faults
 * never reach emu_trap() here: picolibc's crt0 owns the fault vectors (it prints
 * "ARM fault: ..." and exits 1, which no verdict follows).
 */
#include <stdio.h>
#include <stdlib.h>

#include "emu.h"

const char emu_target_name[] = "cortex-m7";

void emu_write(const char *s, size_t n)
{
    fwrite(s, 1, n, stdout);
    fflush(stdout);
}

_Noreturn void emu_exit(int code)
{
    fflush(stdout);
    exit(code);
}
