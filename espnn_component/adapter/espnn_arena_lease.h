/*
 * Arena leases: an EspnnModel built with an EspnnSharedArena lends that arena to the delegates
 * its program initialises, instead of each delegate allocating its own arena through the
 * memory policy.  A lease is keyed by the Method's runtime allocator
 * (BackendInitContext::get_runtime_allocator(), which is EspnnModel's own method allocator), so
 * only the delegates of that very load take from it, whatever other programs load in other
 * tasks at the same time.
 *
 * Why sharing is safe: the engine touches its arena only inside espnn_invoke() (every arena
 * tensor and scratch buffer is written before it is read within one invoke; the program's
 * inputs and outputs live in ExecuTorch's planned buffers, which are NOT shared), so models that
 * never execute at the same time may use the same bytes.  EspnnModel::invoke() claims the
 * shared arena around the run, so running two of them at once is refused, never corrupting.
 */
#ifndef ESPNN_ARENA_LEASE_H
#define ESPNN_ARENA_LEASE_H

#include <stddef.h>
#include <stdint.h>

namespace espnn_et {

enum class LeaseTake { kNoLease, kTaken, kTooSmall };

/* Opens a lease of [base, base + bytes) for the delegates initialised with runtime allocator
 * `key`; false when ESPNN_ARENA_LEASES leases are open already. */
bool arena_lease_open(const void *key, uint8_t *base, size_t bytes);
void arena_lease_close(const void *key);

/* The next `bytes` of key's lease, aligned to `align`: kTaken with *out set; kTooSmall when the
 * rest of the lease cannot hold them (*used and *capacity say how much it had); kNoLease when
 * key has no lease (or bytes is 0): the delegate allocates its own arena. */
LeaseTake arena_lease_take(const void *key, size_t bytes, size_t align, void **out, size_t *used,
                           size_t *capacity);

} // namespace espnn_et

#endif /* ESPNN_ARENA_LEASE_H */
