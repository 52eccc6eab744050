/*
 * A firmware that ends the way a watchdog or a crash-and-reboot does: it resets the ESP32-C3
 * (RTC_CNTL_OPTIONS0.SW_SYS_RST) without printing the EMU EXIT line.  The harness must report
 * that as a run with no return code (ended "reset"), never as a pass.
 */
#include <stdint.h>

#include "emu.h"

int main(void)
{
    emu_puts("reset: about to reset without an exit line\n");
    *(volatile uint32_t *)0x60008000u = 1u << 31;
    for (;;) {
    }
}
