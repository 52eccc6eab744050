/*
 * Arena leases: EspnnModel lends ONE arena to all the delegates its program initialises (its
 * own block of model_pte.h's arena_bytes, or an EspnnSharedArena shared with other models),
 * instead of each delegate allocating an arena of its own through the memory policy.  A lease
 * is keyed by the Method's runtime allocator (BackendInitContext::get_runtime_allocator(), which
 * is EspnnModel's own method allocator), so only the delegates of that very load take from it,
 * whatever other programs load in other tasks at the same time.
 *
 * Every delegate of a load gets the lease's base, not a slice after the previous delegate's:
 * the engine touches its arena only inside espnn_invoke() (every arena tensor and scratch
 * buffer is written before it is read within one invoke; nothing in the arena outlives it:
 * the decoded tables live in the delegate's state, recurrent layers are unrolled into one
 * payload, and the program's inputs and outputs, the only tensors passed between delegates,
 * live in ExecuTorch's planned buffers), and ExecuTorch runs a method's instructions one
 * after the other, so the delegates of one method never use their arenas at the same time.
 * The arena a program needs is therefore its largest partition's, not the sum.  The same
 * holds between models that never execute at the same time (EspnnSharedArena):
 * EspnnModel::invoke() claims a shared arena around the run, so running two of them at once is
 * refused, never corrupting.
 *
 * A sizing lease (base nullptr) lends nothing: its delegates allocate their own arenas as
 * without a lease, and the lease records the largest one asked for (what
 * executorch_espnn_measure_pte reports as the program's arena).
 */
#ifndef ESPNN_ARENA_LEASE_H
#define ESPNN_ARENA_LEASE_H

#include <stddef.h>
#include <stdint.h>

namespace espnn_et {

enum class LeaseTake { kNoLease, kTaken, kTooSmall };

/* Opens a lease of [base, base + bytes) for the delegates initialised with runtime allocator
 * `key` (base nullptr: a sizing lease); false when all the lease slots are open already. */
bool arena_lease_open(const void *key, uint8_t *base, size_t bytes);
/* Closes key's lease; returns the largest arena one of its delegates asked for. */
size_t arena_lease_close(const void *key);

/* The lease's base (its owner allocates it ESPNN_ARENA_ALIGN-aligned) for an arena of `bytes`:
 * kTaken with *out set; kTooSmall when the lease is smaller (*capacity says how large it is);
 * kNoLease when key has no lease, it is a sizing lease, or bytes is 0: the delegate allocates
 * its own arena. */
LeaseTake arena_lease_take(const void *key, size_t bytes, void **out, size_t *capacity);

} // namespace espnn_et

#endif /* ESPNN_ARENA_LEASE_H */
