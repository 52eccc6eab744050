#include "espnn_lock.h"

#include "espnn_et_config.h"

#if ESPNN_ET_FREERTOS_LOCKS
#include "freertos/FreeRTOS.h"
#include "freertos/semphr.h"
#else
#include <mutex>
#endif

namespace espnn_et {

namespace {

constexpr int kLockCount = 2;

#if ESPNN_ET_FREERTOS_LOCKS

struct Locks {
    StaticSemaphore_t storage[kLockCount];
    SemaphoreHandle_t handle[kLockCount];
    Locks() {
        for (int i = 0; i < kLockCount; ++i) {
            /* static storage: creation cannot fail for lack of heap */
            handle[i] = xSemaphoreCreateMutexStatic(&storage[i]);
        }
    }
};

/* A function-local static is constructed once even when two tasks race here (the
 * toolchain's guard variables are thread-safe on ESP-IDF). */
Locks &locks() {
    static Locks instance;
    return instance;
}

} // namespace

void lock_acquire(LockId id) { xSemaphoreTake(locks().handle[static_cast<int>(id)], portMAX_DELAY); }

void lock_release(LockId id) { xSemaphoreGive(locks().handle[static_cast<int>(id)]); }

#else

std::mutex &mutex_for(LockId id) {
    static std::mutex mutexes[kLockCount];
    return mutexes[static_cast<int>(id)];
}

} // namespace

void lock_acquire(LockId id) { mutex_for(id).lock(); }

void lock_release(LockId id) { mutex_for(id).unlock(); }

#endif

} // namespace espnn_et
