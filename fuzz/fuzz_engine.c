/*
 * libFuzzer target over the engine's whole path: espnn_inspect -> espnn_init -> espnn_set_io
 * -> espnn_invoke, on hostile payloads.  Built with clang -fsanitize=fuzzer,address,undefined;
 * fuzz/replay_main.c drives the same function over a corpus without libFuzzer (the gcc -m32
 * ASan/UBSan build: 32-bit size_t).
 *
 * Each input is exercised as given and, when it has a header, with total_size and const_size
 * patched to its length, so mutations that insert or delete bytes still reach the tables and
 * ops instead of stopping at "total_size".  Alternate inputs also run with an aligned copy of
 * the constants (the payload copy is scrubbed after init: the engine must not read it again)
 * and at an odd address (UBSan's alignment check then catches any typed load from the payload).
 *
 * Oracles besides the sanitizers: a rejected payload has a status, a field name and an error
 * text that are printable ASCII; buffers one byte smaller than espnn_inspect() asked for are
 * refused with ESPNN_ERR_MEMORY; invoking before the io is bound, or binding a wrong size, is
 * refused; after a successful init, invoke succeeds.  A broken oracle aborts (a finding).
 *
 * Memory is bounded: state and arena above FUZZ_MAX_* are not allocated (the payload is still
 * fully validated), and invoke is skipped when a rough work estimate exceeds FUZZ_MAX_WORK, so
 * every execution stays fast; neither bound hides a memory error, since smaller payloads
 * reach the same code.
 */
#define _POSIX_C_SOURCE 200112L /* posix_memalign */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "espnn_engine.h"
#include "espnn_internal.h" /* white box: the work estimate reads the decoded state */
#include "espnn_parse.h"

#define FUZZ_MAX_STATE (1u << 20)
#define FUZZ_MAX_ARENA (1u << 20)
#define FUZZ_MAX_WORK (1ull << 26)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* How deep the inputs got, printed at exit: evidence that invoke is really reached. */
static struct {
    unsigned long long inputs, exercised, valid, bound, invoked, too_big, misaligned;
} stats;

static void print_stats(void)
{
    fprintf(stderr,
            "fuzz_engine: %llu inputs, %llu exercises: %llu valid payloads, %llu bound, "
            "%llu invoked, %llu too big to bind or run, %llu refused as misaligned\n",
            stats.inputs, stats.exercised, stats.valid, stats.bound, stats.invoked,
            stats.too_big, stats.misaligned);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    atexit(print_stats);
    return 0;
}

static void fuzz_fail(const char *what, long long a, long long b)
{
    fprintf(stderr, "fuzz_engine: oracle broken: %s (%lld, %lld)\n", what, a, b);
    abort();
}

/* ---- allocation with exact bounds (ASan redzones right after the last byte) --------------- */

static void *exact_alloc(size_t n, size_t misalign, void **block)
{
    *block = NULL;
    if (posix_memalign(block, 16, n + misalign + (n + misalign == 0 ? 1u : 0u)) != 0) {
        fuzz_fail("posix_memalign", (long long)n, 0);
    }
    return (uint8_t *)*block + misalign;
}

/* ---- deterministic input data -------------------------------------------------------------- */

static uint64_t mix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t hash_bytes(const uint8_t *p, size_t n)
{
    uint64_t h = 0xCBF29CE484222325ull;
    for (size_t i = 0; i < n; i++) {
        h = (h ^ p[i]) * 0x100000001B3ull;
    }
    return h;
}

/* int8 inputs: random bytes; float32 inputs: mostly moderate values, sometimes any bit
 * pattern (NaN, infinities, huge, subnormal): QUANTIZE must saturate without UB. */
static void fill_input(uint8_t *p, uint32_t nbytes, uint8_t dtype, uint64_t *rng)
{
    if (dtype != ESPNN_DTYPE_FLOAT32) {
        for (uint32_t i = 0; i < nbytes; i++) {
            p[i] = (uint8_t)mix64(rng);
        }
        return;
    }
    for (uint32_t i = 0; i + 4 <= nbytes; i += 4) {
        const uint64_t r = mix64(rng);
        uint32_t bits;
        if ((r & 7u) == 0) {
            bits = (uint32_t)(r >> 32);
        } else {
            const float f = (float)((int32_t)(r >> 40) % 2000) / 100.0f;
            memcpy(&bits, &f, sizeof bits);
        }
        memcpy(p + i, &bits, sizeof bits);
    }
}

/* ---- oracles ------------------------------------------------------------------------------ */

static void check_ascii(const char *s, const char *what)
{
    if (s == NULL) {
        fuzz_fail(what, 0, 0);
    }
    for (const char *c = s; *c != '\0'; c++) {
        if (*c < 0x20 || *c > 0x7E) {
            fuzz_fail(what, (long long)(c - s), (unsigned char)*c);
        }
    }
}

static void check_error(espnn_status_t st, const espnn_error_t *err)
{
    char text[256];
    if (st == ESPNN_OK || err->status != st) {
        fuzz_fail("error status", st, err->status);
    }
    if (st == ESPNN_ERR_INVALID && err->field == NULL) {
        fuzz_fail("ESPNN_ERR_INVALID without a field", st, 0);
    }
    if (err->field != NULL) {
        check_ascii(err->field, "error field");
    }
    const size_t n = espnn_format_error(err, text, sizeof text);
    if (n == 0 || strlen(text) != (n < sizeof text ? n : sizeof text - 1)) {
        fuzz_fail("espnn_format_error length", (long long)n, (long long)strlen(text));
    }
    check_ascii(text, "error text");
    check_ascii(espnn_status_name(st), "status name");
}

/* ---- work estimate from the decoded state (ops) and the payload (tensor dims) --------------- */

static uint64_t numel(const espnn_tview_t *t)
{
    return (uint64_t)t->dims[0] * t->dims[1] * t->dims[2] * t->dims[3];
}

/* The dims come from the payload: the state keeps no record for a constant numbered after the
 * last activation (docs/engine.md, "State layout"). */
static uint64_t work_estimate(const espnn_model_t *m, const uint8_t *payload, size_t len)
{
    espnn_hdr_t hdr;
    espnn_error_t err;
    if (espnn_parse_structure(payload, len, &hdr, &err) != ESPNN_OK) {
        fuzz_fail("parse failed after init passed", err.status, 0);
    }
    const uint8_t *base = (const uint8_t *)m->state;
    const struct espnn_state *s = m->state;
    const espnn_op_rt_t *ops = (const espnn_op_rt_t *)(const void *)(base + s->ops_at);
    uint64_t total = 0;
    for (uint32_t i = 0; i < s->n_ops; i++) {
        const espnn_op_rt_t *op = &ops[i];
        const uint16_t *ids = (const uint16_t *)(const void *)(base + op->data_at);
        espnn_tview_t out_t, in0_t, in1_t;
        espnn_tensor_decode(payload, &hdr, op->output, &out_t);
        espnn_tensor_decode(payload, &hdr, ids[0], &in0_t);
        if (op->n_inputs > 1 && ids[1] != ESPNN_NO_TENSOR) {
            espnn_tensor_decode(payload, &hdr, ids[1], &in1_t);
        } else {
            in1_t = in0_t;
        }
        const espnn_tview_t *out = &out_t, *in0 = &in0_t, *in1 = &in1_t;
        uint64_t w;
        switch (op->opcode) {
        case ESPNN_OP_CONV2D:
            w = numel(out) * (numel(in1) / (in1->dims[0] ? in1->dims[0] : 1u));
            break;
        case ESPNN_OP_DEPTHWISE_CONV2D:
            w = numel(out) * (uint64_t)in1->dims[1] * in1->dims[2];
            break;
        case ESPNN_OP_FULLY_CONNECTED:
            w = numel(out) * (uint64_t)in1->dims[in1->rank > 0 ? in1->rank - 1 : 0];
            break;
        case ESPNN_OP_MAX_POOL2D:
        case ESPNN_OP_AVG_POOL2D:
            w = numel(out) * (uint64_t)in0->dims[1] * in0->dims[2];
            break;
        default: {
            w = numel(out);
            for (uint32_t k = 0; k < op->n_inputs; k++) {
                if (ids[k] != ESPNN_NO_TENSOR) {
                    espnn_tview_t t;
                    espnn_tensor_decode(payload, &hdr, ids[k], &t);
                    w += numel(&t);
                }
            }
            w *= 4u;
        }
        }
        total += w + 1u;
        if (total > FUZZ_MAX_WORK) {
            break;
        }
    }
    return total;
}

/* ---- one exercise of a payload buffer ------------------------------------------------------ */

enum { PLACE_AS_IS = 0, PLACE_COPY_CONSTS = 1 };

static void exercise(uint8_t *payload, size_t len, int placement, uint64_t seed)
{
    espnn_info_t info;
    espnn_error_t err;
    stats.exercised++;
    espnn_status_t st = espnn_inspect(payload, len, &info, &err);
    if (st != ESPNN_OK) {
        check_error(st, &err);
        return;
    }
    stats.valid++;
    if (info.state_bytes == 0 || info.n_inputs == 0 || info.n_outputs == 0 ||
        (uint64_t)info.const_offset + info.const_bytes != len) {
        fuzz_fail("espnn_info_t", info.state_bytes, info.const_offset);
    }
    if (info.state_bytes > FUZZ_MAX_STATE || info.arena_bytes > FUZZ_MAX_ARENA) {
        stats.too_big++;
        return; /* validated; too big to bind here */
    }
    void *blocks[4 + 2 * ESPNN_MAX_IO] = {0};
    uint8_t *state = exact_alloc(info.state_bytes, 0, &blocks[0]);
    uint8_t *arena = exact_alloc(info.arena_bytes, 0, &blocks[1]);
    uint8_t *consts = NULL;
    if (placement == PLACE_COPY_CONSTS) {
        consts = exact_alloc(info.const_bytes, 0, &blocks[2]);
        memcpy(consts, payload + info.const_offset, info.const_bytes);
    }
    espnn_model_t model;
    st = espnn_init(&model, payload, len, consts, state, info.state_bytes - 1u, arena,
                    info.arena_bytes, &err);
    if (st == ESPNN_ERR_ALIGNMENT && consts == NULL) {
        /* init checks the constants' real address before the buffer sizes (the ops' prepare
         * needs it), so a payload at an odd address fails that first: nothing more to bind */
        check_error(st, &err);
        stats.misaligned++;
        goto done;
    }
    if (st != ESPNN_ERR_MEMORY) {
        fuzz_fail("state one byte short accepted", st, info.state_bytes);
    }
    if (info.arena_bytes > 0) {
        st = espnn_init(&model, payload, len, consts, state, info.state_bytes, arena,
                        info.arena_bytes - 1u, &err);
        if (st != ESPNN_ERR_MEMORY) {
            fuzz_fail("arena one byte short accepted", st, info.arena_bytes);
        }
    }
    memset(arena, 0xA5, info.arena_bytes);
    st = espnn_init(&model, payload, len, consts, state, info.state_bytes, arena,
                    info.arena_bytes, &err);
    if (st != ESPNN_OK) {
        /* only the real address of multi-byte constants can fail after inspect passed */
        if (st != ESPNN_ERR_ALIGNMENT || consts != NULL) {
            fuzz_fail("init failed after inspect passed", st, err.tensor);
        }
        check_error(st, &err);
        stats.misaligned++;
        goto done;
    }
    stats.bound++;
    const bool too_big = work_estimate(&model, payload, len) > FUZZ_MAX_WORK;
    if (placement == PLACE_COPY_CONSTS) {
        memset(payload, 0xEE, len); /* the engine must not read the payload any more */
    }
    if (too_big) {
        stats.too_big++;
        goto done;
    }
    /* an io tensor without a home in the arena (payload 2.4) must be bound before invoke */
    bool unhomed = false;
    for (uint32_t k = 0; k < info.n_inputs + info.n_outputs; k++) {
        espnn_io_info_t io;
        const int dir = k < info.n_inputs ? 0 : 1;
        if (espnn_io_info(&model, dir, dir == 0 ? k : k - info.n_inputs, &io) == ESPNN_OK &&
            io.arena_home == ESPNN_NO_HOME) {
            unhomed = true;
        }
    }
    if (unhomed && espnn_invoke(&model, &err) != ESPNN_ERR_IO) {
        fuzz_fail("invoke without io", err.status, 0);
    }
    uint64_t rng = seed;
    for (uint32_t dir = 0; dir < 2; dir++) {
        const uint32_t n = dir == 0 ? info.n_inputs : info.n_outputs;
        for (uint32_t k = 0; k < n; k++) {
            espnn_io_info_t io;
            if (espnn_io_info(&model, (int)dir, k, &io) != ESPNN_OK) {
                fuzz_fail("io_info", dir, k);
            }
            uint8_t *buf = exact_alloc(io.nbytes, 0, &blocks[4 + dir * ESPNN_MAX_IO + k]);
            if (espnn_set_io(&model, (int)dir, k, buf, (size_t)io.nbytes + 1u) != ESPNN_ERR_IO) {
                fuzz_fail("set_io accepted a wrong size", dir, k);
            }
            if (dir == 0) {
                fill_input(buf, io.nbytes, io.dtype, &rng);
            } else {
                memset(buf, 0x5A, io.nbytes);
            }
            if (espnn_set_io(&model, (int)dir, k, buf, io.nbytes) != ESPNN_OK) {
                fuzz_fail("set_io", dir, k);
            }
            if (io.arena_home != ESPNN_NO_HOME) {
                /* a homed io tensor (payload 2.4) runs at its home in the arena, as EspnnModel
                 * binds it: the input's bytes are written there first */
                if (dir == 0) {
                    memcpy(model.arena + io.arena_home, buf, io.nbytes);
                }
                if (espnn_set_io(&model, (int)dir, k, NULL, io.nbytes) != ESPNN_OK) {
                    fuzz_fail("set_io at the home", dir, k);
                }
            }
        }
    }
    if (espnn_invoke(&model, &err) != ESPNN_OK) {
        fuzz_fail("invoke failed after a successful init", err.status, err.op);
    }
    stats.invoked++;
done:
    for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; i++) {
        free(blocks[i]);
    }
}

static void patch_u32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static uint32_t read_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint64_t seed = hash_bytes(data, size);
    void *block;
    stats.inputs++;

    /* as given */
    uint8_t *copy = exact_alloc(size, 0, &block);
    memcpy(copy, data, size);
    exercise(copy, size, PLACE_AS_IS, seed);
    free(block);
    if (size < ESPNN_HEADER_SIZE || size > 0x7FFFFFFFu) {
        return 0;
    }

    /* sizes patched to the real length */
    uint8_t *fixed = exact_alloc(size, 0, &block);
    memcpy(fixed, data, size);
    patch_u32(fixed + 12, (uint32_t)size);
    if (read_u32(fixed + 44) <= size) {
        patch_u32(fixed + 48, (uint32_t)size - read_u32(fixed + 44));
    }
    if (seed & 1u) {
        exercise(fixed, size, PLACE_COPY_CONSTS, seed);
        memcpy(fixed, data, size); /* undo the scrub for the next placement */
        patch_u32(fixed + 12, (uint32_t)size);
        if (read_u32(fixed + 44) <= size) {
            patch_u32(fixed + 48, (uint32_t)size - read_u32(fixed + 44));
        }
    } else {
        exercise(fixed, size, PLACE_AS_IS, seed);
    }

    /* at an odd address */
    if (seed & 2u) {
        void *oblock;
        uint8_t *odd = exact_alloc(size, 1, &oblock);
        memcpy(odd, fixed, size);
        exercise(odd, size, PLACE_AS_IS, seed);
        free(oblock);
    }
    free(block);
    return 0;
}
