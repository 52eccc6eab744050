/*
 * Golden run on an emulated 32-bit target: every compiled-in case goes through the engine in
 * three placements and must reproduce the reference outputs bit for bit.
 *
 *   in place   the payload used where it lies (16-aligned rodata, as a .pte in flash),
 *              invoked twice with the arena re-poisoned in between;
 *   consts     constants copied to their own aligned buffer and the payload copy scrubbed
 *              after init (the engine must not read it again);
 *   odd        the payload copied to an odd address: parsing must work byte-wise; used in
 *              place it is refused with ESPNN_ERR_ALIGNMENT exactly when it has int32/float32
 *              constants, and with an aligned constants copy it runs.
 *
 * The last line is the verdict the test harness looks for; the exit status is 0 only when
 * every case passed.
 *
 * Target options: EMU_INSN_COUNT (the target has emu_insn_count(), e.g. the emulated ESP32-S3)
 * adds the guest instructions of the first in-place invoke to each case's line;
 * GOLDEN_IN_PLACE_ONLY runs only the in-place placement (for payloads too large to copy into
 * the target's RAM, such as whole models on the ESP32-S3's SRAM).
 */
#ifdef EMU_HOSTED
#define _POSIX_C_SOURCE 200112L /* posix_memalign */
#include <stdlib.h>
#endif
#include <stdint.h>
#include <string.h>

#include "emu.h"
#include "espnn_engine.h"
#include "golden.h"

#define POISON_ARENA 0xA5u
#define POISON_OUTPUT 0x5Au
#define POISON_PAYLOAD 0xEEu

#ifdef EMU_HOSTED
/* Hosted sanitizer builds: every allocation is its own exact-size block, so ASan sees a
 * read or write one byte past any buffer the engine is given. */
#define MAX_BLOCKS 64
static void *blocks[MAX_BLOCKS];
static uint32_t pool_used; /* live blocks */

static void *pool_alloc(uint32_t n, uint32_t misalign)
{
    void *b = NULL;
    const size_t size = (size_t)n + misalign;
    if (pool_used == MAX_BLOCKS || posix_memalign(&b, 16, size == 0 ? 1u : size) != 0) {
        return NULL;
    }
    blocks[pool_used++] = b;
    return (uint8_t *)b + misalign; /* the block ends right after the buffer */
}

static void pool_release(uint32_t mark)
{
    while (pool_used > mark) {
        free(blocks[--pool_used]);
    }
}
#else
/* Bare metal: one bump allocator over the generated pool, reset per case. */
static uint32_t pool_used;

static void *pool_alloc(uint32_t n, uint32_t misalign)
{
    uint32_t at = (pool_used + 15u) & ~15u;
    uint32_t need = n + misalign + 16u;
    if (at > golden_pool_bytes || need > golden_pool_bytes - at) {
        return NULL;
    }
    pool_used = at + need;
    return golden_pool + at + misalign;
}

static void pool_release(uint32_t mark)
{
    pool_used = mark;
}
#endif

static void pool_exhausted(void)
{
    emu_puts("golden: pool exhausted (golden_pool_bytes ");
    emu_put_u32(golden_pool_bytes);
    emu_puts(")\n");
}

typedef struct tally {
    uint32_t runs;
    uint32_t bytes;
    uint32_t insns; /* the first in-place invoke's (EMU_INSN_COUNT) */
} tally_t;

static void report_error(const char *name, const char *mode, const char *what,
                         const espnn_error_t *err)
{
    char text[160];
    espnn_format_error(err, text, sizeof text);
    emu_puts("case ");
    emu_puts(name);
    emu_puts(": ");
    emu_puts(mode);
    emu_puts(": ");
    emu_puts(what);
    emu_puts(" failed: ");
    emu_puts(text);
    emu_puts("\n");
}

static void report_mismatch(const char *name, const char *mode, uint32_t output, uint32_t at,
                            uint32_t got, uint32_t want)
{
    emu_puts("case ");
    emu_puts(name);
    emu_puts(": ");
    emu_puts(mode);
    emu_puts(": MISMATCH output ");
    emu_put_u32(output);
    emu_puts(" byte ");
    emu_put_u32(at);
    emu_puts(" got ");
    emu_put_u32(got);
    emu_puts(" want ");
    emu_put_u32(want);
    emu_puts("\n");
}

/* Where io `k` lives: its arena home (format 2.4; bound by espnn_init, so nothing to bind and
 * no pool bytes: the engine reads the input and writes the output there, as EspnnModel runs
 * it), else a pool buffer bound with espnn_set_io.  NULL: the pool is exhausted or the bind
 * failed (reported). */
static uint8_t *io_buffer(const golden_case_t *c, espnn_model_t *m, uint8_t *arena, int is_output,
                          uint32_t k, uint32_t len, int *homed)
{
    espnn_io_info_t io;
    *homed = espnn_io_info(m, is_output, k, &io) == ESPNN_OK && io.arena_home != ESPNN_NO_HOME;
    if (*homed) {
        return arena + io.arena_home;
    }
    uint8_t *buf = pool_alloc(len, 0);
    if (buf == NULL) {
        pool_exhausted();
        return NULL;
    }
    if (espnn_set_io(m, is_output, k, buf, len) != ESPNN_OK) {
        emu_puts("case ");
        emu_puts(c->name);
        emu_puts(is_output ? ": set_io output failed\n" : ": set_io input failed\n");
        return NULL;
    }
    return buf;
}

/* Bind io, invoke `repeat` times (re-poisoning the arena and writing the inputs each time: a
 * homed input's bytes hold activations once consumed), compare every output. */
static int invoke_and_compare(const golden_case_t *c, const char *mode, espnn_model_t *m,
                              uint8_t *arena, uint32_t arena_bytes, int repeat, tally_t *t,
                              uint32_t *insns)
{
    uint8_t *ins[ESPNN_MAX_IO];
    uint8_t *outs[ESPNN_MAX_IO];
    int homed_in[ESPNN_MAX_IO];
    int homed_out;
    for (uint32_t k = 0; k < c->n_inputs; k++) {
        if ((ins[k] = io_buffer(c, m, arena, 0, k, c->input_lens[k], &homed_in[k])) == NULL) {
            return 1;
        }
        /* a bound buffer is written once: a second run that differs caught an engine writing
         * into its input */
        memcpy(ins[k], c->inputs[k], c->input_lens[k]);
    }
    for (uint32_t k = 0; k < c->n_outputs; k++) {
        if ((outs[k] = io_buffer(c, m, arena, 1, k, c->expected_lens[k], &homed_out)) == NULL) {
            return 1;
        }
    }
    for (int r = 0; r < repeat; r++) {
        espnn_error_t err;
        memset(arena, POISON_ARENA, arena_bytes);
        for (uint32_t k = 0; k < c->n_outputs; k++) {
            memset(outs[k], POISON_OUTPUT, c->expected_lens[k]);
        }
        for (uint32_t k = 0; k < c->n_inputs; k++) { /* a home is in the poisoned arena */
            if (homed_in[k]) {
                memcpy(ins[k], c->inputs[k], c->input_lens[k]);
            }
        }
#ifdef EMU_INSN_COUNT
        const uint32_t before = emu_insn_count();
#else
        (void)insns;
#endif
        const espnn_status_t st = espnn_invoke(m, &err);
#ifdef EMU_INSN_COUNT
        if (insns != NULL && r == 0) {
            *insns = emu_insn_count() - before;
        }
#endif
        if (st != ESPNN_OK) {
            report_error(c->name, mode, "invoke", &err);
            return 1;
        }
        for (uint32_t k = 0; k < c->n_outputs; k++) {
            for (uint32_t i = 0; i < c->expected_lens[k]; i++) {
                if (outs[k][i] != c->expected[k][i]) {
                    report_mismatch(c->name, mode, k, i, outs[k][i], c->expected[k][i]);
                    return 1;
                }
            }
            t->bytes += c->expected_lens[k];
        }
        t->runs++;
    }
    return 0;
}

/* Inspect, allocate and init `payload`; returns the init status (err filled). */
static espnn_status_t setup(const uint8_t *payload, uint32_t len, int copy_consts,
                            espnn_model_t *m, uint8_t **arena, espnn_info_t *info,
                            espnn_error_t *err)
{
    espnn_status_t st = espnn_inspect(payload, len, info, err);
    if (st != ESPNN_OK) {
        return st;
    }
    void *state = pool_alloc(info->state_bytes, 0);
    *arena = pool_alloc(info->arena_bytes, 0);
    void *consts = NULL;
    if (copy_consts) {
        consts = pool_alloc(info->const_bytes, 0);
        if (consts != NULL) {
            memcpy(consts, payload + info->const_offset, info->const_bytes);
        }
    }
    if (state == NULL || *arena == NULL || (copy_consts && consts == NULL)) {
        pool_exhausted();
        return ESPNN_ERR_MEMORY;
    }
    return espnn_init(m, payload, len, consts, state, info->state_bytes, *arena,
                      info->arena_bytes, err);
}

static int run_case(const golden_case_t *c, tally_t *t)
{
    espnn_model_t m;
    espnn_info_t info;
    espnn_error_t err;
    uint8_t *arena;
    espnn_status_t st;

    /* 1. in place */
    pool_release(0);
    st = setup(c->payload, c->payload_len, 0, &m, &arena, &info, &err);
    if (st != ESPNN_OK) {
        report_error(c->name, "in place", "init", &err);
        return 1;
    }
    if (invoke_and_compare(c, "in place", &m, arena, info.arena_bytes, 2, t, &t->insns) != 0) {
        return 1;
    }
#ifdef GOLDEN_IN_PLACE_ONLY
    pool_release(0);
    return 0;
#endif

    /* 2. constants copied, payload scrubbed after init */
    pool_release(0);
    uint8_t *copy = pool_alloc(c->payload_len, 0);
    if (copy == NULL) {
        pool_exhausted();
        return 1;
    }
    memcpy(copy, c->payload, c->payload_len);
    st = setup(copy, c->payload_len, 1, &m, &arena, &info, &err);
    if (st != ESPNN_OK) {
        report_error(c->name, "consts", "init", &err);
        return 1;
    }
    memset(copy, POISON_PAYLOAD, c->payload_len);
    if (invoke_and_compare(c, "consts", &m, arena, info.arena_bytes, 1, t, NULL) != 0) {
        return 1;
    }

    /* 3. odd address */
    pool_release(0);
    uint8_t *odd = pool_alloc(c->payload_len, 1);
    if (odd == NULL) {
        pool_exhausted();
        return 1;
    }
    memcpy(odd, c->payload, c->payload_len);
    const uint32_t mark = pool_used;
    st = setup(odd, c->payload_len, 0, &m, &arena, &info, &err);
    if (c->multibyte_consts) {
        pool_release(mark); /* the refused init's state and arena are not needed */
        if (st != ESPNN_ERR_ALIGNMENT) {
            emu_puts("case ");
            emu_puts(c->name);
            emu_puts(": odd: in-place init at an odd address returned ");
            emu_puts(espnn_status_name(st));
            emu_puts(", want ESPNN_ERR_ALIGNMENT\n");
            return 1;
        }
        st = setup(odd, c->payload_len, 1, &m, &arena, &info, &err);
    }
    if (st != ESPNN_OK) {
        report_error(c->name, "odd", "init", &err);
        return 1;
    }
    const int rc = invoke_and_compare(c, "odd", &m, arena, info.arena_bytes, 1, t, NULL);
    pool_release(0);
    return rc;
}

int main(void)
{
    tally_t t = {0, 0, 0};
    uint32_t failures = 0;
    emu_puts("golden: ");
    emu_put_u32(golden_case_count);
    emu_puts(" cases on ");
    emu_puts(emu_target_name);
    emu_puts("\n");
    for (uint32_t i = 0; i < golden_case_count; i++) {
        const tally_t before = t;
        if (run_case(&golden_cases[i], &t) != 0) {
            emu_puts("case ");
            emu_puts(golden_cases[i].name);
            emu_puts(": FAILED\n");
            failures++;
            continue;
        }
        emu_puts("case ");
        emu_puts(golden_cases[i].name);
        emu_puts(": ok (");
        emu_put_u32(t.runs - before.runs);
        emu_puts(" runs, ");
        emu_put_u32(t.bytes - before.bytes);
#ifdef EMU_INSN_COUNT
        emu_puts(" bytes, ");
        emu_put_u32(t.insns);
        emu_puts(" insns/invoke)\n");
#else
        emu_puts(" bytes)\n");
#endif
    }
    emu_puts(failures == 0 ? "EMU VERDICT PASS" : "EMU VERDICT FAIL");
    emu_puts(" target=");
    emu_puts(emu_target_name);
    emu_puts(" cases=");
    emu_put_u32(golden_case_count);
    emu_puts(" failed=");
    emu_put_u32(failures);
    emu_puts(" runs=");
    emu_put_u32(t.runs);
    emu_puts(" compared_bytes=");
    emu_put_u32(t.bytes);
    emu_puts("\n");
    pool_release(0);
    return failures == 0 ? 0 : 1;
}
