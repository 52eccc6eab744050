/*
 * Host-only measurement of a program's memory needs, so generated model headers carry exact
 * byte counts.  The method allocator here replays the bump allocator EspnnModel uses (a
 * 16-byte aligned base) while handing out separately malloc'd blocks, so its total equals
 * what the real pool must hold on a build with the same pointer size.
 */
#include "espnn_host_api.h"

#include "espnn_arena_lease.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#include <executorch/extension/data_loader/buffer_data_loader.h>
#include <executorch/runtime/core/hierarchical_allocator.h>
#include <executorch/runtime/core/memory_allocator.h>
#include <executorch/runtime/executor/memory_manager.h>
#include <executorch/runtime/executor/method.h>
#include <executorch/runtime/core/exec_aten/util/tensor_dimension_limit.h>
#include <executorch/runtime/executor/program.h>
#include <executorch/runtime/kernel/operator_registry.h>
#include <executorch/runtime/platform/runtime.h>

#include "espnn_compat.h"

namespace et = ::executorch::runtime;

namespace {

constexpr size_t kBaseAlign = 16;

size_t align_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

/* Counts like the bump allocator over a 16-aligned pool; keeps every block until destroyed.
 *
 * Method::load resolves each operator's kernel with a TensorMeta list it takes from the temp
 * allocator only when that allocator's size() is at least
 * n_args * (sizeof(TensorMeta) + sizeof(DimOrderType) * kTensorDimensionLimit), else from the
 * method allocator.  Here size() is unbounded, so every list goes to temp; `routing_floor()`
 * records the capacity a real temp pool needs for the same routing, so that the measured
 * method allocator figure holds for it. */
class CountingAllocator final : public et::MemoryAllocator {
  public:
    CountingAllocator() : et::MemoryAllocator(0, nullptr) {}
    ~CountingAllocator() override {
        for (void *p : blocks_) {
            free(p);
        }
    }
    CountingAllocator(const CountingAllocator &) = delete;
    CountingAllocator &operator=(const CountingAllocator &) = delete;

    void *allocate(size_t size, size_t alignment) override {
        if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
            return nullptr;
        }
        /* padding as in a pool whose base is 16-aligned; larger alignments cost at most
         * alignment - 16 more, wherever the pool lands */
        size_t start = align_up(offset_, alignment < kBaseAlign ? alignment : kBaseAlign);
        if (alignment > kBaseAlign) {
            start += alignment - kBaseAlign;
        }
        void *p = aligned_alloc(alignment < kBaseAlign ? kBaseAlign : alignment,
                                align_up(size == 0 ? 1 : size, kBaseAlign));
        if (p == nullptr) {
            return nullptr;
        }
        blocks_.push_back(p);
        if (alignment == alignof(et::TensorMeta) && size > 0 && size % sizeof(et::TensorMeta) == 0) {
            const size_t n_args = size / sizeof(et::TensorMeta);
            const size_t floor =
                n_args * (sizeof(et::TensorMeta) +
                          sizeof(::executorch::aten::DimOrderType) * ::executorch::runtime::kTensorDimensionLimit);
            routing_floor_ = floor > routing_floor_ ? floor : routing_floor_;
        }
        offset_ = start + size;
        if (offset_ > peak_) {
            peak_ = offset_;
        }
        return p;
    }
    void reset() override { offset_ = 0; }
    size_t used_size() const override { return offset_; }
    size_t free_size() const override { return SIZE_MAX / 2; }
    uint32_t size() const override { return UINT32_MAX; }
    size_t peak() const { return peak_; }
    size_t routing_floor() const { return routing_floor_; }

  private:
    std::vector<void *> blocks_;
    size_t routing_floor_ = 0;
    size_t offset_ = 0;
    size_t peak_ = 0;
};

int fail(char *msg, size_t msg_size, int code, const char *what, et::Error err) {
    char detail[256];
    detail[0] = '\0';
    executorch_espnn_last_error(detail, sizeof detail);
    snprintf(msg, msg_size, "%s failed with %s (0x%x)%s%s", what, et::to_string(err), static_cast<unsigned>(err),
             detail[0] != '\0' ? ": " : "", detail);
    return code;
}

} // namespace

extern "C" int executorch_espnn_measure_pte(const void *pte, size_t size, const char *method,
                                            executorch_espnn_pte_sizes_t *out, char *msg, size_t msg_size) {
    if (msg != nullptr && msg_size > 0) {
        msg[0] = '\0';
    }
    if (pte == nullptr || out == nullptr || msg == nullptr) {
        if (msg != nullptr) {
            snprintf(msg, msg_size, "measure: NULL argument");
        }
        return -1;
    }
    memset(out, 0, sizeof *out);
    out->pointer_bytes = static_cast<uint32_t>(sizeof(void *));
    const char *name = method != nullptr ? method : "forward";
    et::runtime_init();
    if (executorch_espnn_register_backend() != 0) {
        return fail(msg, msg_size, static_cast<int>(et::Error::Internal), "registering the backend",
                    et::Error::Internal);
    }
    ::executorch::extension::BufferDataLoader loader(pte, size);
    auto program = et::Program::load(&loader, et::Program::Verification::InternalConsistency);
    if (!program.ok()) {
        return fail(msg, msg_size, static_cast<int>(program.error()), "loading the program", program.error());
    }
    auto meta = program->method_meta(name);
    if (!meta.ok()) {
        snprintf(msg, msg_size, "the program has no method '%.40s'", name);
        return static_cast<int>(meta.error());
    }
    const size_t n_planned = meta->num_memory_planned_buffers();
    std::vector<std::vector<uint8_t>> buffers(n_planned);
    std::vector<et::Span<uint8_t>> spans(n_planned);
    for (size_t i = 0; i < n_planned; ++i) {
        const size_t bytes = static_cast<size_t>(meta->memory_planned_buffer_size(i).get());
        buffers[i].assign(bytes == 0 ? 1 : bytes, 0);
        spans[i] = et::Span<uint8_t>(buffers[i].data(), bytes);
        /* as EspnnModel carves its pool: each buffer 16-aligned, no padding after the last */
        out->planned_bytes = align_up(out->planned_bytes, kBaseAlign) + bytes;
    }
    out->n_planned_buffers = static_cast<uint32_t>(n_planned);

    CountingAllocator method_allocator;
    CountingAllocator temp_allocator;
    et::HierarchicalAllocator planned(et::Span<et::Span<uint8_t>>(spans.data(), spans.size()));
    et::MemoryManager memory(&method_allocator, &planned, &temp_allocator);

    executorch_espnn_memory_stats_t before;
    executorch_espnn_memory_stats_t after;
    executorch_espnn_get_memory_stats(&before);
    executorch_espnn_clear_last_error();
    {
        /* a sizing lease: the delegates allocate their own arenas here, and the lease records
         * the largest, the one arena EspnnModel lends them all (espnn_arena_lease.h) */
        const void *lease_key = static_cast<et::MemoryAllocator *>(&method_allocator);
        if (!espnn_et::arena_lease_open(lease_key, nullptr, 0)) {
            snprintf(msg, msg_size, "measure: too many programs are loading at the same time");
            return -1;
        }
        auto loaded = program->load_method(name, &memory);
        const size_t largest_arena = espnn_et::arena_lease_close(lease_key);
        if (!loaded.ok()) {
            return fail(msg, msg_size, static_cast<int>(loaded.error()), "loading the method", loaded.error());
        }
        out->method_allocator_bytes = method_allocator.peak();
        executorch_espnn_get_memory_stats(&after);
        out->n_delegates = static_cast<uint32_t>(after.delegates - before.delegates);
        out->delegate_handle_bytes = after.handle_bytes - before.handle_bytes;
        out->delegate_state_bytes = after.state_bytes - before.state_bytes;
        out->delegate_arena_bytes = largest_arena;
        out->delegate_weights_bytes = after.weights_bytes - before.weights_bytes;
        for (size_t i = 0; i < loaded->inputs_size(); ++i) {
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif
            (void)loaded->mutable_input(i); /* zero-filled planned storage counts as set */
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
        }
        const et::Error err = loaded->execute();
        if (err != et::Error::Ok) {
            return fail(msg, msg_size, static_cast<int>(err), "running the method once on zero inputs", err);
        }
        const size_t temp = temp_allocator.peak() > temp_allocator.routing_floor() ? temp_allocator.peak()
                                                                                    : temp_allocator.routing_floor();
        out->temp_allocator_bytes = align_up(temp, kBaseAlign);
    }
    return 0;
}

extern "C" const char *executorch_espnn_package_version(void) { return espnn_et::runtime_package_version(); }

extern "C" const char *executorch_espnn_executorch_version(void) { return espnn_et::runtime_executorch_version(); }
