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
    size_t used = 0;
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

void arena_lease_close(const void *key) {
    ScopedLock lock(LockId::kLease);
    Lease *l = key != nullptr ? find(key) : nullptr;
    if (l != nullptr) {
        *l = Lease{};
    }
}

LeaseTake arena_lease_take(const void *key, size_t bytes, size_t align, void **out, size_t *used,
                           size_t *capacity) {
    ScopedLock lock(LockId::kLease);
    Lease *l = (key != nullptr && bytes != 0) ? find(key) : nullptr;
    if (l == nullptr) {
        return LeaseTake::kNoLease;
    }
    const uintptr_t base = reinterpret_cast<uintptr_t>(l->base);
    const uintptr_t at = (base + l->used + align - 1) / align * align;
    const size_t start = static_cast<size_t>(at - base);
    *used = l->used;
    *capacity = l->bytes;
    if (start > l->bytes || bytes > l->bytes - start) {
        return LeaseTake::kTooSmall;
    }
    l->used = start + bytes;
    *out = l->base + start;
    return LeaseTake::kTaken;
}

} // namespace espnn_et
