/* What the whole firmware stack (ExecuTorch's runtime, the adapter, EspnnModel, the memory
 * policy's C-library-heap world) needs of a C library on the ESP32-S3, for the windowed ABI:
 * Debian's only Xtensa C library (picolibc for the lx106) is call0, so only its headers are
 * used (emulated/esp32s3.py STACK) and these are the functions behind them.
 *
 * - the heap: a first-fit free list over the SRAM link.ld leaves after the stack, 16-byte
 *   granules, neighbours merged on free; aligned_alloc by over-allocating;
 * - stdio: vsnprintf (flags, width, precision, hh/h/l/ll/z/j/t, d i u o x X c s p % and the
 *   floating conversions e f g E F G with exact decimal digits from the binary64 bits, so
 *   no double arithmetic is needed: the S3 has no double-precision FPU and there is no
 *   libgcc), the printf family on UART0, every FILE the same console;
 * - strings, assert, clock.
 *
 * Built with -ffreestanding (C), so clang does not turn these loops into calls to themselves.
 * tests/hardening/test_esp32s3.py compiles the formatter natively (EMU_S3_LIBC_HOST_TEST) and
 * checks it against the host C library's snprintf. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef EMU_S3_LIBC_HOST_TEST
#define EMU_LIBC(name) emu_test_##name
#else
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "emu.h"
#define EMU_LIBC(name) name
#endif

int EMU_LIBC(vsnprintf)(char *out, size_t size, const char *fmt, va_list ap);
int EMU_LIBC(snprintf)(char *out, size_t size, const char *fmt, ...);

/* ------------------------------------------------------------------------------ formatting */

struct sink {
    char *buf;
    size_t size; /* bytes buf holds, the terminating NUL included */
    size_t n;    /* characters produced so far (may exceed size) */
};

static void put(struct sink *s, char c)
{
    if (s->n + 1u < s->size) {
        s->buf[s->n] = c;
    }
    s->n++;
}

static void put_n(struct sink *s, char c, int count)
{
    for (int i = 0; i < count; i++) {
        put(s, c);
    }
}

struct spec {
    int left, plus, space, alt, zero;
    int width, prec; /* prec < 0: not given */
    char conv;
};

/* sign/prefix, zeros, then the digits, padded to the width */
static void emit(struct sink *s, const struct spec *sp, const char *prefix, const char *digits,
                 int ndigits, int zeros)
{
    const int plen = (int)strlen(prefix);
    const int body = plen + zeros + ndigits;
    const int pad = sp->width > body ? sp->width - body : 0;
    if (!sp->left && !sp->zero) {
        put_n(s, ' ', pad);
    }
    for (int i = 0; i < plen; i++) {
        put(s, prefix[i]);
    }
    if (!sp->left && sp->zero) {
        put_n(s, '0', pad);
    }
    put_n(s, '0', zeros);
    for (int i = 0; i < ndigits; i++) {
        put(s, digits[i]);
    }
    if (sp->left) {
        put_n(s, ' ', pad);
    }
}

static void format_int(struct sink *s, struct spec sp, uint64_t v, int negative)
{
    char digits[24];
    int n = 0;
    const unsigned base = sp.conv == 'o' ? 8u : (sp.conv == 'x' || sp.conv == 'X' || sp.conv == 'p') ? 16u : 10u;
    const char *alphabet = sp.conv == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
    char rev[24];
    while (v != 0u) {
        rev[n++] = alphabet[v % base];
        v /= base;
    }
    for (int i = 0; i < n; i++) {
        digits[i] = rev[n - 1 - i];
    }
    int zeros = 0;
    if (sp.prec >= 0) {
        sp.zero = 0;
        zeros = sp.prec > n ? sp.prec - n : 0;
    } else if (n == 0) {
        zeros = 1; /* the value 0 */
    }
    const char *prefix = negative ? "-" : sp.plus ? "+" : sp.space ? " " : "";
    if (sp.conv == 'p' || (sp.alt && (sp.conv == 'x' || sp.conv == 'X') && n > 0)) {
        prefix = sp.conv == 'X' ? "0X" : "0x";
    } else if (sp.alt && sp.conv == 'o' && zeros == 0 && (n == 0 || digits[0] != '0')) {
        zeros = 1;
    }
    emit(s, &sp, prefix, digits, n, zeros);
}

/* A non-negative finite binary64 as exact decimal digits: the value is
 * 0.d[0]d[1]...d[n-1] x 10^exp10, with no leading or trailing zero digits. */
#define DEC_MAX 800 /* 2^-1074 has 751 significant digits; 2^1024 has 309 */

struct decimal {
    uint8_t d[DEC_MAX];
    int n;
    int exp10;
};

/* d[0..n) (little-endian decimal digits) times a one-digit k, in place; the new digit count */
static int digits_times(uint8_t *d, int n, unsigned k)
{
    unsigned carry = 0;
    for (int i = 0; i < n; i++) {
        const unsigned v = d[i] * k + carry;
        d[i] = (uint8_t)(v % 10u);
        carry = v / 10u;
    }
    while (carry != 0u) {
        d[n++] = (uint8_t)(carry % 10u);
        carry /= 10u;
    }
    return n;
}

static void decimal_from_bits(struct decimal *r, uint64_t mant, int exp2)
{
    /* value = mant * 2^exp2; digits little-endian in base 10 while building */
    uint8_t *d = r->d;
    int n = 0;
    while (mant != 0u) {
        d[n++] = (uint8_t)(mant % 10u);
        mant /= 10u;
    }
    int exp10 = 0;
    for (; exp2 > 0; exp2--) { /* times 2 */
        n = digits_times(d, n, 2u);
    }
    for (; exp2 < 0; exp2++) { /* times 5, divided by 10 */
        n = digits_times(d, n, 5u);
        exp10--;
    }
    int lo = 0;
    while (lo < n && d[lo] == 0u) { /* trailing zeros of the value */
        lo++;
        exp10++;
    }
    /* reverse to most significant first */
    const int len = n - lo;
    for (int i = 0; i < len / 2; i++) {
        const uint8_t t = d[lo + i];
        d[lo + i] = d[n - 1 - i];
        d[n - 1 - i] = t;
    }
    memmove(d, d + lo, (size_t)len);
    r->n = len;
    r->exp10 = exp10 + len;
}

/* Round to `keep` significant digits (keep >= 0), half to even on the exact digits. */
static void decimal_round(struct decimal *r, int keep)
{
    if (keep >= r->n) {
        return;
    }
    if (keep < 0) {
        r->n = 0;
        return;
    }
    int up;
    if (r->d[keep] > 5u) {
        up = 1;
    } else if (r->d[keep] < 5u) {
        up = 0;
    } else {
        up = r->n > keep + 1 || (keep > 0 && (r->d[keep - 1] & 1u));
    }
    r->n = keep;
    if (up) {
        int i = keep - 1;
        while (i >= 0 && r->d[i] == 9u) {
            i--;
        }
        if (i < 0) { /* 99.9 -> 100 */
            r->d[0] = 1;
            r->n = 1;
            r->exp10++;
        } else {
            r->d[i]++;
            r->n = i + 1;
        }
    }
    while (r->n > 0 && r->d[r->n - 1] == 0u) {
        r->n--;
    }
}

static char digit_at(const struct decimal *r, int i)
{
    return (char)('0' + (i >= 0 && i < r->n ? r->d[i] : 0));
}

#define FBUF 1100

static void format_float(struct sink *s, struct spec sp, uint64_t bits)
{
    static struct decimal dec; /* ~800 bytes: off the stack (one caller at a time) */
    static char buf[FBUF];
    const int negative = (int)(bits >> 63);
    const int e = (int)((bits >> 52) & 0x7FFu);
    const uint64_t frac = bits & 0xFFFFFFFFFFFFFull;
    const int upper = sp.conv >= 'A' && sp.conv <= 'Z';
    const char *sign = negative ? "-" : sp.plus ? "+" : sp.space ? " " : "";
    if (e == 0x7FF) {
        sp.zero = 0;
        const char *txt = frac != 0u ? (upper ? "NAN" : "nan") : (upper ? "INF" : "inf");
        emit(s, &sp, sign, txt, 3, 0);
        return;
    }
    if (e == 0 && frac == 0u) {
        dec.n = 0;
        dec.exp10 = 1;
    } else {
        decimal_from_bits(&dec, e == 0 ? frac : frac | (1ull << 52), (e == 0 ? 1 : e) - 1075);
    }
    int prec = sp.prec < 0 ? 6 : sp.prec;
    char conv = (char)(upper ? sp.conv - 'A' + 'a' : sp.conv);
    int strip = 0;
    if (conv == 'g') {
        const int p = prec == 0 ? 1 : prec;
        struct decimal probe = dec;
        decimal_round(&probe, p);
        const int x = probe.n == 0 ? 0 : probe.exp10 - 1; /* the %e exponent after rounding */
        if (x >= -4 && x < p) {
            conv = 'f';
            prec = p - 1 - x;
        } else {
            conv = 'e';
            prec = p - 1;
        }
        strip = !sp.alt;
    }
    int n = 0;
    if (conv == 'e') {
        decimal_round(&dec, prec + 1);
        const int x = dec.n == 0 ? 0 : dec.exp10 - 1;
        buf[n++] = digit_at(&dec, 0);
        int frac_digits = prec;
        if (strip) {
            while (frac_digits > 0 && frac_digits >= dec.n) {
                frac_digits--;
            }
        }
        if (frac_digits > 0 || sp.alt) {
            buf[n++] = '.';
        }
        for (int i = 1; i <= frac_digits; i++) {
            buf[n++] = digit_at(&dec, i);
        }
        buf[n++] = upper ? 'E' : 'e';
        buf[n++] = x < 0 ? '-' : '+';
        const int ax = x < 0 ? -x : x;
        if (ax >= 100) {
            buf[n++] = (char)('0' + ax / 100);
        }
        buf[n++] = (char)('0' + ax / 10 % 10);
        buf[n++] = (char)('0' + ax % 10);
    } else { /* 'f' */
        if (prec > FBUF - 400) {
            prec = FBUF - 400;
        }
        decimal_round(&dec, dec.exp10 + prec);
        const int int_digits = dec.n == 0 || dec.exp10 <= 0 ? 1 : dec.exp10;
        for (int i = 0; i < int_digits; i++) {
            buf[n++] = dec.exp10 <= 0 ? '0' : digit_at(&dec, i);
        }
        int frac_digits = prec;
        if (strip) {
            while (frac_digits > 0 && dec.exp10 + frac_digits - 1 >= dec.n) {
                frac_digits--;
            }
        }
        if (frac_digits > 0 || sp.alt) {
            buf[n++] = '.';
        }
        for (int i = 0; i < frac_digits; i++) {
            buf[n++] = digit_at(&dec, dec.exp10 + i);
        }
    }
    emit(s, &sp, sign, buf, n, 0);
}

/* The arguments behind a va_list, read by the Xtensa ABI's rule (GCC's): a2..a7 saved in a
 * row from `reg` (the a2 slot), `ndx` the bytes used so far, 8-byte values at even offsets; an
 * argument that does not fit in a7 goes to the stack, at stk + 32 on.  clang-22's va_start
 * (every caller here is clang-22's) sets reg to the first *unnamed* argument's slot while ndx
 * already counts the named ones (docs/hardening.md), so the named bytes are taken off reg once,
 * on a fresh va_list.  Native tests read with the C library's va_arg. */
#if defined(__XTENSA__) && !defined(EMU_S3_LIBC_HOST_TEST)
struct xt_args {
    char *stk;
    char *reg;
    int ndx;
};

static struct xt_args xt_start(va_list ap)
{
    struct xt_args a;
    memcpy(&a, &ap, sizeof a);
    a.reg -= a.ndx; /* clang-22: reg points ndx bytes past the a2 slot */
    return a;
}

static const void *xt_next(struct xt_args *a, int bytes)
{
    int at = (a->ndx + bytes - 1) & ~(bytes - 1);
    if (at + bytes <= 24) {
        a->ndx = at + bytes;
        return a->reg + at;
    }
    if (at < 32) {
        at = 32;
    }
    a->ndx = at + bytes;
    return a->stk + at;
}

#define ARG_START(ap) struct xt_args args_ = xt_start(ap)
#define ARG(type) (*(type const *)xt_next(&args_, (int)sizeof(type)))
#define ARG_END()
#else
#define ARG_START(ap) va_list args_; va_copy(args_, ap)
#define ARG(type) va_arg(args_, type)
#define ARG_END() va_end(args_)
#endif

int EMU_LIBC(vsnprintf)(char *out, size_t size, const char *fmt, va_list ap)
{
    struct sink s = {out, size, 0};
    ARG_START(ap);
    for (const char *p = fmt; *p != '\0'; p++) {
        if (*p != '%') {
            put(&s, *p);
            continue;
        }
        struct spec sp = {0, 0, 0, 0, 0, 0, -1, 0};
        for (;; p++) {
            const char f = p[1];
            if (f == '-') {
                sp.left = 1;
            } else if (f == '+') {
                sp.plus = 1;
            } else if (f == ' ') {
                sp.space = 1;
            } else if (f == '#') {
                sp.alt = 1;
            } else if (f == '0') {
                sp.zero = 1;
            } else {
                break;
            }
        }
        p++;
        if (*p == '*') {
            sp.width = ARG(int);
            if (sp.width < 0) {
                sp.left = 1;
                sp.width = -sp.width;
            }
            p++;
        } else {
            for (; *p >= '0' && *p <= '9'; p++) {
                sp.width = sp.width * 10 + (*p - '0');
            }
        }
        if (*p == '.') {
            p++;
            sp.prec = 0;
            if (*p == '*') {
                sp.prec = ARG(int);
                p++;
            } else {
                for (; *p >= '0' && *p <= '9'; p++) {
                    sp.prec = sp.prec * 10 + (*p - '0');
                }
            }
        }
        if (sp.left) {
            sp.zero = 0;
        }
        int len = 0; /* 'H' hh, 'h', 'l', 'L' ll, 'z' size_t, 'j' intmax_t, 't' ptrdiff_t */
        if (*p == 'h') {
            len = p[1] == 'h' ? 'H' : 'h';
            p += p[1] == 'h' ? 2 : 1;
        } else if (*p == 'l') {
            len = p[1] == 'l' ? 'L' : 'l';
            p += p[1] == 'l' ? 2 : 1;
        } else if (*p == 'z' || *p == 'j' || *p == 't') {
            len = *p++;
        }
        sp.conv = *p;
        switch (*p) {
        case 'd':
        case 'i': {
            int64_t v = len == 'L' || len == 'j' ? ARG(long long)
                        : len == 'l'              ? ARG(long)
                        : len == 'z' || len == 't' ? (int64_t)ARG(ptrdiff_t)
                                                   : ARG(int);
            if (len == 'H') {
                v = (signed char)v;
            } else if (len == 'h') {
                v = (short)v;
            }
            format_int(&s, sp, v < 0 ? 0u - (uint64_t)v : (uint64_t)v, v < 0);
            break;
        }
        case 'u':
        case 'o':
        case 'x':
        case 'X': {
            uint64_t v = len == 'L' || len == 'j' ? ARG(unsigned long long)
                         : len == 'l'              ? ARG(unsigned long)
                         : len == 'z' || len == 't' ? (uint64_t)ARG(size_t)
                                                    : ARG(unsigned);
            if (len == 'H') {
                v = (unsigned char)v;
            } else if (len == 'h') {
                v = (unsigned short)v;
            }
            sp.plus = sp.space = 0;
            format_int(&s, sp, v, 0);
            break;
        }
        case 'p':
            sp.plus = sp.space = 0;
            format_int(&s, sp, (uintptr_t)ARG(void *), 0);
            break;
        case 'c': {
            const char c = (char)ARG(int);
            sp.zero = 0;
            emit(&s, &sp, "", &c, 1, 0);
            break;
        }
        case 's': {
            const char *str = ARG(const char *);
            if (str == NULL) {
                str = "(null)";
            }
            int n = 0;
            while (str[n] != '\0' && (sp.prec < 0 || n < sp.prec)) {
                n++;
            }
            sp.zero = 0;
            emit(&s, &sp, "", str, n, 0);
            break;
        }
        case 'e':
        case 'E':
        case 'f':
        case 'F':
        case 'g':
        case 'G': {
            const double v = ARG(double);
            uint64_t bits;
            memcpy(&bits, &v, sizeof bits);
            format_float(&s, sp, bits);
            break;
        }
        case '%':
            put(&s, '%');
            break;
        default: /* unknown: shown as written */
            put(&s, '%');
            if (*p == '\0') {
                p--;
            } else {
                put(&s, *p);
            }
            break;
        }
    }
    ARG_END();
    if (size > 0u) {
        out[s.n < size ? s.n : size - 1u] = '\0';
    }
    return (int)s.n;
}

int EMU_LIBC(snprintf)(char *out, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const int n = EMU_LIBC(vsnprintf)(out, size, fmt, ap);
    va_end(ap);
    return n;
}

#ifndef EMU_S3_LIBC_HOST_TEST

/* ---------------------------------------------------------------------------------- stdio */

static int console_put(char c, FILE *f)
{
    (void)f;
    emu_write(&c, 1);
    return (unsigned char)c;
}

static FILE console = FDEV_SETUP_STREAM(console_put, NULL, NULL, _FDEV_SETUP_WRITE);
FILE *const stdin = &console;
FILE *const stdout = &console;
FILE *const stderr = &console;

int vfprintf(FILE *restrict f, const char *restrict fmt, va_list ap)
{
    (void)f; /* every stream is UART0 */
    char line[256];
    va_list copy;
    va_copy(copy, ap);
    const int n = vsnprintf(line, sizeof line, fmt, ap);
    if (n >= 0 && (size_t)n < sizeof line) {
        emu_write(line, (size_t)n);
    } else if (n > 0) { /* longer than the line buffer: format it again on the heap */
        char *big = malloc((size_t)n + 1u);
        if (big != NULL) {
            vsnprintf(big, (size_t)n + 1u, fmt, copy);
            emu_write(big, (size_t)n);
            free(big);
        } else {
            emu_write(line, sizeof line - 1u);
        }
    }
    va_end(copy);
    return n;
}

int fprintf(FILE *restrict f, const char *restrict fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const int n = vfprintf(f, fmt, ap);
    va_end(ap);
    return n;
}

int printf(const char *restrict fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const int n = vfprintf(stdout, fmt, ap);
    va_end(ap);
    return n;
}

int vprintf(const char *restrict fmt, va_list ap)
{
    return vfprintf(stdout, fmt, ap);
}

int puts(const char *str)
{
    emu_puts(str);
    emu_write("\n", 1);
    return 0;
}

int fputs(const char *restrict str, FILE *restrict f)
{
    (void)f;
    emu_puts(str);
    return 0;
}

int fputc(int c, FILE *f)
{
    (void)f;
    const char ch = (char)c;
    emu_write(&ch, 1);
    return (unsigned char)ch;
}

int(putchar)(int c) /* picolibc's putchar is also a macro over fputc */
{
    return fputc(c, stdout);
}

int fflush(FILE *f)
{
    (void)f; /* emu_write waits for room in the UART FIFO: nothing is buffered here */
    return 0;
}

/* ----------------------------------------------------------------------------------- heap */

/* Blocks of 16-byte granules; a header before each block holds its size in bytes (header
 * included) and whether it is free.  The free list is the blocks themselves, in address order,
 * walked first-fit; free() merges a block with a free successor and a free predecessor. */
typedef struct block {
    size_t size;
    size_t used;
    struct block *prev; /* the block before it in memory, NULL for the first */
    size_t pad;         /* keeps the payload 16-byte aligned */
} block_t;

#define GRANULE 16u

extern char __emu_heap_start[], __emu_heap_end[]; /* link.ld */
static block_t *heap_first;

static block_t *next_block(block_t *b)
{
    char *n = (char *)b + b->size;
    return n < __emu_heap_end ? (block_t *)(void *)n : NULL;
}

static void heap_init(void)
{
    heap_first = (block_t *)(void *)__emu_heap_start;
    heap_first->size = (size_t)(__emu_heap_end - __emu_heap_start) & ~(size_t)(GRANULE - 1u);
    heap_first->used = 0;
    heap_first->prev = NULL;
}

void *malloc(size_t n)
{
    if (heap_first == NULL) {
        heap_init();
    }
    if (n > (size_t)(__emu_heap_end - __emu_heap_start)) {
        return NULL;
    }
    const size_t need = (n + sizeof(block_t) + GRANULE - 1u) & ~(size_t)(GRANULE - 1u);
    for (block_t *b = heap_first; b != NULL; b = next_block(b)) {
        if (b->used || b->size < need) {
            continue;
        }
        if (b->size - need >= sizeof(block_t) + GRANULE) { /* split off the rest */
            block_t *rest = (block_t *)(void *)((char *)b + need);
            rest->size = b->size - need;
            rest->used = 0;
            rest->prev = b;
            block_t *after = next_block(rest);
            if (after != NULL) {
                after->prev = rest;
            }
            b->size = need;
        }
        b->used = 1;
        return b + 1;
    }
    return NULL;
}

static void heap_free(block_t *b)
{
    b->used = 0;
    block_t *n = next_block(b);
    if (n != NULL && !n->used) {
        b->size += n->size;
        block_t *after = next_block(b);
        if (after != NULL) {
            after->prev = b;
        }
    }
    if (b->prev != NULL && !b->prev->used) {
        block_t *prev = b->prev;
        prev->size += b->size;
        block_t *after = next_block(prev);
        if (after != NULL) {
            after->prev = prev;
        }
    }
}

void *calloc(size_t count, size_t n)
{
    if (n != 0u && count > SIZE_MAX / n) {
        return NULL;
    }
    void *p = malloc(count * n);
    if (p != NULL) {
        memset(p, 0, count * n);
    }
    return p;
}

/* An aligned block is carved out of a larger one: its header copy before the aligned address
 * points back at the real block, so free() finds it (marked by used == 2). */
void *aligned_alloc(size_t alignment, size_t n)
{
    if (alignment <= GRANULE) {
        return malloc(n);
    }
    if ((alignment & (alignment - 1u)) != 0u || n > SIZE_MAX - alignment - sizeof(block_t)) {
        return NULL;
    }
    char *raw = malloc(n + alignment + sizeof(block_t));
    if (raw == NULL) {
        return NULL;
    }
    uintptr_t a = ((uintptr_t)raw + sizeof(block_t) + alignment - 1u) & ~(uintptr_t)(alignment - 1u);
    block_t *shadow = (block_t *)a - 1;
    shadow->size = 0;
    shadow->used = 2;
    shadow->prev = (block_t *)(void *)raw - 1;
    return (void *)a;
}

void free(void *p)
{
    if (p == NULL) {
        return;
    }
    block_t *b = (block_t *)p - 1;
    heap_free(b->used == 2u ? b->prev : b); /* an aligned_alloc block: through its shadow */
}

/* --------------------------------------------------------------------- strings and others */

int strcmp(const char *a, const char *b)
{
    while (*a != '\0' && *a == *b) {
        a++;
        b++;
    }
    return (unsigned char)*a - (unsigned char)*b;
}

int strncmp(const char *a, const char *b, size_t n)
{
    for (; n > 0u; n--, a++, b++) {
        if (*a != *b || *a == '\0') {
            return (unsigned char)*a - (unsigned char)*b;
        }
    }
    return 0;
}

char *strcpy(char *restrict dst, const char *restrict src)
{
    char *d = dst;
    while ((*d++ = *src++) != '\0') {
    }
    return dst;
}

char *strncpy(char *restrict dst, const char *restrict src, size_t n)
{
    size_t i = 0;
    for (; i < n && src[i] != '\0'; i++) {
        dst[i] = src[i];
    }
    for (; i < n; i++) {
        dst[i] = '\0';
    }
    return dst;
}

char *strchr(const char *str, int c)
{
    for (;; str++) {
        if (*str == (char)c) {
            return (char *)(uintptr_t)str;
        }
        if (*str == '\0') {
            return NULL;
        }
    }
}

char *strrchr(const char *str, int c)
{
    const char *last = NULL;
    for (;; str++) {
        if (*str == (char)c) {
            last = str;
        }
        if (*str == '\0') {
            return (char *)(uintptr_t)last;
        }
    }
}

void __assert_func(const char *file, int line, const char *func, const char *expr)
{
    printf("\nassertion \"%s\" failed: file \"%s\", line %d, function %s\n", expr, file, line,
           func != NULL ? func : "?");
    abort();
}

uint64_t espnn_baremetal_ticks(void); /* board */

clock_t clock(void)
{
    return (clock_t)espnn_baremetal_ticks();
}

#endif /* EMU_S3_LIBC_HOST_TEST */
