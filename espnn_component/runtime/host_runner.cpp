/*
 * The standalone host runner: runs the program embedded by a generated model_pte.h through
 * EspnnModel (the same code path a sketch uses on the chip) and prints every output.
 *
 *   espnn_runner [--input INDEX=FILE]... [--seed N] [--repeat N] [--view native|float|int8]
 *   espnn_runner --selftest      runs EspnnModel::self_test() and prints its one line
 *                                (exit code 0 when every embedded case is bit-exact, else 1)
 *   --profile                    after the outputs, prints EspnnModel::profile()'s lines of the
 *                                last invoke (exit code 3 when it printed an error line)
 *   --write-once                 writes the inputs before the first invoke only: what a sketch
 *                                that forgets to write them again gets (docs/runtime.md)
 *   --shared-arena               runs the model on an EspnnSharedArena of its arena_bytes
 *
 * --view picks the EspnnModel view of every input and output: the program's own dtype
 * (default), float (quantized/dequantized at the boundary for int8 tensors) or int8 (the raw
 * quantized side of float tensors).  An input without --input gets deterministic data (see
 * fill_deterministic); FILE holds the raw little-endian values in the view's dtype.
 * Output lines:
 *
 *   output 0 float32 [1, 10]: v0 v1 ...      (floats printed with 9 significant digits,
 *   latency_us 1234                            enough to read back the exact float32)
 */
#include <executorch_espnn.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include "espnn_format.h"
#include "model_pte.h"

namespace {

enum class View { kNative, kFloat, kInt8 };

struct Options {
    const char *input_files[ESPNN_MAX_IO] = {};
    uint32_t seed = 1;
    unsigned long repeat = 1;
    View view = View::kNative;
    bool selftest = false;
    bool profile = false;
    bool write_once = false;
    bool shared_arena = false;
};

int usage(const char *argv0) {
    fprintf(stderr,
            "usage: %s [--input INDEX=FILE]... [--seed N] [--repeat N] [--view native|float|int8] [--profile] "
            "[--write-once] [--shared-arena] | --selftest\n",
            argv0);
    return 2;
}

bool parse_args(int argc, char **argv, Options *opt) {
    for (int i = 1; i < argc; ++i) {
        const char *arg = argv[i];
        if (strcmp(arg, "--selftest") == 0) {
            opt->selftest = true;
        } else if (strcmp(arg, "--profile") == 0) {
            opt->profile = true;
        } else if (strcmp(arg, "--write-once") == 0) {
            opt->write_once = true;
        } else if (strcmp(arg, "--shared-arena") == 0) {
            opt->shared_arena = true;
        } else if (strcmp(arg, "--input") == 0 && i + 1 < argc) {
            const char *spec = argv[++i];
            char *end = nullptr;
            errno = 0;
            const unsigned long index = strtoul(spec, &end, 10);
            if (errno != 0 || end == spec || *end != '=' || index >= ESPNN_MAX_IO) {
                fprintf(stderr, "espnn_runner: --input wants INDEX=FILE, got '%s'\n", spec);
                return false;
            }
            opt->input_files[index] = end + 1;
        } else if (strcmp(arg, "--view") == 0 && i + 1 < argc) {
            const char *v = argv[++i];
            if (strcmp(v, "native") == 0) {
                opt->view = View::kNative;
            } else if (strcmp(v, "float") == 0) {
                opt->view = View::kFloat;
            } else if (strcmp(v, "int8") == 0) {
                opt->view = View::kInt8;
            } else {
                fprintf(stderr, "espnn_runner: --view wants native, float or int8, got '%s'\n", v);
                return false;
            }
        } else if ((strcmp(arg, "--seed") == 0 || strcmp(arg, "--repeat") == 0) && i + 1 < argc) {
            char *end = nullptr;
            errno = 0;
            const unsigned long value = strtoul(argv[i + 1], &end, 10);
            if (errno != 0 || *end != '\0') {
                fprintf(stderr, "espnn_runner: %s wants a number, got '%s'\n", arg, argv[i + 1]);
                return false;
            }
            if (arg[2] == 's') {
                opt->seed = static_cast<uint32_t>(value);
            } else {
                opt->repeat = value == 0 ? 1 : value;
            }
            ++i;
        } else {
            fprintf(stderr, "espnn_runner: unknown argument '%s'\n", arg);
            return false;
        }
    }
    return true;
}

/* xorshift32 from seed + 7919 * index: floats uniform in [-1, 1), int8 uniform in [-128, 127].
 * executorch_espnn.model_header.deterministic_input() produces the same values. */
uint32_t next(uint32_t *state) {
    uint32_t x = *state;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    *state = x;
    return x;
}

void fill_deterministic(void *data, uint8_t dtype, size_t numel, uint32_t seed, size_t index) {
    uint32_t state = seed + 7919u * static_cast<uint32_t>(index);
    if (state == 0) {
        state = 1;
    }
    for (size_t i = 0; i < numel; ++i) {
        const uint32_t r = next(&state);
        if (dtype == ESPNN_DTYPE_FLOAT32) {
            static_cast<float *>(data)[i] = static_cast<float>(r >> 8) / 8388608.0f - 1.0f;
        } else {
            static_cast<int8_t *>(data)[i] = static_cast<int8_t>(static_cast<int32_t>(r >> 24) - 128);
        }
    }
}

bool read_file(const char *path, void *data, size_t nbytes) {
    FILE *f = fopen(path, "rb");
    if (f == nullptr) {
        fprintf(stderr, "espnn_runner: cannot open %s: %s\n", path, strerror(errno));
        return false;
    }
    const size_t got = fread(data, 1, nbytes, f);
    const int extra = fgetc(f);
    fclose(f);
    if (got != nbytes || extra != EOF) {
        fprintf(stderr, "espnn_runner: %s must hold exactly %lu bytes\n", path, static_cast<unsigned long>(nbytes));
        return false;
    }
    return true;
}

uint8_t view_dtype(View view, uint8_t program_dtype) {
    switch (view) {
    case View::kFloat:
        return ESPNN_DTYPE_FLOAT32;
    case View::kInt8:
        return ESPNN_DTYPE_INT8;
    default:
        return program_dtype;
    }
}

void print_tensor(const char *role, size_t index, const espnn_pte_tensor_t &info, uint8_t dtype, const void *data,
                  size_t numel) {
    printf("%s %lu %s [", role, static_cast<unsigned long>(index), dtype == ESPNN_DTYPE_FLOAT32 ? "float32" : "int8");
    for (uint8_t d = 0; d < info.rank; ++d) {
        printf(d == 0 ? "%u" : ", %u", static_cast<unsigned>(info.dims[d]));
    }
    printf("]:");
    for (size_t i = 0; i < numel; ++i) {
        if (dtype == ESPNN_DTYPE_FLOAT32) {
            printf(" %.9g", static_cast<double>(static_cast<const float *>(data)[i]));
        } else {
            printf(" %d", static_cast<int>(static_cast<const int8_t *>(data)[i]));
        }
    }
    printf("\n");
}

} // namespace

int main(int argc, char **argv) {
    Options opt;
    if (!parse_args(argc, argv, &opt)) {
        return usage(argv[0]);
    }
    EspnnSharedArena arena(model_pte.arena_bytes);
    EspnnModel own(model_pte);
    EspnnModel on_shared(model_pte, arena);
    EspnnModel &model = opt.shared_arena ? on_shared : own;
    if (opt.selftest) {
        char line[192];
        const bool exact = model.self_test(line, sizeof line);
        printf("%s\n", line);
        return exact ? 0 : 1;
    }
    if (!model.begin()) {
        fprintf(stderr, "espnn_runner: begin() failed: %s\n", model.error());
        return 1;
    }
    for (size_t i = 0; i < ESPNN_MAX_IO; ++i) {
        if (opt.input_files[i] != nullptr && i >= model.input_count()) {
            fprintf(stderr, "espnn_runner: --input %lu but the model has %lu inputs\n", static_cast<unsigned long>(i),
                    static_cast<unsigned long>(model.input_count()));
            return 2;
        }
    }
    /* Inputs are written before every invoke(), as a sketch does: the arena (or ExecuTorch's
     * memory plan) reuses an input's bytes once the input is consumed, so invoke() does not
     * preserve them (--write-once shows it). */
    std::vector<std::vector<unsigned char>> sources(model.input_count());
    std::vector<void *> views(model.input_count());
    for (size_t i = 0; i < model.input_count(); ++i) {
        const uint8_t dtype = view_dtype(opt.view, model.input_info(i)->dtype);
        const size_t numel = model.input_numel(i);
        views[i] = dtype == ESPNN_DTYPE_FLOAT32 ? static_cast<void *>(model.input<float>(i))
                                                : static_cast<void *>(model.input<int8_t>(i));
        if (views[i] == nullptr) {
            fprintf(stderr, "espnn_runner: input %lu: %s\n", static_cast<unsigned long>(i), model.error());
            return 1;
        }
        const size_t elem = dtype == ESPNN_DTYPE_FLOAT32 ? 4 : 1;
        sources[i].resize(numel * elem);
        if (opt.input_files[i] != nullptr) {
            if (!read_file(opt.input_files[i], sources[i].data(), sources[i].size())) {
                return 2;
            }
        } else {
            fill_deterministic(sources[i].data(), dtype, numel, opt.seed, i);
        }
    }
    uint64_t total_us = 0;
    for (unsigned long r = 0; r < opt.repeat; ++r) {
        for (size_t i = 0; i < model.input_count() && (r == 0 || !opt.write_once); ++i) {
            memcpy(views[i], sources[i].data(), sources[i].size());
        }
        if (!model.invoke()) {
            fprintf(stderr, "espnn_runner: invoke() failed: %s\n", model.error());
            return 1;
        }
        total_us += model.last_latency_us();
    }
    for (size_t i = 0; i < model.output_count(); ++i) {
        const espnn_pte_tensor_t &info = *model.output_info(i);
        const uint8_t dtype = view_dtype(opt.view, info.dtype);
        const void *data = dtype == ESPNN_DTYPE_FLOAT32 ? static_cast<const void *>(model.output<float>(i))
                                                          : static_cast<const void *>(model.output<int8_t>(i));
        if (data == nullptr) {
            fprintf(stderr, "espnn_runner: output %lu: %s\n", static_cast<unsigned long>(i), model.error());
            return 1;
        }
        print_tensor("output", i, info, dtype, data, model.output_numel(i));
    }
    printf("latency_us %lu\n", static_cast<unsigned long>(total_us / opt.repeat));
    if (opt.profile && !model.profile()) {
        return 3;
    }
    return 0;
}
