/*
 * ESP32-C3 boot, in IRAM (link.ld puts .iram.* there): what runs between the ROM's jump to
 * _start and code in flash, and the end of a run.
 *
 * - The watchdogs: in flash boot the ROM arms the main-system watchdog of timer group 0 and the
 *   RTC watchdog (their flash-boot modes), and the super watchdog runs unless fed.  A firmware
 *   without a second-stage bootloader must stop them itself, as ESP-IDF's bootloader does.
 * - Flash: the ROM loads only the image's RAM segments (esptool --ram-only-header; a flash
 *   segment in the header makes the ROM fault).  c3_boot() reads the image header as a
 *   second-stage bootloader does, through a spare MMU entry that windows flash into DROM (the
 *   ROM's esp_rom_spiflash_read returned zeros under QEMU), finds the IROM and DROM segments that
 *   follow the RAM ones, and points one MMU entry per 64 KiB page at them.
 * - The end: c3_finish() prints "EMU EXIT <code>", lets UART0 drain and requests a software
 *   system reset; under QEMU's -no-reboot that ends the emulator (emulated/esp_qemu.py).
 *
 * Nothing here may touch flash before the mapping: no string literal, no switch table, no libc
 * call.  Messages are DRAM arrays (.dram.*) printed with the ROM's ets_printf.
 */
#include <stdint.h>

#include "emu.h"

#define IRAM __attribute__((section(".iram.boot"), noinline))
#define DRAM_STR(name, text) static const char name[] __attribute__((section(".dram.boot"))) = text

#define REG(addr) (*(volatile uint32_t *)(addr))

/* timer group 0/1 main-system watchdog, RTC watchdog, super watchdog (TRM register summary) */
#define TIMG0_BASE 0x6001F000u
#define TIMG1_BASE 0x60020000u
#define TIMG_WDTCONFIG0 0x48u
#define TIMG_WDTWPROTECT 0x64u
#define RTC_CNTL_BASE 0x60008000u
#define RTC_CNTL_OPTIONS0 (RTC_CNTL_BASE + 0x00u)
#define RTC_CNTL_SW_SYS_RST (1u << 31)
#define RTC_CNTL_WDTCONFIG0 (RTC_CNTL_BASE + 0x90u)
#define RTC_CNTL_WDTWPROTECT (RTC_CNTL_BASE + 0xA8u)
#define RTC_CNTL_SWD_CONF (RTC_CNTL_BASE + 0xACu)
#define RTC_CNTL_SWD_AUTO_FEED_EN (1u << 31)
#define RTC_CNTL_SWD_WPROTECT (RTC_CNTL_BASE + 0xB0u)
#define WDT_WKEY 0x50D83AA1u
#define SWD_WKEY 0x8F1D312Au

/* UART0 status: bits 16..25 count the bytes waiting in the transmit FIFO */
#define UART0_STATUS 0x6000001Cu
#define UART_TXFIFO_CNT(status) (((status) >> 16) & 0x3FFu)

/* the flash cache: MMU table (entry i: DROM and IROM page i), the bus shut-off bits */
#define MMU_TABLE 0x600C5000u
#define MMU_ENTRIES 128u
#define MMU_PAGE 0x10000u
#define MMU_INVALID (1u << 8)
#define WINDOW_ENTRY (MMU_ENTRIES - 1u) /* reads flash during boot; free again afterwards */
#define EXTMEM_ICACHE_CTRL1 0x600C4004u
#define EXTMEM_ICACHE_SHUT_IBUS (1u << 0)
#define EXTMEM_ICACHE_SHUT_DBUS (1u << 1)
#define DROM_BASE 0x3C000000u
#define IROM_BASE 0x42000000u
#define WINDOW_BYTES 0x800000u

#define IMAGE_MAGIC 0xE9u
#define IMAGE_HEADER_BYTES 24u /* common 8 + extended 16 */
#define SEGMENT_HEADER_BYTES 8u
#define MAX_FLASH_SEGMENTS 16u
#define FLASH_BYTES 0x400000u /* the 4 MB image emulated/esp_qemu.py writes */

/* the ROM's functions (addresses in link.ld) */
extern int ets_printf(const char *fmt, ...);
extern void ets_delay_us(uint32_t us);
extern uint32_t Cache_Suspend_ICache(void);
extern void Cache_Resume_ICache(uint32_t autoload);
extern void Cache_Invalidate_ICache_All(void);

extern const uint8_t _drom_start[], _irom_start[];

DRAM_STR(msg_exit, "EMU EXIT %d\n");
DRAM_STR(msg_read, "\nEMU BOOT: image header read past the flash at 0x%x\n");
DRAM_STR(msg_magic, "\nEMU BOOT: no image at flash 0 (first byte 0x%x)\n");
DRAM_STR(msg_align, "\nEMU BOOT: segment at 0x%x: flash offset 0x%x and address differ mod 64 KiB\n");
DRAM_STR(msg_range, "\nEMU BOOT: segment at 0x%x, 0x%x bytes, leaves the flash window\n");
DRAM_STR(msg_check, "\nEMU BOOT: %s not mapped: the cache reads 0x%x, flash has 0x%x\n");
DRAM_STR(msg_missing, "\nEMU BOOT: the image has no segment for the %s window\n");
DRAM_STR(name_drom, "DROM");
DRAM_STR(name_irom, "IROM");

static IRAM void stop_group_watchdog(uint32_t group)
{
    REG(group + TIMG_WDTWPROTECT) = WDT_WKEY;
    REG(group + TIMG_WDTCONFIG0) = 0; /* off, flash-boot mode off */
    REG(group + TIMG_WDTWPROTECT) = 0;
}

static IRAM void stop_watchdogs(void)
{
    stop_group_watchdog(TIMG0_BASE);
    stop_group_watchdog(TIMG1_BASE);
    REG(RTC_CNTL_WDTWPROTECT) = WDT_WKEY;
    REG(RTC_CNTL_WDTCONFIG0) = 0;
    REG(RTC_CNTL_WDTWPROTECT) = 0;
    REG(RTC_CNTL_SWD_WPROTECT) = SWD_WKEY;
    REG(RTC_CNTL_SWD_CONF) |= RTC_CNTL_SWD_AUTO_FEED_EN;
    REG(RTC_CNTL_SWD_WPROTECT) = 0;
}

IRAM _Noreturn void c3_finish(int code)
{
    ets_printf(msg_exit, code);
    while (UART_TXFIFO_CNT(REG(UART0_STATUS)) != 0u) {
    }
    ets_delay_us(200); /* the last byte leaves the shift register (87 us at 115200 baud) */
    REG(RTC_CNTL_OPTIONS0) = RTC_CNTL_SW_SYS_RST;
    for (;;) {
    }
}

/* n bytes (a multiple of 4) of flash from `at` (4-aligned) through the window entry */
static IRAM void read_flash(uint32_t at, uint32_t *dst, uint32_t n)
{
    if ((at & 3u) || n > FLASH_BYTES || at > FLASH_BYTES - n) {
        ets_printf(msg_read, at);
        c3_finish(EMU_EXIT_TRAP);
    }
    static uint32_t mapped_page = MMU_INVALID; /* in DRAM: .bss is cleared before c3_boot */
    for (uint32_t i = 0; i < n / 4u; i++, at += 4u) {
        if (at / MMU_PAGE != mapped_page) {
            mapped_page = at / MMU_PAGE;
            REG(MMU_TABLE + 4u * WINDOW_ENTRY) = mapped_page;
            Cache_Invalidate_ICache_All();
        }
        dst[i] = *(const volatile uint32_t *)(uintptr_t)(DROM_BASE + WINDOW_ENTRY * MMU_PAGE +
                                                        at % MMU_PAGE);
    }
}

static IRAM int in_window(uint32_t addr, uint32_t base)
{
    return addr >= base && addr - base < WINDOW_BYTES;
}

/* Point the MMU entries of [addr, addr + n) at the flash pages holding the segment's data. */
static IRAM void map_segment(uint32_t addr, uint32_t n, uint32_t data)
{
    const uint32_t base = in_window(addr, DROM_BASE) ? DROM_BASE : IROM_BASE;
    if ((data ^ addr) & (MMU_PAGE - 1u)) {
        ets_printf(msg_align, addr, data);
        c3_finish(EMU_EXIT_TRAP);
    }
    if (n == 0u || n > WINDOW_BYTES - (addr - base)) {
        ets_printf(msg_range, addr, n);
        c3_finish(EMU_EXIT_TRAP);
    }
    const uint32_t first = (addr - base) / MMU_PAGE, last = (addr - base + n - 1u) / MMU_PAGE;
    for (uint32_t e = first; e <= last; e++) {
        REG(MMU_TABLE + 4u * e) = data / MMU_PAGE + (e - first); /* bit 8 clear: valid, flash */
    }
}

/* The first word the cache shows at `addr` must be the flash word at `flash_at`.  Read through
 * the data bus: an IROM address is read at its DROM twin (the windows share the MMU entries). */
static IRAM void check_mapped(uint32_t addr, uint32_t flash_at, const char *what)
{
    uint32_t want;
    read_flash(flash_at, &want, 4);
    const uint32_t data_addr = in_window(addr, IROM_BASE) ? addr - IROM_BASE + DROM_BASE : addr;
    const uint32_t got = *(const volatile uint32_t *)(uintptr_t)data_addr;
    if (got != want) {
        ets_printf(msg_check, what, got, want);
        c3_finish(EMU_EXIT_TRAP);
    }
}

static IRAM void map_flash(void)
{
    REG(EXTMEM_ICACHE_CTRL1) &= ~(EXTMEM_ICACHE_SHUT_IBUS | EXTMEM_ICACHE_SHUT_DBUS);
    uint32_t header[IMAGE_HEADER_BYTES / 4];
    read_flash(0, header, IMAGE_HEADER_BYTES);
    if ((header[0] & 0xFFu) != IMAGE_MAGIC) {
        ets_printf(msg_magic, header[0] & 0xFFu);
        c3_finish(EMU_EXIT_TRAP);
    }
    uint32_t at = IMAGE_HEADER_BYTES;
    uint32_t seg[2];
    for (uint32_t i = 0, n = (header[0] >> 8) & 0xFFu; i < n; i++) { /* the RAM segments */
        read_flash(at, seg, SEGMENT_HEADER_BYTES);
        at += SEGMENT_HEADER_BYTES + seg[1];
    }
    at = (at | 15u) + 1u; /* the checksum byte ends a 16-byte block */
    uint32_t drom_at = 0, irom_at = 0;
    /* then padding segments (address 0) and the flash segments, up to the first other header */
    for (uint32_t i = 0; i < 2u * MAX_FLASH_SEGMENTS; i++) {
        read_flash(at, seg, SEGMENT_HEADER_BYTES);
        const uint32_t addr = seg[0], data = at + SEGMENT_HEADER_BYTES;
        if (addr != 0u && !in_window(addr, DROM_BASE) && !in_window(addr, IROM_BASE)) {
            break;
        }
        if (addr != 0u) {
            const uint32_t autoload = Cache_Suspend_ICache();
            map_segment(addr, seg[1], data);
            Cache_Resume_ICache(autoload);
            if (addr == (uint32_t)(uintptr_t)_drom_start) {
                drom_at = data;
            } else if (addr == (uint32_t)(uintptr_t)_irom_start) {
                irom_at = data;
            }
        }
        if (seg[1] > FLASH_BYTES - data) {
            break;
        }
        at = data + seg[1];
    }
    if (drom_at == 0u || irom_at == 0u) {
        ets_printf(msg_missing, drom_at == 0u ? name_drom : name_irom);
        c3_finish(EMU_EXIT_TRAP);
    }
    check_mapped((uint32_t)(uintptr_t)_drom_start, drom_at, name_drom);
    check_mapped((uint32_t)(uintptr_t)_irom_start, irom_at, name_irom);
    REG(MMU_TABLE + 4u * WINDOW_ENTRY) = MMU_INVALID;
    Cache_Invalidate_ICache_All();
}

IRAM void c3_boot(void)
{
    stop_watchdogs();
    map_flash();
}
