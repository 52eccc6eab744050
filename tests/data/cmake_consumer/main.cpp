// Loads a .pte with ExecuTorch's own API, runs it with EspNNDelegateBackend registered
// explicitly (the static library's registrar may be dropped by the linker), prints outputs.
//   consumer MODEL.pte [INPUT_0.bin ...]
#include <executorch_espnn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <executorch/extension/data_loader/buffer_data_loader.h>
#include <executorch/extension/memory_allocator/malloc_memory_allocator.h>
#include <executorch/runtime/core/hierarchical_allocator.h>
#include <executorch/runtime/executor/memory_manager.h>
#include <executorch/runtime/executor/method.h>
#include <executorch/runtime/executor/program.h>
#include <executorch/runtime/platform/runtime.h>

namespace et = executorch::runtime;
using executorch::aten::ScalarType;
using executorch::aten::Tensor;
using executorch::aten::TensorImpl;

// A loader that hands out delegate segments 4 bytes off alignment, as an application's own
// loader (say, from external flash into a byte buffer) might: the delegate must cope.
class MisaligningLoader final : public et::DataLoader {
  public:
    MisaligningLoader(et::DataLoader *inner, bool misalign) : inner_(inner), misalign_(misalign) {}
    et::Result<et::FreeableBuffer> load(size_t offset, size_t size, const SegmentInfo &info) const override {
        auto buf = inner_->load(offset, size, info);
        if (!misalign_ || !buf.ok() || info.segment_type != SegmentInfo::Type::Backend) {
            return buf;
        }
        unsigned char *block = static_cast<unsigned char *>(std::aligned_alloc(16, (size + 4 + 15) / 16 * 16));
        std::memcpy(block + 4, buf->data(), size);
        return et::FreeableBuffer(block + 4, size, [](void *, void *data, size_t) {
            std::free(static_cast<unsigned char *>(data) - 4);
        });
    }
    et::Result<size_t> size() const override { return inner_->size(); }

  private:
    et::DataLoader *inner_;
    bool misalign_;
};

static bool read_all(const char *path, std::vector<unsigned char> *out) {
    FILE *f = std::fopen(path, "rb");
    if (f == nullptr) {
        std::fprintf(stderr, "cannot open %s\n", path);
        return false;
    }
    unsigned char chunk[65536];
    size_t n = 0;
    while ((n = std::fread(chunk, 1, sizeof chunk, f)) > 0) {
        out->insert(out->end(), chunk, chunk + n);
    }
    std::fclose(f);
    return true;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: consumer MODEL.pte [INPUT.bin ...]\n");
        return 2;
    }
    et::runtime_init();
    if (executorch_espnn_register_backend() != 0) {
        std::fprintf(stderr, "registration failed\n");
        return 1;
    }
    std::vector<unsigned char> file;
    if (!read_all(argv[1], &file)) {
        return 1;
    }
    // 16-byte aligned copy: delegate segments are 128-aligned inside the file
    void *pte = std::aligned_alloc(16, (file.size() + 15) / 16 * 16);
    std::memcpy(pte, file.data(), file.size());
    executorch::extension::BufferDataLoader buffer_loader(pte, file.size());
    MisaligningLoader loader(&buffer_loader, std::getenv("ESPNN_CONSUMER_MISALIGN") != nullptr);
    auto program = et::Program::load(&loader);
    if (!program.ok()) {
        std::fprintf(stderr, "program load failed: 0x%x\n", static_cast<unsigned>(program.error()));
        return 1;
    }
    auto meta = program->method_meta("forward");
    std::vector<std::vector<uint8_t>> planned(meta->num_memory_planned_buffers());
    std::vector<et::Span<uint8_t>> spans;
    for (size_t i = 0; i < planned.size(); ++i) {
        planned[i].resize(static_cast<size_t>(meta->memory_planned_buffer_size(i).get()));
        spans.emplace_back(planned[i].data(), planned[i].size());
    }
    executorch::extension::MallocMemoryAllocator method_allocator;
    executorch::extension::MallocMemoryAllocator temp_allocator;
    et::HierarchicalAllocator planned_memory({spans.data(), spans.size()});
    et::MemoryManager memory(&method_allocator, &planned_memory, &temp_allocator);
    auto method = program->load_method("forward", &memory);
    if (!method.ok()) {
        char why[512];
        executorch_espnn_last_error(why, sizeof why);
        std::fprintf(stderr, "load_method failed: 0x%x: %s\n", static_cast<unsigned>(method.error()), why);
        return 1;
    }
    std::vector<std::vector<unsigned char>> inputs(meta->num_inputs());
    std::vector<std::vector<TensorImpl::SizesType>> sizes(meta->num_inputs());
    std::vector<std::vector<TensorImpl::DimOrderType>> orders(meta->num_inputs());
    for (size_t i = 0; i < meta->num_inputs(); ++i) {
        auto info = meta->input_tensor_meta(i);
        if (static_cast<int>(i) + 2 < argc) {
            if (!read_all(argv[i + 2], &inputs[i])) {
                return 1;
            }
        } else {
            inputs[i].assign(info->nbytes(), 0);
        }
        if (inputs[i].size() != info->nbytes()) {
            std::fprintf(stderr, "input %zu: %zu bytes, want %zu\n", i, inputs[i].size(), info->nbytes());
            return 1;
        }
        sizes[i].assign(info->sizes().begin(), info->sizes().end());
        orders[i].assign(info->dim_order().begin(), info->dim_order().end());
        TensorImpl impl(info->scalar_type(), static_cast<ssize_t>(sizes[i].size()), sizes[i].data(),
                        inputs[i].data(), orders[i].data());
        const et::Error err = method->set_input(et::EValue(Tensor(&impl)), i);
        if (err != et::Error::Ok) {
            std::fprintf(stderr, "set_input %zu failed: 0x%x\n", i, static_cast<unsigned>(err));
            return 1;
        }
    }
    const et::Error err = method->execute();
    if (err != et::Error::Ok) {
        char why[512];
        executorch_espnn_last_error(why, sizeof why);
        std::fprintf(stderr, "execute failed: 0x%x: %s\n", static_cast<unsigned>(err), why);
        return 1;
    }
    for (size_t i = 0; i < method->outputs_size(); ++i) {
        const Tensor &t = method->get_output(i).toTensor();
        std::printf("output %zu %s [", i, t.scalar_type() == ScalarType::Float ? "float32" : "int8");
        for (ssize_t d = 0; d < t.dim(); ++d) {
            std::printf(d == 0 ? "%d" : ", %d", static_cast<int>(t.size(d)));
        }
        std::printf("]:");
        for (ssize_t k = 0; k < t.numel(); ++k) {
            if (t.scalar_type() == ScalarType::Float) {
                std::printf(" %.9g", static_cast<double>(t.const_data_ptr<float>()[k]));
            } else {
                std::printf(" %d", static_cast<int>(t.const_data_ptr<int8_t>()[k]));
            }
        }
        std::printf("\n");
    }
    executorch_espnn_memory_stats_t stats;
    executorch_espnn_get_memory_stats(&stats);
    std::printf("delegates %llu weights_bytes %llu\n", static_cast<unsigned long long>(stats.delegates),
                static_cast<unsigned long long>(stats.weights_bytes));
    std::free(pte);
    return 0;
}
