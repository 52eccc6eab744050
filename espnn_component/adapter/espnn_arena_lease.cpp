#include "espnn_arena_lease.h"

#include "espnn_lock.h"

namespace espnn_et {

namespace {

/* Leases are open only while an EspnnModel loads its method: one per task loading at once. */
constexpr int kLeases = 4;

struct Lease {
    const void *key = nullptr;
    uint8_t *base = nullptr;
    size_t bytes = 0;
    size_t largest = 0; /* the largest arena asked for */
};

Lease g_leases[kLeases];

Lease *find(const void *key) {
    for (Lease &l : g_leases) {
        if (l.key == key) {
            return &l;
        }
    }
    return nullptr;
}

} // namespace

bool arena_lease_open(const void *key, uint8_t *base, size_t bytes) {
    ScopedLock lock(LockId::kLease);
    Lease *free_slot = find(nullptr);
    if (key == nullptr || free_slot == nullptr) {
        return false;
    }
    *free_slot = Lease{key, base, bytes, 0};
    return true;
}

size_t arena_lease_close(const void *key) {
    ScopedLock lock(LockId::kLease);
    Lease *l = key != nullptr ? find(key) : nullptr;
    if (l == nullptr) {
        return 0;
    }
    const size_t largest = l->largest;
    *l = Lease{};
    return largest;
}

LeaseTake arena_lease_take(const void *key, size_t bytes, void **out, size_t *capacity) {
    ScopedLock lock(LockId::kLease);
    Lease *l = (key != nullptr && bytes != 0) ? find(key) : nullptr;
    if (l == nullptr) {
        return LeaseTake::kNoLease;
    }
    l->largest = bytes > l->largest ? bytes : l->largest;
    if (l->base == nullptr) {
        return LeaseTake::kNoLease; /* sizing: the delegate allocates its own */
    }
    *capacity = l->bytes;
    /* every delegate starts at the base (why: espnn_arena_lease.h) */
    if (bytes > l->bytes) {
        return LeaseTake::kTooSmall;
    }
    *out = l->base;
    return LeaseTake::kTaken;
}

} // namespace espnn_et
