/*
 * Smoke program for the emulated targets: proves the startup code, console, exit status,
 * 64-bit integer and float helpers (the libgcc routines the engine needs).  Options prove the
 * harness reports failures: -DEMU_SMOKE_EXIT=N (exit status), -DEMU_SMOKE_UNALIGNED (an
 * unaligned 32-bit load: a trap on the lx106), -DEMU_SMOKE_TRAP (a trapping instruction),
 * -DEMU_SMOKE_HANG (never ends: the harness must time out).
 */
#include <stdint.h>

#include "emu.h"

#ifndef EMU_SMOKE_EXIT
#define EMU_SMOKE_EXIT 0
#endif

/* volatile: keep the compiler from folding the arithmetic at build time. */
static volatile int64_t v_a = -123456789012LL;
static volatile int64_t v_b = 98765LL;
static volatile int32_t v_i = -7;
static volatile float v_f = 0.1f;
static volatile uint32_t v_u = 4000000000u;
static volatile uint8_t v_bytes[8] = {1, 2, 3, 4, 5, 6, 7, 8};

static int check(const char *what, int ok)
{
    if (!ok) {
        emu_puts("smoke: FAILED ");
        emu_puts(what);
        emu_puts("\n");
    }
    return ok ? 0 : 1;
}

static float f_from_bits(uint32_t u)
{
    union {
        uint32_t u;
        float f;
    } x = {.u = u};
    return x.f;
}

static uint32_t bits_of(float f)
{
    union {
        float f;
        uint32_t u;
    } x = {.f = f};
    return x.u;
}

int main(void)
{
    int bad = 0;
    emu_puts("smoke: hello from ");
    emu_puts(emu_target_name);
    emu_puts("\n");

    int64_t a = v_a, b = v_b;
    bad += check("int64 mul", a * b == -12193209766770180LL);
    bad += check("int64 div", a / b == -1250005LL);
    bad += check("int64 mod", a % b == -45187LL);
    bad += check("uint64 div", (uint64_t)-a / (uint64_t)b == 1250005ULL);
    bad += check("int32 div", (int32_t)(1000 / v_i) == -142);
    bad += check("uint32 mod", v_u % 7u == 3u);
    bad += check("int64 shift", (a >> 20) == -117738LL);

    float f = v_f;
    bad += check("float mul", bits_of(f * 3.0f) == 0x3e99999au);
    bad += check("float add", bits_of(f + 0.2f) == 0x3e99999au);
    bad += check("float sub", bits_of(f - 1.0f) == 0xbf666666u);
    bad += check("float div", bits_of(1.0f / f) == 0x41200000u);
    bad += check("int to float", bits_of((float)v_i) == 0xc0e00000u);
    bad += check("uint to float", bits_of((float)v_u) == 0x4f6e6b28u);
    bad += check("float to int", (int32_t)f_from_bits(0xc2f6e979u) == -123);
    bad += check("float compare", f < 0.25f && !(f > 0.25f) && f != 0.0f);

    uint32_t word = (uint32_t)v_bytes[0] | (uint32_t)v_bytes[1] << 8 |
                    (uint32_t)v_bytes[2] << 16 | (uint32_t)v_bytes[3] << 24;
    bad += check("byte-wise load", word == 0x04030201u);
#ifdef EMU_SMOKE_UNALIGNED
    /* Must trap on Xtensa (LoadStoreAlignmentCause); the harness expects EMU_EXIT_TRAP. */
    /* The address goes through a volatile so the compiler cannot see the misalignment and
     * split the load into byte loads (which it does for a provably misaligned pointer). */
    static volatile uintptr_t addr;
    addr = (uintptr_t)&v_bytes[1];
    volatile const uint32_t *p = (volatile const uint32_t *)addr;
    emu_puts("smoke: unaligned load gives ");
    emu_put_hex32(*p);
    emu_puts("\n");
#endif

#ifdef EMU_SMOKE_TRAP
    __builtin_trap();
#endif
#ifdef EMU_SMOKE_HANG
    for (volatile uint32_t spin = 0;; spin++) {
    }
#endif
    emu_puts(bad == 0 ? "smoke: PASS " : "smoke: FAIL ");
    emu_put_u32((uint32_t)bad);
    emu_puts(" failures\n");
    return bad == 0 ? EMU_SMOKE_EXIT : 1;
}
