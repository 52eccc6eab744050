/* The harness on the build machine itself (the -m32/-m64 sanitizer builds of the golden run):
 * stdio instead of semihosting, and the sanitizers instead of trap vectors. */
#include <stdio.h>
#include <stdlib.h>

#include "emu.h"

#if UINTPTR_MAX == 0xFFFFFFFFu
const char emu_target_name[] = "host32";
#else
const char emu_target_name[] = "host64";
#endif

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
