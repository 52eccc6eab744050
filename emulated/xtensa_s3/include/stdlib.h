/* <stdlib.h> as far as bare metal has it: abort (emulated/common/emu_abort.c). */
#ifndef EMU_S3_STDLIB_H
#define EMU_S3_STDLIB_H
#include <stddef.h>
_Noreturn void abort(void);
#endif
