/* ESP32-S3 board support for the emulated runs: console on UART0, the end of a run as on the
 * ESP32-C3 (emulated/esp_qemu.py: "EMU EXIT <n>" on UART0, then a software system reset that
 * QEMU's -no-reboot turns into its exit; on a board the same firmware prints the line and
 * reboots), the ROM's watchdogs switched off (a long golden run must not be reset
 * half-way), and the second core parked.
 *
 * Why park core 1: the S3 is dual-core, and its ROM leaves the APP CPU polling in a loop for a
 * boot address.  QEMU runs both cores round-robin on one virtual clock, and under -icount that
 * clock (so CCOUNT) counts the instructions of both: core 1's polling leaked into every count,
 * by an amount that depended on where the scheduler's slices fell.  Two layouts of the same
 * firmware measured one ANSI depthwise layer at 2,002,375 and 4,767,575 "instructions" for the
 * same executed code.  Given the ROM's ets_set_appcpu_boot_addr, core 1 jumps to emu_s3_park
 * (start.S) and halts in WAITI, so CCOUNT counts core 0 alone. */
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
#define RTC_CNTL_OPTIONS0 0x60008000u
#define RTC_CNTL_SW_SYS_RST (1u << 31)

/* The S3 ROM's public entry point ets_set_appcpu_boot_addr(uint32_t): the address the APP CPU's
 * ROM loop waits for. */
#define ROM_ETS_SET_APPCPU_BOOT_ADDR 0x40000720u

const char emu_target_name[] = "esp32s3";

void emu_s3_park(void); /* start.S */

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
    void (*const set_appcpu_boot_addr)(uint32_t) =
        (void (*)(uint32_t))(uintptr_t)ROM_ETS_SET_APPCPU_BOOT_ADDR;
    set_appcpu_boot_addr((uint32_t)(uintptr_t)&emu_s3_park);
}

void emu_write(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        while (UART_TXFIFO_CNT(REG(UART0_STATUS)) >= UART_FIFO_LEN) {
        }
        REG(UART0_FIFO) = (uint8_t)s[i];
    }
}

/* emu_s3_ccount is in start.S: clang's inline assembler does not know the CCOUNT register. */
uint32_t emu_s3_ccount(void);

#define INSNS_PER_TICK 25u /* emulated/esp_qemu.py: QEMU -icount shift=0,sleep=off */
#define CCOUNT_HZ 40000000u /* the core model's clock (on a chip: the CPU clock the ROM set) */

_Noreturn void emu_exit(int code)
{
    emu_puts("EMU EXIT ");
    emu_put_i32(code);
    emu_puts("\n");
    while (UART_TXFIFO_CNT(REG(UART0_STATUS)) != 0u) {
    }
    /* the last byte leaves the shift register (87 us at 115200 baud) before the reset */
    const uint32_t t0 = emu_s3_ccount();
    while (emu_s3_ccount() - t0 < CCOUNT_HZ / 5000u) {
    }
    REG(RTC_CNTL_OPTIONS0) = RTC_CNTL_SW_SYS_RST;
    for (;;) {
    }
}

/* Modulo 2^32 like CCOUNT itself, so differences stay exact; resolution 25 instructions. */
uint32_t emu_insn_count(void)
{
    return emu_s3_ccount() * INSNS_PER_TICK;
}
