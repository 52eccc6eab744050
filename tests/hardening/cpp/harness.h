// Shared by the hardening C++ programs: a .pte held in a 16-aligned buffer, and one Method
// instance with its own planned buffers, allocators and deterministic inputs.
#pragma once

#include <executorch_espnn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include <executorch/extension/data_loader/buffer_data_loader.h>
#include <executorch/extension/memory_allocator/malloc_memory_allocator.h>
#include <executorch/runtime/core/hierarchical_allocator.h>
#include <executorch/runtime/executor/memory_manager.h>
#include <executorch/runtime/executor/method.h>
#include <executorch/runtime/executor/program.h>
#include <executorch/runtime/platform/runtime.h>

namespace hardening {

namespace et = executorch::runtime;
using executorch::aten::ScalarType;
using executorch::aten::Tensor;
using executorch::aten::TensorImpl;

inline std::string last_error() {
    char why[512];
    executorch_espnn_last_error(why, sizeof why);
    return why;
}

/* The whole file in a 16-byte aligned buffer (delegate segments are 128-aligned in it). */
class Pte {
  public:
    bool read(const char *path) {
        FILE *f = std::fopen(path, "rb");
        if (f == nullptr) {
            std::fprintf(stderr, "cannot open %s\n", path);
            return false;
        }
        std::vector<unsigned char> bytes;
        unsigned char chunk[65536];
        size_t n = 0;
        while ((n = std::fread(chunk, 1, sizeof chunk, f)) > 0) {
            bytes.insert(bytes.end(), chunk, chunk + n);
        }
        std::fclose(f);
        size_ = bytes.size();
        data_ = static_cast<unsigned char *>(std::aligned_alloc(16, (size_ + 15) / 16 * 16));
        std::memcpy(data_, bytes.data(), size_);
        loader_ = std::make_unique<executorch::extension::BufferDataLoader>(data_, size_);
        auto program = et::Program::load(loader_.get());
        if (!program.ok()) {
            std::fprintf(stderr, "%s: Program::load failed 0x%x\n", path,
                         static_cast<unsigned>(program.error()));
            return false;
        }
        program_ = std::make_unique<et::Program>(std::move(program.get()));
        return true;
    }
    ~Pte() { std::free(data_); }
    et::Program &program() { return *program_; }

  private:
    unsigned char *data_ = nullptr;
    size_t size_ = 0;
    std::unique_ptr<executorch::extension::BufferDataLoader> loader_;
    std::unique_ptr<et::Program> program_;
};

/* Deterministic input values for instance `seed`: floats in [-2, 2), or raw int8. */
inline void fill(std::vector<unsigned char> &buf, ScalarType type, uint32_t seed) {
    uint32_t s = seed * 2654435761u + 12345u;
    if (type == ScalarType::Float) {
        float *f = reinterpret_cast<float *>(buf.data());
        for (size_t i = 0; i < buf.size() / 4; ++i) {
            s = s * 1664525u + 1013904223u;
            f[i] = static_cast<float>(static_cast<int32_t>(s >> 8) % 4000) / 1000.0f;
        }
    } else {
        for (auto &b : buf) {
            s = s * 1664525u + 1013904223u;
            b = static_cast<unsigned char>(s >> 24);
        }
    }
}

/* One Method of a program with everything it needs.  `method_allocator` may be replaced
 * (failure injection) before load(). */
class Instance {
  public:
    explicit Instance(Pte &pte, et::MemoryAllocator *method_allocator = nullptr)
        : pte_(pte), method_allocator_(method_allocator ? method_allocator : &own_allocator_) {}

    et::Error load() {
        auto meta = pte_.program().method_meta("forward");
        if (!meta.ok()) {
            return meta.error();
        }
        planned_.assign(meta->num_memory_planned_buffers(), {});
        spans_.clear();
        for (size_t i = 0; i < planned_.size(); ++i) {
            planned_[i].resize(static_cast<size_t>(meta->memory_planned_buffer_size(i).get()));
            spans_.emplace_back(planned_[i].data(), planned_[i].size());
        }
        planned_memory_ = std::make_unique<et::HierarchicalAllocator>(
            et::Span<et::Span<uint8_t>>(spans_.data(), spans_.size()));
        memory_ = std::make_unique<et::MemoryManager>(method_allocator_, planned_memory_.get(),
                                                      &temp_allocator_);
        auto method = pte_.program().load_method("forward", memory_.get());
        if (!method.ok()) {
            return method.error();
        }
        method_ = std::make_unique<et::Method>(std::move(method.get()));
        inputs_.assign(meta->num_inputs(), {});
        sizes_.assign(meta->num_inputs(), {});
        orders_.assign(meta->num_inputs(), {});
        types_.assign(meta->num_inputs(), ScalarType::Float);
        for (size_t i = 0; i < meta->num_inputs(); ++i) {
            auto info = meta->input_tensor_meta(i);
            inputs_[i].assign(info->nbytes(), 0);
            sizes_[i].assign(info->sizes().begin(), info->sizes().end());
            orders_[i].assign(info->dim_order().begin(), info->dim_order().end());
            types_[i] = info->scalar_type();
        }
        return et::Error::Ok;
    }

    /* Write every input (the plan may reuse input bytes), run, copy the outputs out. */
    et::Error run(uint32_t seed, std::vector<std::vector<unsigned char>> *outputs) {
        for (size_t i = 0; i < inputs_.size(); ++i) {
            fill(inputs_[i], types_[i], seed + static_cast<uint32_t>(i));
            TensorImpl impl(types_[i], static_cast<ssize_t>(sizes_[i].size()), sizes_[i].data(),
                            inputs_[i].data(), orders_[i].data());
            const et::Error err = method_->set_input(et::EValue(Tensor(&impl)), i);
            if (err != et::Error::Ok) {
                return err;
            }
        }
        const et::Error err = method_->execute();
        if (err != et::Error::Ok) {
            return err;
        }
        outputs->clear();
        for (size_t i = 0; i < method_->outputs_size(); ++i) {
            const Tensor &t = method_->get_output(i).toTensor();
            const auto *p = static_cast<const unsigned char *>(t.const_data_ptr());
            outputs->emplace_back(p, p + t.nbytes());
        }
        return et::Error::Ok;
    }

    void unload() { method_.reset(); }

  private:
    Pte &pte_;
    executorch::extension::MallocMemoryAllocator own_allocator_;
    executorch::extension::MallocMemoryAllocator temp_allocator_;
    et::MemoryAllocator *method_allocator_;
    std::vector<std::vector<uint8_t>> planned_;
    std::vector<et::Span<uint8_t>> spans_;
    std::unique_ptr<et::HierarchicalAllocator> planned_memory_;
    std::unique_ptr<et::MemoryManager> memory_;
    std::unique_ptr<et::Method> method_;
    std::vector<std::vector<unsigned char>> inputs_;
    std::vector<std::vector<TensorImpl::SizesType>> sizes_;
    std::vector<std::vector<TensorImpl::DimOrderType>> orders_;
    std::vector<ScalarType> types_;
};

} // namespace hardening
