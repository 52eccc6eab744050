/*
 * espnn_run: run a delegate payload on the host engine (a test and debugging tool).
 *
 *   espnn_run [-o PREFIX] [--copy-consts] [--misalign N] [--repeat N] [--zero-inputs] [--homes]
 *             PAYLOAD [INPUT.bin ...]
 *       reads each input as raw bytes (io order; --zero-inputs: all zero bytes instead),
 *       invokes, writes output k to PREFIX<k>.bin
 *   espnn_run --inspect PAYLOAD        validates; prints espnn_info_t as key=value lines
 *   espnn_run --check FILE...          validates each file; one line per file:
 *                                      "<file>\tESPNN_OK" or
 *                                      "<file>\t<status>\t<field>\t<op>\t<tensor>"
 *
 * Exit status: 0 success, 1 usage or file error, 2 payload rejected by espnn_inspect or
 * espnn_init (the formatted error is printed), 3 input size mismatch or invoke failure.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "espnn_engine.h"

static void usage(void)
{
    fprintf(stderr,
            "usage: espnn_run [-o PREFIX] [--copy-consts] [--misalign N] [--repeat N] "
            "[--zero-inputs] [--homes] PAYLOAD [INPUT.bin ...]\n"
            "       espnn_run --inspect PAYLOAD\n"
            "       espnn_run --check FILE...\n");
}

/* whole file into a 16-byte aligned buffer at `misalign` bytes past a 16-byte boundary */
static uint8_t *read_file(const char *path, size_t *len, size_t misalign, void **block)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "espnn_run: cannot open %s\n", path);
        return NULL;
    }
    if (fseek(f, 0, SEEK_END) != 0) {
        fclose(f);
        return NULL;
    }
    long n = ftell(f);
    if (n < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return NULL;
    }
    size_t size = (size_t)n;
    /* round up: aligned_alloc wants a multiple of the alignment */
    *block = aligned_alloc(16, ((size + misalign + 16) / 16) * 16);
    if (*block == NULL) {
        fclose(f);
        return NULL;
    }
    uint8_t *buf = (uint8_t *)*block + misalign;
    if (size > 0 && fread(buf, 1, size, f) != size) {
        fprintf(stderr, "espnn_run: cannot read %s\n", path);
        fclose(f);
        free(*block);
        return NULL;
    }
    fclose(f);
    *len = size;
    return buf;
}

static void print_error(const char *what, const espnn_error_t *err)
{
    char text[256];
    espnn_format_error(err, text, sizeof text);
    fprintf(stderr, "espnn_run: %s: %s\n", what, text);
    printf("error\t%s\t%s\t%d\t%d\t%d\t%lld\t%lld\n", espnn_status_name(err->status),
           err->field ? err->field : "-", (int)err->op, (int)err->opcode, (int)err->tensor,
           (long long)err->value, (long long)err->limit);
}

static int check_files(int argc, char **argv)
{
    for (int i = 0; i < argc; i++) {
        void *block = NULL;
        size_t len = 0;
        uint8_t *buf = read_file(argv[i], &len, 0, &block);
        if (buf == NULL) {
            return 1;
        }
        espnn_info_t info;
        espnn_error_t err;
        espnn_status_t st = espnn_inspect(buf, len, &info, &err);
        if (st == ESPNN_OK) {
            printf("%s\tESPNN_OK\n", argv[i]);
        } else {
            printf("%s\t%s\t%s\t%d\t%d\n", argv[i], espnn_status_name(st),
                   err.field ? err.field : "-", (int)err.op, (int)err.tensor);
        }
        free(block);
    }
    return 0;
}

static int inspect(const char *path)
{
    void *block = NULL;
    size_t len = 0;
    uint8_t *buf = read_file(path, &len, 0, &block);
    if (buf == NULL) {
        return 1;
    }
    espnn_info_t info;
    espnn_error_t err;
    if (espnn_inspect(buf, len, &info, &err) != ESPNN_OK) {
        print_error("inspect", &err);
        free(block);
        return 2;
    }
    printf("format=%u.%u\nproducer=%u.%u.%u\ntarget=%u\nn_tensors=%" PRIu32 "\nn_ops=%" PRIu32
           "\nn_inputs=%" PRIu32 "\nn_outputs=%" PRIu32 "\narena_bytes=%" PRIu32
           "\nstate_bytes=%" PRIu32 "\nconst_offset=%" PRIu32 "\nconst_bytes=%" PRIu32 "\n",
           info.format_major, info.format_minor, info.producer_major, info.producer_minor,
           info.producer_patch, info.target, info.n_tensors, info.n_ops, info.n_inputs,
           info.n_outputs, info.arena_bytes, info.state_bytes, info.const_offset,
           info.const_bytes);
    free(block);
    return 0;
}

int main(int argc, char **argv)
{
    const char *prefix = "out";
    int copy_consts = 0, repeat = 1, zero_inputs = 0, homes = 0;
    const uint8_t *in_data[ESPNN_MAX_IO] = {0};
    size_t misalign = 0;
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--inspect") == 0 && i + 1 < argc) {
            return inspect(argv[i + 1]);
        } else if (strcmp(argv[i], "--check") == 0) {
            return check_files(argc - i - 1, argv + i + 1);
        } else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) {
            prefix = argv[++i];
        } else if (strcmp(argv[i], "--homes") == 0) {
            homes = 1; /* io with an arena home (payload 2.4) stay bound there: the caller writes
                        * inputs into the arena before each invoke and reads outputs from it */
        } else if (strcmp(argv[i], "--zero-inputs") == 0) {
            zero_inputs = 1;
        } else if (strcmp(argv[i], "--copy-consts") == 0) {
            copy_consts = 1;
        } else if (strcmp(argv[i], "--misalign") == 0 && i + 1 < argc) {
            misalign = (size_t)strtoul(argv[++i], NULL, 10) % 16u;
        } else if (strcmp(argv[i], "--repeat") == 0 && i + 1 < argc) {
            repeat = atoi(argv[++i]);
        } else {
            usage();
            return 1;
        }
    }
    if (i >= argc) {
        usage();
        return 1;
    }
    void *pblock = NULL, *state = NULL, *arena = NULL, *consts = NULL;
    void *blocks[2 * ESPNN_MAX_IO] = {0};
    int rc = 0;
    size_t len = 0;
    uint8_t *payload = read_file(argv[i++], &len, misalign, &pblock);
    if (payload == NULL) {
        return 1;
    }
    espnn_info_t info;
    espnn_error_t err;
    espnn_model_t model;
    if (espnn_inspect(payload, len, &info, &err) != ESPNN_OK) {
        print_error("inspect", &err);
        rc = 2;
        goto done;
    }
    state = aligned_alloc(16, ((size_t)info.state_bytes + 15) / 16 * 16);
    arena = aligned_alloc(16, ((size_t)info.arena_bytes + 16) / 16 * 16);
    if (copy_consts) {
        consts = aligned_alloc(16, ((size_t)info.const_bytes + 16) / 16 * 16);
        if (consts != NULL) {
            memcpy(consts, payload + info.const_offset, info.const_bytes);
        }
    }
    if (state == NULL || arena == NULL || (copy_consts && consts == NULL)) {
        fprintf(stderr, "espnn_run: out of memory (state %" PRIu32 ", arena %" PRIu32 " bytes)\n",
                info.state_bytes, info.arena_bytes);
        rc = 1;
        goto done;
    }
    /* poison the arena: nothing may depend on its initial contents */
    memset(arena, 0xA5, info.arena_bytes);
    if (espnn_init(&model, payload, len, consts, state, info.state_bytes, arena,
                   info.arena_bytes, &err) != ESPNN_OK) {
        print_error("init", &err);
        rc = 2;
        goto done;
    }
    if (copy_consts) {
        memset(payload, 0, len); /* the engine must not read the payload any more */
    }
    for (uint32_t k = 0; k < info.n_inputs; k++) {
        espnn_io_info_t io;
        espnn_io_info(&model, 0, k, &io);
        size_t n = 0;
        uint8_t *data = NULL;
        if (zero_inputs) {
            n = io.nbytes;
            blocks[k] = calloc(1, n + 16); /* malloc alignment covers float32 */
            data = (uint8_t *)blocks[k];
            if (data == NULL) {
                rc = 1;
                goto done;
            }
        } else if (i >= argc) {
            fprintf(stderr, "espnn_run: missing input %" PRIu32 " (%" PRIu32 " bytes)\n", k, io.nbytes);
            rc = 3;
            goto done;
        } else {
            data = read_file(argv[i++], &n, 0, &blocks[k]);
            if (data == NULL) {
                rc = 1;
                goto done;
            }
        }
        const int home = homes && io.arena_home != ESPNN_NO_HOME;
        if (home && n != io.nbytes) {
            fprintf(stderr, "espnn_run: input %" PRIu32 ": file has %zu bytes, model wants %" PRIu32 "\n", k, n,
                    io.nbytes);
            rc = 3;
            goto done;
        }
        in_data[k] = data;
        espnn_status_t st = espnn_set_io(&model, 0, k, home ? NULL : data, n);
        if (st != ESPNN_OK) {
            fprintf(stderr,
                    "espnn_run: input %" PRIu32 ": %s (file has %zu bytes, model wants %" PRIu32 ")\n",
                    k, espnn_status_name(st), n, io.nbytes);
            rc = 3;
            goto done;
        }
    }
    for (uint32_t k = 0; k < info.n_outputs; k++) {
        espnn_io_info_t io;
        espnn_io_info(&model, 1, k, &io);
        blocks[ESPNN_MAX_IO + k] = aligned_alloc(16, ((size_t)io.nbytes + 16) / 16 * 16);
        if (blocks[ESPNN_MAX_IO + k] == NULL) {
            rc = 1;
            goto done;
        }
        memset(blocks[ESPNN_MAX_IO + k], 0x5A, io.nbytes);
        const int home = homes && io.arena_home != ESPNN_NO_HOME;
        espnn_set_io(&model, 1, k, home ? NULL : blocks[ESPNN_MAX_IO + k], io.nbytes);
    }
    for (int r = 0; r < repeat; r++) {
        for (uint32_t k = 0; homes && k < info.n_inputs; k++) {
            espnn_io_info_t io;
            espnn_io_info(&model, 0, k, &io);
            if (io.arena_home != ESPNN_NO_HOME) { /* its bytes were reused by the last run */
                memcpy((uint8_t *)arena + io.arena_home, in_data[k], io.nbytes);
            }
        }
        if (espnn_invoke(&model, &err) != ESPNN_OK) {
            print_error("invoke", &err);
            rc = 3;
            goto done;
        }
    }
    for (uint32_t k = 0; k < info.n_outputs; k++) {
        espnn_io_info_t io;
        espnn_io_info(&model, 1, k, &io);
        if (homes && io.arena_home != ESPNN_NO_HOME) {
            memcpy(blocks[ESPNN_MAX_IO + k], (uint8_t *)arena + io.arena_home, io.nbytes);
        }
        char path[4096];
        snprintf(path, sizeof path, "%s%" PRIu32 ".bin", prefix, k);
        FILE *f = fopen(path, "wb");
        const int ok = f != NULL && fwrite(blocks[ESPNN_MAX_IO + k], 1, io.nbytes, f) == io.nbytes;
        if (f != NULL) {
            fclose(f);
        }
        if (!ok) {
            fprintf(stderr, "espnn_run: cannot write %s\n", path);
            rc = 1;
            goto done;
        }
    }
done:
    for (uint32_t k = 0; k < 2 * ESPNN_MAX_IO; k++) {
        free(blocks[k]);
    }
    free(consts);
    free(arena);
    free(state);
    free(pblock);
    return rc;
}
