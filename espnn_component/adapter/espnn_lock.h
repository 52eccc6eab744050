/*
 * Process-wide locks of the adapter, behind one tiny interface so the same code runs on the
 * host (std::mutex), on FreeRTOS (a statically allocated mutex semaphore) and single-threaded
 * on bare metal (no lock); ESPNN_ET_LOCKS in espnn_et_config.h chooses at compile time.
 *
 *   kExecute  held around binding I/O and espnn_invoke(): ESP-NN's scratch pointers are
 *             globals, so two delegates may never run at once (ESPNN_ET_SERIALIZE).
 *   kStatus   held around the last-error text and the live-memory counters.
 *   kLease    held around the arena leases (espnn_arena_lease.h) and EspnnSharedArena's claim.
 */
#ifndef ESPNN_LOCK_H
#define ESPNN_LOCK_H

namespace espnn_et {

enum class LockId { kExecute = 0, kStatus = 1, kLease = 2 };

void lock_acquire(LockId id);
void lock_release(LockId id);

class ScopedLock {
  public:
    explicit ScopedLock(LockId id, bool enabled = true) : id_(id), held_(enabled) {
        if (held_) {
            lock_acquire(id_);
        }
    }
    ~ScopedLock() {
        if (held_) {
            lock_release(id_);
        }
    }
    ScopedLock(const ScopedLock &) = delete;
    ScopedLock &operator=(const ScopedLock &) = delete;

  private:
    LockId id_;
    bool held_;
};

} // namespace espnn_et

#endif /* ESPNN_LOCK_H */
