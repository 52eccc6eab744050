/* Profile sinks: see espnn_profile_sink.h.  Empty unless ESPNN_PROFILE. */
#include "espnn_profile_sink.h"

#if ESPNN_PROFILE

#include "espnn_lock.h"

namespace espnn_et {

namespace {

constexpr int kSinks = 4; /* models profiling at the same time (one per task) */

struct Entry {
    const void *key = nullptr;
    ProfileSink *sink = nullptr;
};

Entry g_sinks[kSinks];

} // namespace

bool profile_sink_open(const void *key, ProfileSink *sink) {
    ScopedLock lock(LockId::kLease);
    sink->ops = 0;
    sink->calls = 0;
    sink->overflow = false;
    for (Entry &e : g_sinks) {
        if (e.key == nullptr || e.key == key) {
            e.key = key;
            e.sink = sink;
            return true;
        }
    }
    return false;
}

void profile_sink_close(const void *key) {
    ScopedLock lock(LockId::kLease);
    for (Entry &e : g_sinks) {
        if (e.key == key) {
            e = Entry{};
        }
    }
}

ProfileSink *profile_sink_find(const void *key) {
    ScopedLock lock(LockId::kLease);
    for (Entry &e : g_sinks) {
        if (e.key != nullptr && e.key == key) {
            return e.sink;
        }
    }
    return nullptr;
}

} // namespace espnn_et

#endif /* ESPNN_PROFILE */
