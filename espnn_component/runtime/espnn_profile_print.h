/*
 * The profile lines EspnnModel::profile() prints (format: docs/runtime.md, "Profiling"; parsed by
 * executorch_espnn/report/profile.py): from one invoke()'s measurements against the layer table
 * of model_pte.h.
 */
#ifndef ESPNN_PROFILE_PRINT_H
#define ESPNN_PROFILE_PRINT_H

#include <stdint.h>

#include "espnn_pte.h"

/* One method execution as measured (profiling builds fill it in EspnnModel::invoke()). */
struct espnn_profile_run_t {
    bool valid = false;      /* a successful invoke() was measured */
    bool overflow = false;   /* more ops or delegate calls than the table: not kept */
    uint32_t start = 0;      /* espnn_profile_now() before and after Method::execute() */
    uint32_t stop = 0;
    uint32_t ops = 0;        /* ops measured over all delegate calls */
    uint32_t calls = 0;      /* delegate calls */
    const uint32_t *op_ticks = nullptr;
    const uint32_t *call_enter = nullptr;
    const uint32_t *call_exit = nullptr;
    const uint32_t *call_ops = nullptr;
};

/* Prints the profile (or one "espnn-profile error: ..." line) through `print` (nullptr: stdout).
 * `unit` is nullptr in a firmware built without the profiler.  True when the profile was
 * printed. */
bool espnn_profile_print(const espnn_pte_profile_t *table, const espnn_profile_run_t *run, const char *unit,
                         void (*print)(const char *line, void *ctx), void *ctx);

#endif /* ESPNN_PROFILE_PRINT_H */
