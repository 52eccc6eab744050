/*
 * Profile sinks (profiling builds only, ESPNN_PROFILE): where a delegate's execute() writes its
 * ops' times and its entry/exit stamps while an EspnnModel::invoke() profiles its method.
 *
 * A sink is keyed by the Method's runtime allocator (EspnnModel's method allocator, which the
 * delegates' init() saw: BackendInitContext::get_runtime_allocator()), as arena leases are, so a
 * delegate writes only into the sink of the model whose method runs it, whatever other models
 * run in other tasks.
 */
#ifndef ESPNN_PROFILE_SINK_H
#define ESPNN_PROFILE_SINK_H

#include "espnn_profile.h"

#if ESPNN_PROFILE

#include <stddef.h>
#include <stdint.h>

namespace espnn_et {

struct ProfileSink {
    uint32_t *op_ticks = nullptr;   /* every delegated op of one execution, in call order */
    uint32_t op_capacity = 0;
    uint32_t *call_enter = nullptr; /* per delegate call: espnn_profile_now() at entry and exit */
    uint32_t *call_exit = nullptr;
    uint32_t *call_ops = nullptr;   /* per delegate call: its op count */
    uint32_t call_capacity = 0;
    /* what one execution filled */
    uint32_t ops = 0;
    uint32_t calls = 0;
    bool overflow = false; /* more ops or calls than the header's table: the counts are not kept */
};

/* Opens `sink` (reset) for the delegates of runtime allocator `key`; false when
 * ESPNN_PROFILE_SINKS sinks are open already. */
bool profile_sink_open(const void *key, ProfileSink *sink);
void profile_sink_close(const void *key);
/* The open sink of `key`, or nullptr. */
ProfileSink *profile_sink_find(const void *key);

} // namespace espnn_et

#endif /* ESPNN_PROFILE */

#endif /* ESPNN_PROFILE_SINK_H */
