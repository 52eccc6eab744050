/* abort() for bare metal: the host ESP-NN kernels' HN_REQUIRE (ESPNN_HOST_STRICT) calls it
 * when the engine breaks a promise it makes to the kernels; report it and end the run. */
#include <stdlib.h>

#include "emu.h"

void abort(void)
{
    emu_puts("\nEMU ABORT on ");
    emu_puts(emu_target_name);
    emu_puts("\n");
    emu_exit(EMU_EXIT_ABORT);
}
