/*
 * Checks emulated/xtensa_lx106/libgcc_extra.c (compiled natively with EMU_LIBGCC_HOST_TEST)
 * against the host's own integer unit and FPU (x86-64 SSE: binary32, round to nearest even,
 * no flush-to-zero): random operands plus every pair of a list of edge values.
 * Prints one line per helper and exits 1 on the first mismatch.  With EMU_LIBGCC_FULL (the
 * variant for targets without any libgcc) the file's own __udivmoddi4/__divmoddi4 sit under
 * the 64-bit division checks and __divsf3 is checked too.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

uint32_t emu_test___udivsi3(uint32_t n, uint32_t d);
uint32_t emu_test___umodsi3(uint32_t n, uint32_t d);
int32_t emu_test___divsi3(int32_t n, int32_t d);
uint64_t emu_test___umulsidi3(uint32_t a, uint32_t b);
int64_t emu_test___muldi3(int64_t a, int64_t b);
uint64_t emu_test___udivdi3(uint64_t n, uint64_t d);
uint64_t emu_test___umoddi3(uint64_t n, uint64_t d);
int64_t emu_test___divdi3(int64_t n, int64_t d);
float emu_test___addsf3(float a, float b);
float emu_test___subsf3(float a, float b);
float emu_test___mulsf3(float a, float b);
float emu_test___floatsisf(int32_t i);
float emu_test___floatunsisf(uint32_t u);
#ifdef EMU_LIBGCC_FULL
float emu_test___divsf3(float a, float b);
#else

/* The host side of __udivmoddi4/__divmoddi4, which the lx106 libgcc does provide. */
uint64_t __udivmoddi4(uint64_t n, uint64_t d, uint64_t *rem)
{
    if (rem) {
        *rem = n % d;
    }
    return n / d;
}

int64_t __divmoddi4(int64_t n, int64_t d, int64_t *rem)
{
    if (rem) {
        *rem = n % d;
    }
    return n / d;
}
#endif

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint64_t rnd64(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static uint32_t fbits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float ffrom(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static int same_float(float got, float want)
{
    if (want != want) {
        return got != got; /* any NaN for a NaN: the payload of a NaN is not specified */
    }
    return fbits(got) == fbits(want);
}

static const uint32_t edges[] = {
    0x00000000u, 0x80000000u, 0x00000001u, 0x80000001u, 0x00000002u, 0x007FFFFFu, 0x807FFFFFu,
    0x00400000u, 0x00800000u, 0x80800000u, 0x00800001u, 0x3F800000u, 0xBF800000u, 0x3F800001u,
    0x3F7FFFFFu, 0x3F000000u, 0x4B000000u, 0x4B000001u, 0x4AFFFFFFu, 0x33800000u, 0x34000000u,
    0x7F7FFFFFu, 0xFF7FFFFFu, 0x7F000000u, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00001u,
    0x7F800001u, 0x3DCCCCCDu, 0x40490FDBu, 0x1F800000u, 0x5F800000u, 0x0C000000u, 0x00FFFFFFu,
    0x3FFFFFFFu, 0x3FC00000u, 0xC2F6E979u, 0x43000000u, 0xC3000000u, 0x3B808081u};
#define N_EDGES (sizeof edges / sizeof edges[0])

typedef float (*binop_t)(float, float);

static int check_binop(const char *name, binop_t mine, char op, uint64_t n_random)
{
    uint64_t count = 0;
    for (uint64_t i = 0; i < N_EDGES * N_EDGES + n_random; i++) {
        uint32_t ua, ub;
        if (i < N_EDGES * N_EDGES) {
            ua = edges[i / N_EDGES];
            ub = edges[i % N_EDGES];
        } else {
            uint64_t r = rnd64();
            ua = (uint32_t)r;
            ub = (uint32_t)(r >> 32);
            if ((i & 3u) == 0u) { /* nearby exponents: cancellation and ties */
                ub = (ub & 0x807FFFFFu) | (ua & 0x7F800000u);
            } else if ((i & 3u) == 1u) { /* small operands: subnormal results */
                ua &= 0x87FFFFFFu;
                ub &= 0x87FFFFFFu;
            }
        }
        float a = ffrom(ua), b = ffrom(ub);
        volatile float va = a, vb = b;
        float want = op == '+' ? va + vb : op == '-' ? va - vb : op == '*' ? va * vb : va / vb;
        float got = mine(a, b);
        if (!same_float(got, want)) {
            printf("%s MISMATCH a=0x%08" PRIx32 " b=0x%08" PRIx32 " got=0x%08" PRIx32
                   " want=0x%08" PRIx32 "\n",
                   name, ua, ub, fbits(got), fbits(want));
            return 1;
        }
        count++;
    }
    printf("%s ok %" PRIu64 "\n", name, count);
    return 0;
}

static int check_conversions(uint64_t n_random)
{
    static const uint32_t int_edges[] = {0u,          1u,          2u,          3u,
                                         0x7FFFFFFFu, 0x80000000u, 0x80000001u, 0xFFFFFFFFu,
                                         0x01000000u, 0x01000001u, 0x01000003u, 0x00FFFFFFu,
                                         0x02000002u, 0x02000006u, 0xFFFFFF80u, 0x7FFFFFC0u};
    uint64_t count = 0;
    for (uint64_t i = 0; i < 16 + n_random; i++) {
        uint32_t u = i < 16 ? int_edges[i] : (uint32_t)rnd64() >> (rnd64() & 31u);
        volatile uint32_t vu = u;
        volatile int32_t vi = (int32_t)u;
        if (!same_float(emu_test___floatunsisf(u), (float)vu) ||
            !same_float(emu_test___floatsisf((int32_t)u), (float)vi)) {
            printf("int->float MISMATCH u=0x%08" PRIx32 "\n", u);
            return 1;
        }
        count += 2;
    }
    printf("int->float ok %" PRIu64 "\n", count);
    return 0;
}

static int check_integers(uint64_t n_random)
{
    uint64_t count = 0;
    for (uint64_t i = 0; i < n_random; i++) {
        uint64_t r = rnd64(), s = rnd64();
        uint32_t a = (uint32_t)r >> (s & 31u), b = (uint32_t)(r >> 32) >> ((s >> 8) & 31u);
        int64_t x = (int64_t)(rnd64() >> (s >> 16 & 63u)) * ((s >> 30) & 1u ? -1 : 1);
        int64_t y = (int64_t)(rnd64() >> (s >> 22 & 63u)) * ((s >> 31) & 1u ? -1 : 1);
        if (emu_test___umulsidi3(a, b) != (uint64_t)a * b ||
            emu_test___muldi3(x, y) != (int64_t)((uint64_t)x * (uint64_t)y)) {
            printf("multiply MISMATCH a=%" PRIu32 " b=%" PRIu32 " x=%" PRId64 " y=%" PRId64 "\n",
                   a, b, x, y);
            return 1;
        }
        count += 2;
        if (b != 0u) {
            int32_t sa = (int32_t)a, sb = (int32_t)b;
            if (emu_test___udivsi3(a, b) != a / b || emu_test___umodsi3(a, b) != a % b ||
                (!(sa == INT32_MIN && sb == -1) && emu_test___divsi3(sa, sb) != sa / sb)) {
                printf("div32 MISMATCH a=%" PRIu32 " b=%" PRIu32 "\n", a, b);
                return 1;
            }
            count += 3;
        }
        if (y != 0) {
            if (emu_test___udivdi3((uint64_t)x, (uint64_t)y) != (uint64_t)x / (uint64_t)y ||
                emu_test___umoddi3((uint64_t)x, (uint64_t)y) != (uint64_t)x % (uint64_t)y ||
                (!(x == INT64_MIN && y == -1) && emu_test___divdi3(x, y) != x / y)) {
                printf("div64 MISMATCH x=%" PRId64 " y=%" PRId64 "\n", x, y);
                return 1;
            }
            count += 3;
        }
    }
    printf("integers ok %" PRIu64 "\n", count);
    return 0;
}

int main(void)
{
    const uint64_t n = 2000000u;
    int bad = check_binop("__addsf3", emu_test___addsf3, '+', n);
    bad |= check_binop("__subsf3", emu_test___subsf3, '-', n);
    bad |= check_binop("__mulsf3", emu_test___mulsf3, '*', n);
#ifdef EMU_LIBGCC_FULL
    bad |= check_binop("__divsf3", emu_test___divsf3, '/', n);
#endif
    bad |= check_conversions(n);
    bad |= check_integers(n);
    printf(bad ? "libgcc_extra: FAIL\n" : "libgcc_extra: PASS\n");
    return bad;
}
