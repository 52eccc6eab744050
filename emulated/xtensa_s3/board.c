/* ESP32-S3 board support for the emulated runs: console on UART0, exit through the simulator
 * call (QEMU -semihosting; the same SYS_EXIT/SYS_WRITE numbers as emulated/xtensa_lx106), and
 * the ROM's watchdogs switched off (a long golden run must not be reset half-way). */
#include "emu.h"

#define REG(addr) (*(volatile uint32_t *)(uintptr_t)(addr))

#define UART0_FIFO 0x60000000u
#define UART0_STATUS 0x6000001Cu
#define UART_TXFIFO_CNT(status) (((status) >> 16) & 0x3FFu)
#define UART_FIFO_LEN 128u

#define TIMG0_BASE 0x6001F000u
#define TIMG1_BASE 0x60020000u
#define TIMG_WDTCONFIG0 0x48u
#define TIMG_WDTPROTECT 0x64u
#define WDT_WKEY 0x50D83AA1u
#define RTC_CNTL_WDTCONFIG0 0x60008098u
#define RTC_CNTL_WDTWPROTECT 0x600080B0u
#define RTC_CNTL_SWD_CONF 0x600080B4u
#define RTC_CNTL_SWD_WPROTECT 0x600080B8u
#define SWD_WKEY 0x8F1D312Au
#define SWD_AUTO_FEED_EN (1u << 31)

const char emu_target_name[] = "esp32s3";

static void timg_wdt_off(uint32_t base)
{
    REG(base + TIMG_WDTPROTECT) = WDT_WKEY;
    REG(base + TIMG_WDTCONFIG0) = 0u; /* stages off, flash-boot mode off */
    REG(base + TIMG_WDTPROTECT) = 0u;
}

void emu_s3_board_init(void);
void emu_s3_board_init(void)
{
    timg_wdt_off(TIMG0_BASE);
    timg_wdt_off(TIMG1_BASE);
    REG(RTC_CNTL_WDTWPROTECT) = WDT_WKEY;
    REG(RTC_CNTL_WDTCONFIG0) = 0u;
    REG(RTC_CNTL_WDTWPROTECT) = 0u;
    REG(RTC_CNTL_SWD_WPROTECT) = SWD_WKEY;
    REG(RTC_CNTL_SWD_CONF) |= SWD_AUTO_FEED_EN;
    REG(RTC_CNTL_SWD_WPROTECT) = 0u;
}

void emu_write(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        while (UART_TXFIFO_CNT(REG(UART0_STATUS)) >= UART_FIFO_LEN) {
        }
        REG(UART0_FIFO) = (uint8_t)s[i];
    }
}

/* emu_exit (simulator call SYS_EXIT) and emu_s3_ccount are in start.S: clang's inline
 * assembler knows neither simcall nor the CCOUNT register. */
uint32_t emu_s3_ccount(void);

#define INSNS_PER_TICK 25u /* emulated/esp32s3.py run(): QEMU -icount shift=0,sleep=off */

/* Modulo 2^32 like CCOUNT itself, so differences stay exact; resolution 25 instructions. */
uint32_t emu_insn_count(void)
{
    return emu_s3_ccount() * INSNS_PER_TICK;
}
