/*
 * EspnnModel::self_test(): run the cases model_pte.h embeds (custom_executorch_selftest = N)
 * and compare each output with the value the host computed, element by element.
 *
 * The expected values come from the build machine's Python reference of the delegate (and
 * PyTorch for CPU operators), never from this engine: a pass proves that this chip computes
 * what the host predicted, bit for bit.  How the values are stored and compared is written
 * down once, in executorch_espnn/selftest.py; this file is its C side.
 *
 * Nothing is allocated: inputs are written into the program's own input storage (the views
 * of the program's dtype), outputs read from its own output storage, and the latencies of at
 * most ESPNN_SELFTEST_MAX_CASES cases live on the stack.
 */
#include "executorch_espnn.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <cmath>

#include "espnn_format.h"

namespace {

/* The first element that differs, as the one line reports it. */
struct Difference {
    bool found = false;
    uint32_t sample = 0;
    uint32_t output = 0;
    uint32_t element = 0;
    char got[32] = {0};
    char expected[32] = {0};
};

/* A float's bits as an integer ordered like the floats, so that the distance of two floats
 * is their distance in units in the last place. */
int64_t ordered_bits(float f) {
    uint32_t u = 0;
    memcpy(&u, &f, sizeof u);
    return (u & 0x80000000u) != 0 ? -static_cast<int64_t>(u & 0x7fffffffu) : static_cast<int64_t>(u);
}

/* A float output on its int8 grid: clamp(nearbyint((double)y / (double)scale) + zp), as
 * selftest.py's expected_int8() (double arithmetic, so both sides agree for any y). */
int32_t on_grid(float y, float scale, int32_t zero_point) {
    double v = std::nearbyint(static_cast<double>(y) / static_cast<double>(scale)) + zero_point;
    if (v < -128.0) {
        v = -128.0;
    } else if (v > 127.0) {
        v = 127.0;
    }
    return static_cast<int32_t>(v);
}

uint32_t distance(int64_t a, int64_t b) {
    const int64_t d = a > b ? a - b : b - a;
    return d > static_cast<int64_t>(UINT32_MAX) ? UINT32_MAX : static_cast<uint32_t>(d);
}

void sort(uint32_t *v, uint32_t n) { /* insertion sort: n <= ESPNN_SELFTEST_MAX_CASES */
    for (uint32_t i = 1; i < n; ++i) {
        const uint32_t x = v[i];
        uint32_t j = i;
        for (; j > 0 && v[j - 1] > x; --j) {
            v[j] = v[j - 1];
        }
        v[j] = x;
    }
}

/* Compares one output of one case; returns the largest difference in LSB and records the
 * first differing element in `diff`.  Sets *bad_table when the stored form does not fit the
 * program's output. */
uint32_t compare(const espnn_selftest_tensor_t &want, uint8_t program_dtype, const void *got, uint32_t sample,
                 uint32_t output, Difference *diff, bool *bad_table) {
    const size_t base = static_cast<size_t>(sample) * want.numel;
    const bool int8_grid = want.dtype == ESPNN_DTYPE_INT8 && program_dtype == ESPNN_DTYPE_FLOAT32 && want.scale > 0.0f;
    const bool int8_raw = want.dtype == ESPNN_DTYPE_INT8 && program_dtype == ESPNN_DTYPE_INT8 && !(want.scale > 0.0f);
    const bool float_raw =
        want.dtype == ESPNN_DTYPE_FLOAT32 && program_dtype == ESPNN_DTYPE_FLOAT32 && !(want.scale > 0.0f);
    if (!int8_grid && !int8_raw && !float_raw) {
        *bad_table = true;
        return 0;
    }
    uint32_t worst = 0;
    for (uint32_t k = 0; k < want.numel; ++k) {
        uint32_t lsb = 0;
        int32_t g = 0;
        int32_t e = 0;
        float gf = 0.0f;
        float ef = 0.0f;
        if (float_raw) {
            ef = static_cast<const float *>(want.data)[base + k];
            gf = static_cast<const float *>(got)[k];
            if (memcmp(&ef, &gf, sizeof ef) != 0) {
                lsb = distance(ordered_bits(gf), ordered_bits(ef));
                lsb = lsb == 0 ? 1u : lsb; /* +0 and -0, NaN payloads */
            }
        } else {
            e = static_cast<const int8_t *>(want.data)[base + k];
            if (int8_raw) {
                g = static_cast<const int8_t *>(got)[k];
                lsb = distance(g, e);
            } else {
                gf = static_cast<const float *>(got)[k];
                if (std::isfinite(gf)) {
                    g = on_grid(gf, want.scale, want.zero_point);
                    lsb = distance(g, e);
                } else {
                    lsb = 256; /* off the int8 grid altogether */
                }
            }
        }
        if (lsb > worst) {
            worst = lsb;
        }
        if (lsb != 0 && !diff->found) {
            diff->found = true;
            diff->sample = sample;
            diff->output = output;
            diff->element = k;
            if (float_raw) {
                snprintf(diff->got, sizeof diff->got, "%.9g", static_cast<double>(gf));
                snprintf(diff->expected, sizeof diff->expected, "%.9g", static_cast<double>(ef));
            } else {
                if (int8_grid && !std::isfinite(gf)) {
                    snprintf(diff->got, sizeof diff->got, "%g", static_cast<double>(gf));
                } else {
                    snprintf(diff->got, sizeof diff->got, "%" PRId32, g);
                }
                snprintf(diff->expected, sizeof diff->expected, "%" PRId32, e);
            }
        }
    }
    return worst;
}

} // namespace

bool EspnnModel::self_test(char *line, size_t size) {
    char scratch[1];
    if (line == nullptr || size == 0) {
        line = scratch;
        size = sizeof scratch;
    }
    line[0] = '\0';
    const espnn_selftest_t *st = desc_.selftest;
    if (st == nullptr || st->n_cases == 0) {
        snprintf(line, size,
                 "selftest: model_pte.h embeds no cases; set custom_executorch_selftest = N in platformio.ini "
                 "(or lower(..., selftest=N)) and rebuild");
        return false;
    }
    if (st->n_cases > ESPNN_SELFTEST_MAX_CASES || st->inputs == nullptr || st->expected == nullptr) {
        snprintf(line, size,
                 "selftest: model_pte.h's table is unusable (%" PRIu32 " cases, at most %d): regenerate it "
                 "with this executorch-espnn",
                 st->n_cases, ESPNN_SELFTEST_MAX_CASES);
        return false;
    }
    if (!begin()) {
        snprintf(line, size, "selftest: begin() failed: %s", error());
        return false;
    }
    for (size_t i = 0; i < desc_.n_inputs + desc_.n_outputs; ++i) {
        const bool is_output = i >= desc_.n_inputs;
        const size_t j = is_output ? i - desc_.n_inputs : i;
        const espnn_selftest_tensor_t &t = is_output ? st->expected[j] : st->inputs[j];
        const size_t numel = is_output ? output_numel(j) : input_numel(j);
        if (t.numel != numel || t.data == nullptr) {
            snprintf(line, size,
                     "selftest: model_pte.h's table has %" PRIu32 " values for %s %lu, the model %lu: the "
                     "header and the .pte come from different builds",
                     t.numel, is_output ? "output" : "input", static_cast<unsigned long>(j),
                     static_cast<unsigned long>(numel));
            return false;
        }
    }

    uint32_t latency[ESPNN_SELFTEST_MAX_CASES];
    uint32_t exact = 0;
    uint32_t worst = 0;
    Difference diff;
    for (uint32_t c = 0; c < st->n_cases; ++c) {
        for (size_t i = 0; i < desc_.n_inputs; ++i) {
            const espnn_selftest_tensor_t &t = st->inputs[i];
            const uint8_t dtype = desc_.inputs[i].dtype;
            void *dst = view(false, i, dtype == ESPNN_DTYPE_INT8 ? kViewInt8 : kViewFloat); /* own storage */
            const size_t base = static_cast<size_t>(c) * t.numel;
            if (dst == nullptr) {
                snprintf(line, size, "selftest: %s", error());
                return false;
            }
            if (dtype == ESPNN_DTYPE_FLOAT32 && t.dtype == ESPNN_DTYPE_INT8 && t.scale > 0.0f) {
                const int8_t *q = static_cast<const int8_t *>(t.data) + base;
                float *x = static_cast<float *>(dst);
                for (uint32_t k = 0; k < t.numel; ++k) {
                    x[k] = static_cast<float>(static_cast<int32_t>(q[k]) - t.zero_point) * t.scale;
                }
            } else if (dtype == t.dtype && !(t.scale > 0.0f)) {
                const size_t elem = dtype == ESPNN_DTYPE_INT8 ? 1 : sizeof(float);
                memcpy(dst, static_cast<const uint8_t *>(t.data) + base * elem, t.numel * elem);
            } else {
                snprintf(line, size,
                         "selftest: model_pte.h stores input %lu as dtype %u, the program takes dtype %u: the "
                         "header and the .pte come from different builds",
                         static_cast<unsigned long>(i), static_cast<unsigned>(t.dtype), static_cast<unsigned>(dtype));
                return false;
            }
        }
        if (!invoke()) {
            snprintf(line, size, "selftest: invoke failed on sample %" PRIu32 ": %s", c, error());
            return false;
        }
        latency[c] = last_latency_us();
        uint32_t case_worst = 0;
        for (size_t o = 0; o < desc_.n_outputs; ++o) {
            const uint8_t dtype = desc_.outputs[o].dtype;
            const void *got = view(true, o, dtype == ESPNN_DTYPE_INT8 ? kViewInt8 : kViewFloat);
            bool bad_table = false;
            const uint32_t w = got == nullptr ? 0
                                              : compare(st->expected[o], dtype, got, c, static_cast<uint32_t>(o),
                                                        &diff, &bad_table);
            if (got == nullptr || bad_table) {
                snprintf(line, size,
                         "selftest: model_pte.h's expected output %lu does not fit the program's output: the "
                         "header and the .pte come from different builds",
                         static_cast<unsigned long>(o));
                return false;
            }
            case_worst = w > case_worst ? w : case_worst;
        }
        exact += case_worst == 0 ? 1u : 0u;
        worst = case_worst > worst ? case_worst : worst;
    }

    if (diff.found) {
        snprintf(line, size,
                 "selftest: %" PRIu32 "/%" PRIu32 " bit-exact (worst %" PRIu32 " LSB): first difference sample %" PRIu32
                 " output %" PRIu32 " element %" PRIu32 ": got %s expected %s",
                 exact, st->n_cases, worst, diff.sample, diff.output, diff.element, diff.got, diff.expected);
        return false;
    }
    const uint32_t n = st->n_cases;
    sort(latency, n);
    const uint32_t median = n % 2 != 0 ? latency[n / 2]
                                       : static_cast<uint32_t>((static_cast<uint64_t>(latency[n / 2 - 1]) + latency[n / 2]) / 2);
    snprintf(line, size,
             "selftest: %" PRIu32 "/%" PRIu32 " bit-exact (worst 0 LSB), latency min/median/max %" PRIu32 "/%" PRIu32
             "/%" PRIu32 " us",
             exact, n, latency[0], median, latency[n - 1]);
    return true;
}
