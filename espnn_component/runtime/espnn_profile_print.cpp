/* The profile lines: see espnn_profile_print.h.  Integers only (no float formatting: some
 * embedded C libraries print no floats), every string from the generated table (printable ASCII). */
#include "espnn_profile_print.h"

#include <cinttypes>
#include <stdio.h>

namespace {

void emit(void (*print)(const char *, void *), void *ctx, const char *line) {
    if (print != nullptr) {
        print(line, ctx);
    } else {
        printf("%s\n", line);
    }
}

/* "12.34" for ticks out of total (hundredths of a percent, rounded down) */
void share(char *buf, size_t size, uint32_t ticks, uint64_t total) {
    const uint64_t basis = total == 0 ? 0 : static_cast<uint64_t>(ticks) * 10000u / total;
    snprintf(buf, size, "%" PRIu32 ".%02" PRIu32, static_cast<uint32_t>(basis / 100u),
             static_cast<uint32_t>(basis % 100u));
}

bool fail(void (*print)(const char *, void *), void *ctx, const char *why) {
    char line[320];
    snprintf(line, sizeof line, "espnn-profile error: %s", why);
    emit(print, ctx, line);
    return false;
}

} // namespace

bool espnn_profile_print(const espnn_pte_profile_t *table, const espnn_profile_run_t *run, const char *unit,
                         void (*print)(const char *line, void *ctx), void *ctx) {
    if (unit == nullptr) {
        return fail(print, ctx, "this firmware was built without the profiler; set custom_executorch_profile = yes "
                                "(CONFIG_ESPNN_ET_PROFILE=y in an ESP-IDF project) and rebuild");
    }
    if (table == nullptr) {
        return fail(print, ctx, "the model header has no layer table; build it with custom_executorch_profile = yes "
                                "(executorch-espnn build --profile)");
    }
    if (run == nullptr || !run->valid) {
        return fail(print, ctx, "no invoke() measured yet; call begin() and invoke() first");
    }
    if (run->overflow || run->ops != table->n_layers || run->calls != table->n_partitions) {
        char why[200];
        snprintf(why, sizeof why,
                 "the method ran %" PRIu32 " delegated ops in %" PRIu32 " delegate calls%s, the header's table lists %"
                 PRIu32 " in %" PRIu32 ": the header and the .pte come from different builds",
                 run->ops, run->calls, run->overflow ? " or more" : "", table->n_layers, table->n_partitions);
        return fail(print, ctx, why);
    }
    const uint32_t total = run->stop - run->start;
    char line[320];
    char pct[16];
    snprintf(line, sizeof line, "espnn-profile begin layers=%" PRIu32 " partitions=%" PRIu32 " unit=%s",
             table->n_layers, table->n_partitions, unit);
    emit(print, ctx, line);
    uint32_t layers_sum = 0;
    for (uint32_t i = 0; i < table->n_layers; ++i) {
        const espnn_pte_profile_layer_t &ly = table->layers[i];
        share(pct, sizeof pct, run->op_ticks[i], total);
        snprintf(line, sizeof line,
                 "espnn-profile layer %" PRIu32 " ticks=%" PRIu32 " share=%s%% part=%u op=%u family=%s name=\"%s\" "
                 "at=\"%s\"",
                 i, run->op_ticks[i], pct, static_cast<unsigned>(ly.partition), static_cast<unsigned>(ly.op),
                 ly.family, ly.name, ly.location);
        emit(print, ctx, line);
        layers_sum += run->op_ticks[i];
    }
    uint32_t delegates_sum = 0;
    uint32_t first = 0;
    for (uint32_t k = 0; k < run->calls; ++k) {
        uint32_t ops = 0;
        for (uint32_t i = 0; i < run->call_ops[k]; ++i) {
            ops += run->op_ticks[first + i];
        }
        first += run->call_ops[k];
        const uint32_t overhead = (run->call_exit[k] - run->call_enter[k]) - ops;
        share(pct, sizeof pct, overhead, total);
        snprintf(line, sizeof line, "espnn-profile delegate %" PRIu32 " ticks=%" PRIu32 " share=%s%% ops=%" PRIu32,
                 k, overhead, pct, run->call_ops[k]);
        emit(print, ctx, line);
        delegates_sum += overhead;
    }
    uint32_t cpu_sum = 0;
    for (uint32_t j = 0; j <= run->calls; ++j) {
        const uint32_t from = j == 0 ? run->start : run->call_exit[j - 1];
        const uint32_t to = j == run->calls ? run->stop : run->call_enter[j];
        const uint32_t ticks = to - from;
        share(pct, sizeof pct, ticks, total);
        snprintf(line, sizeof line, "espnn-profile cpu %" PRIu32 " ticks=%" PRIu32 " share=%s%% ops=\"%.200s\"", j,
                 ticks, pct, table->cpu_ops[j]);
        emit(print, ctx, line);
        cpu_sum += ticks;
    }
    snprintf(line, sizeof line,
             "espnn-profile total ticks=%" PRIu32 " layers=%" PRIu32 " delegates=%" PRIu32 " cpu=%" PRIu32
             " unit=%s end",
             total, layers_sum, delegates_sum, cpu_sum, unit);
    emit(print, ctx, line);
    return true;
}
