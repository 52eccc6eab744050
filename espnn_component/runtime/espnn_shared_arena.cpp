/*
 * EspnnSharedArena: one delegate arena for several EspnnModels that never run at the same time
 * (see executorch_espnn.h; why sharing is safe: adapter/espnn_arena_lease.h).
 */
#include "executorch_espnn.h"

#include "espnn_lock.h"
#include "espnn_mem.h"

EspnnSharedArena::EspnnSharedArena(size_t bytes) : bytes_(bytes) {}

EspnnSharedArena::~EspnnSharedArena() {
    if (block_ptr_ != nullptr) {
        espnn_mem_block_t block{block_ptr_, block_bytes_, static_cast<espnn_mem_kind_t>(block_kind_)};
        espnn_mem_free(block);
    }
}

uint8_t *EspnnSharedArena::data(char *msg, size_t msg_size) {
    espnn_et::ScopedLock lock(espnn_et::LockId::kLease);
    if (block_ptr_ == nullptr) {
        /* the engine's arena alignment (ESPNN_ARENA_ALIGN) */
        const espnn_mem_block_t block =
            espnn_mem_alloc(ESPNN_MEM_ARENA, bytes_, 16, "EspNN shared delegate arena", msg, msg_size);
        block_ptr_ = block.ptr;
        block_bytes_ = block.bytes;
        block_kind_ = static_cast<int>(block.kind);
    }
    return static_cast<uint8_t *>(block_ptr_);
}

bool EspnnSharedArena::acquire(const void *user) {
    espnn_et::ScopedLock lock(espnn_et::LockId::kLease);
    if (holder_ != nullptr && holder_ != user) {
        return false;
    }
    holder_ = user;
    return true;
}

void EspnnSharedArena::release(const void *user) {
    espnn_et::ScopedLock lock(espnn_et::LockId::kLease);
    if (holder_ == user) {
        holder_ = nullptr;
    }
}

const void *EspnnSharedArena::holder() const {
    espnn_et::ScopedLock lock(espnn_et::LockId::kLease);
    return holder_;
}
