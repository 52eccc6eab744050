#include "espnn_lock.h"

#include <cstddef> /* the C++ library's configuration macros, for the check below */

#include "espnn_et_config.h"

#if ESPNN_ET_LOCKS == ESPNN_ET_LOCKS_FREERTOS
#include "freertos/FreeRTOS.h"
#include "freertos/semphr.h"
#elif ESPNN_ET_LOCKS == ESPNN_ET_LOCKS_STD
#if defined(__GLIBCXX__) && !defined(_GLIBCXX_HAS_GTHREADS)
/* A bare-metal libstdc++ (e.g. arm-none-eabi with picolibc) has no std::mutex. */
#error "this C++ library has no threads (no std::mutex): build the adapter with -DESPNN_ET_LOCKS=ESPNN_ET_LOCKS_NONE for a single-threaded bare-metal firmware, or with ESPNN_ET_LOCKS_FREERTOS under FreeRTOS (see adapter/espnn_et_config.h)"
#endif
#include <mutex>
#endif

namespace espnn_et {

#if ESPNN_ET_LOCKS == ESPNN_ET_LOCKS_FREERTOS

namespace {

constexpr int kLockCount = 3;

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

#elif ESPNN_ET_LOCKS == ESPNN_ET_LOCKS_STD

namespace {

constexpr int kLockCount = 3;

std::mutex &mutex_for(LockId id) {
    static std::mutex mutexes[kLockCount];
    return mutexes[static_cast<int>(id)];
}

} // namespace

void lock_acquire(LockId id) { mutex_for(id).lock(); }

void lock_release(LockId id) { mutex_for(id).unlock(); }

#else /* ESPNN_ET_LOCKS_NONE: one thread of execution, nothing to exclude */

void lock_acquire(LockId id) { (void)id; }

void lock_release(LockId id) { (void)id; }

#endif

} // namespace espnn_et
