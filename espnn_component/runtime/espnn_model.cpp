/*
 * EspnnModel: an embedded .pte, loaded with a BufferDataLoader over the embedded bytes (no
 * copy) into pools that the generated description sizes exactly and the memory policy
 * places.  Nothing is allocated by invoke().
 */
#include "executorch_espnn.h"

#include <cmath>
#include <new>
#include <optional>
#include <utility>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <executorch/extension/data_loader/buffer_data_loader.h>
#include <executorch/runtime/core/hierarchical_allocator.h>
#include <executorch/runtime/core/memory_allocator.h>
#include <executorch/runtime/executor/memory_manager.h>
#include <executorch/runtime/executor/method.h>
#include <executorch/runtime/executor/program.h>
#include <executorch/runtime/platform/clock.h>
#include <executorch/runtime/platform/platform.h>
#include <executorch/runtime/platform/runtime.h>

#include "espnn_arena_lease.h"
#include "espnn_compat.h"
#include "espnn_format.h"
#include "espnn_mem.h"
#include "espnn_model_partition.h"
#include "espnn_profile_print.h"
#include "espnn_profile_sink.h"

namespace et = ::executorch::runtime;
using ::executorch::aten::ScalarType;
using ::executorch::extension::BufferDataLoader;

namespace {

constexpr size_t kPoolAlign = 16;

size_t align_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

struct Slot {
    void *tensor = nullptr; /* the program tensor's storage */
    size_t numel = 0;
    uint8_t dtype = 0; /* ESPNN_DTYPE_INT8 or ESPNN_DTYPE_FLOAT32 */
    float scale = 0.0f;
    int32_t zero_point = 0;
    espnn_mem_block_t staging{}; /* the other-dtype view, allocated on first request */
    bool use_staging = false;
};

int8_t quantize_one(float x, float inv_scale, int32_t zero_point) {
    /* ExecuTorch's quantize_per_tensor: round half to even of x * (1/scale), then + zp */
    if (std::isnan(x)) {
        return static_cast<int8_t>(zero_point);
    }
    float v = std::nearbyint(x * inv_scale);
    if (v > 1000.0f) {
        v = 1000.0f;
    } else if (v < -1000.0f) {
        v = -1000.0f;
    }
    int32_t q = static_cast<int32_t>(v) + zero_point;
    q = q < -128 ? -128 : (q > 127 ? 127 : q);
    return static_cast<int8_t>(q);
}

void quantize(const float *in, int8_t *out, size_t n, float scale, int32_t zero_point) {
    const float inv = 1.0f / scale;
    for (size_t i = 0; i < n; ++i) {
        out[i] = quantize_one(in[i], inv, zero_point);
    }
}

void dequantize(const int8_t *in, float *out, size_t n, float scale, int32_t zero_point) {
    for (size_t i = 0; i < n; ++i) {
        out[i] = static_cast<float>(static_cast<int32_t>(in[i]) - zero_point) * scale;
    }
}

/* The bytes of the view buffer input<T>()/output<T>() allocates on an I/O tensor: none in the
 * tensor's own dtype (its storage is returned), numel x element size of the other one.  The one
 * rule the RAM bill counts I/O views by (executorch_espnn.program_io.view_bytes mirrors it). */
size_t view_bytes(size_t numel, uint8_t tensor_dtype, uint8_t wanted_dtype) {
    if (wanted_dtype == tensor_dtype) {
        return 0;
    }
    return numel * (wanted_dtype == ESPNN_DTYPE_FLOAT32 ? sizeof(float) : 1u);
}

const char *dtype_text(uint8_t dtype) {
    return dtype == ESPNN_DTYPE_INT8 ? "int8" : (dtype == ESPNN_DTYPE_FLOAT32 ? "float32" : "unsupported");
}

uint8_t espnn_dtype_of(ScalarType t) {
    if (t == ScalarType::Char) {
        return ESPNN_DTYPE_INT8;
    }
    if (t == ScalarType::Float) {
        return ESPNN_DTYPE_FLOAT32;
    }
    return 0;
}

/* A pool that remembers the highest offset handed out, for the "too small" messages. */
class PoolAllocator final : public et::MemoryAllocator {
  public:
    PoolAllocator(uint32_t size, uint8_t *base) : et::MemoryAllocator(size, base) {}
    void *allocate(size_t size, size_t alignment) override {
        void *p = et::MemoryAllocator::allocate(size, alignment);
        if (p == nullptr) {
            failed_request_ = size;
        } else if (used_size() > peak_) {
            peak_ = used_size();
        }
        return p;
    }
    size_t peak() const { return peak_; }
    size_t failed_request() const { return failed_request_; }

  private:
    size_t peak_ = 0;
    size_t failed_request_ = 0;
};

void runtime_init_once() {
    static const bool done = [] {
        et::runtime_init();
        return true;
    }();
    (void)done;
}

void free_block(espnn_mem_block_t *block) {
    if (block->ptr != nullptr) {
        espnn_mem_free(*block);
    }
    *block = espnn_mem_block_t{};
}

/* Owns one block of espnn_mem_alloc (a pool) and frees it when destroyed, so that a load that
 * stops half way releases what it took.  Move-only: two owners would free twice. */
class OwnedBlock {
  public:
    OwnedBlock() = default;
    explicit OwnedBlock(espnn_mem_block_t block) : block_(block) {}
    ~OwnedBlock() { free_block(&block_); }
    OwnedBlock(OwnedBlock &&other) noexcept : block_(other.block_) { other.block_ = espnn_mem_block_t{}; }
    OwnedBlock &operator=(OwnedBlock &&other) noexcept {
        if (this != &other) {
            free_block(&block_);
            block_ = other.block_;
            other.block_ = espnn_mem_block_t{};
        }
        return *this;
    }
    OwnedBlock(const OwnedBlock &) = delete;
    OwnedBlock &operator=(const OwnedBlock &) = delete;

    void *ptr() const { return block_.ptr; }

  private:
    espnn_mem_block_t block_{};
};

} // namespace

struct EspnnModel::Impl {
    espnn_mem_block_t self{}; /* the block this struct lives in: end() frees it after ~Impl */
    /* the pools, freed by ~Impl after the ExecuTorch objects that end() resets first (planned,
     * temp, method: the reverse of their order here) */
    OwnedBlock method_pool;
    OwnedBlock temp_pool;
    OwnedBlock planned_pool;
    OwnedBlock arena_pool; /* the one delegate arena all the delegates use (none with a shared arena) */
    OwnedBlock io_pool;    /* unplanned program I/O that cannot live in the arena (see bind_slots) */
    uint8_t *arena = nullptr; /* the arena the delegates use: our own or the shared one */
    BufferDataLoader loader;
    std::optional<et::Program> program;
    std::optional<PoolAllocator> method_allocator;
    std::optional<PoolAllocator> temp_allocator;
    std::optional<et::HierarchicalAllocator> planned;
    std::optional<et::MemoryManager> memory;
    std::optional<et::Method> method;
    et::Span<uint8_t> *planned_spans = nullptr; /* in the same block as this struct */
    size_t n_planned = 0;
    Slot *inputs = nullptr;
    Slot *outputs = nullptr;
    /* what load() reads: the header's description, or (storage = partition) the mapped
     * image's bytes and sizes with the header's I/O */
    espnn_pte_desc_t desc{};
    espnn_partition::OwnedMapping mapping; /* end() closes it last, after the program that read it */
    char sha256[65] = {0};
#if ESPNN_PROFILE
    /* the last invoke()'s profile (begin() allocates the buffers when the header has a table) */
    OwnedBlock profile_block;
    espnn_et::ProfileSink sink;
    espnn_profile_run_t run{};
#endif

    Impl(const void *data, size_t size) : loader(data, size) {}
};

EspnnModel::EspnnModel(const espnn_pte_desc_t &desc) : desc_(desc) { error_[0] = '\0'; }

EspnnModel::EspnnModel(const espnn_pte_desc_t &desc, EspnnSharedArena &arena) : desc_(desc), shared_(&arena) {
    error_[0] = '\0';
}

EspnnModel::~EspnnModel() { end(); }

void EspnnModel::fail(const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    vsnprintf(error_, sizeof error_, fmt, args);
    va_end(args);
}

const espnn_pte_tensor_t *EspnnModel::input_info(size_t index) const {
    const espnn_pte_desc_t &d = impl_ != nullptr ? impl_->desc : desc_; /* partition: the image's quantization */
    return (d.inputs != nullptr && index < d.n_inputs) ? &d.inputs[index] : nullptr;
}

const espnn_pte_tensor_t *EspnnModel::output_info(size_t index) const {
    const espnn_pte_desc_t &d = impl_ != nullptr ? impl_->desc : desc_;
    return (d.outputs != nullptr && index < d.n_outputs) ? &d.outputs[index] : nullptr;
}

static size_t numel_of(const espnn_pte_tensor_t *t) {
    if (t == nullptr) {
        return 0;
    }
    size_t n = 1;
    for (uint8_t i = 0; i < t->rank && i < 4; ++i) {
        n *= t->dims[i];
    }
    return n;
}

size_t EspnnModel::input_numel(size_t index) const { return numel_of(input_info(index)); }

size_t EspnnModel::output_numel(size_t index) const { return numel_of(output_info(index)); }

void EspnnModel::end() {
    if (impl_ == nullptr) {
        return;
    }
    Impl *impl = impl_;
    impl_ = nullptr;
    /* reverse order of construction: the Method first (it destroys the delegates) */
    impl->method.reset();
    impl->memory.reset();
    impl->planned.reset();
    impl->temp_allocator.reset();
    impl->method_allocator.reset();
    impl->program.reset();
    for (size_t i = 0; i < desc_.n_inputs; ++i) {
        free_block(&impl->inputs[i].staging);
    }
    for (size_t i = 0; i < desc_.n_outputs; ++i) {
        free_block(&impl->outputs[i].staging);
    }
    /* unmapped when this returns, after the state block that held the program is freed */
    espnn_partition::OwnedMapping mapping = std::move(impl->mapping);
    espnn_mem_block_t self = impl->self;
    impl->~Impl(); /* frees the pools */
    free_block(&self);
}

/* Copies the backend's last message after "<what>: <error name>" so a user sees why. */
static void describe_failure(char *out, size_t size, const char *what, et::Error err) {
    char detail[256];
    detail[0] = '\0';
    executorch_espnn_last_error(detail, sizeof detail);
    if (detail[0] != '\0') {
        snprintf(out, size, "%s failed with %s (0x%x): %s", what, et::to_string(err),
                 static_cast<unsigned>(err), detail);
    } else {
        snprintf(out, size, "%s failed with %s (0x%x); the ExecuTorch log above has the details", what,
                 et::to_string(err), static_cast<unsigned>(err));
    }
}

namespace {

/* ExecuTorch's small fixed maximum of memory ids: the number of planned buffers is only known
 * after the program is parsed, when the state block already exists. */
constexpr size_t kMaxPlanned = 16;

/* Where begin() finds the program: the header's description, or (custom_executorch_storage =
 * partition) the mapped image's, with the image's I/O descriptions and digest kept here until
 * the state block exists.  The mapping is unmapped on any return before the model takes it. */
struct Source {
    espnn_pte_desc_t mapped{};
    espnn_partition::OwnedMapping mapping;
    espnn_pte_tensor_t io_copy[ESPNN_IMAGE_MAX_TENSORS]; /* copied into the state block */
    char sha_hex[65];
    bool in_partition = false;
};

/* The description's version stamps: a header from another executorch-espnn stops here. */
bool check_versions(const espnn_pte_desc_t &desc, char *msg, size_t msg_size) {
    if (desc.desc_version != ESPNN_PTE_DESC_VERSION) {
        snprintf(msg, msg_size,
                 "model header description version %u, this runtime reads version %d: regenerate model_pte.h "
                 "with the installed executorch-espnn",
                 static_cast<unsigned>(desc.desc_version), ESPNN_PTE_DESC_VERSION);
        return false;
    }
    return espnn_et::check_desc_versions(desc, msg, msg_size);
}

/* The description of the program to load: `desc` itself, or from a partition the mapped image
 * (checked against this firmware) described as an embedded model.  Null on failure. */
const espnn_pte_desc_t *open_source(const espnn_pte_desc_t &desc, Source *src, char *msg, size_t msg_size) {
    src->in_partition = desc.storage == ESPNN_STORAGE_PARTITION;
    if (!src->in_partition) {
        return &desc;
    }
    const size_t n_io = static_cast<size_t>(desc.n_inputs) + desc.n_outputs;
    if ((desc.n_inputs > 0 && desc.inputs == nullptr) || (desc.n_outputs > 0 && desc.outputs == nullptr) ||
        n_io > ESPNN_IMAGE_MAX_TENSORS) {
        snprintf(msg, msg_size, "model header lists %u inputs and %u outputs without their descriptions",
                 static_cast<unsigned>(desc.n_inputs), static_cast<unsigned>(desc.n_outputs));
        return nullptr;
    }
    if (!espnn_partition::open(desc, src->mapping.get(), &src->mapped, src->io_copy, src->sha_hex, msg,
                               msg_size)) {
        return nullptr;
    }
    return &src->mapped;
}

/* What must hold of the program's description (and the shared arena) before anything is
 * allocated. */
bool check_program(const espnn_pte_desc_t &d, EspnnSharedArena *shared, char *msg, size_t msg_size) {
    if (d.data == nullptr || d.size == 0) {
        snprintf(msg, msg_size, "model header has no program bytes");
        return false;
    }
    if ((reinterpret_cast<uintptr_t>(d.data) % kPoolAlign) != 0) {
        snprintf(msg, msg_size,
                 "program bytes at %p are not 16-byte aligned: the generated data must keep its .balign 16",
                 static_cast<const void *>(d.data));
        return false;
    }
    if ((d.n_inputs > 0 && d.inputs == nullptr) || (d.n_outputs > 0 && d.outputs == nullptr)) {
        snprintf(msg, msg_size, "model header lists %u inputs and %u outputs without their descriptions",
                 static_cast<unsigned>(d.n_inputs), static_cast<unsigned>(d.n_outputs));
        return false;
    }
    if (shared != nullptr && d.arena_bytes > shared->size()) {
        snprintf(msg, msg_size,
                 "the model's delegate arena of %u bytes exceeds the shared arena of %lu bytes: size the "
                 "EspnnSharedArena with ESPNN_SHARED_ARENA_BYTES of the build's espnn_models.h (the largest "
                 "model's arena)",
                 static_cast<unsigned>(d.arena_bytes), static_cast<unsigned long>(shared->size()));
        return false;
    }
    return shared == nullptr || d.arena_bytes == 0 || shared->data(msg, msg_size) != nullptr;
}

bool register_backend(char *msg, size_t msg_size) {
    runtime_init_once();
    const int reg = executorch_espnn_register_backend();
    if (reg != 0) {
        char detail[256];
        executorch_espnn_last_error(detail, sizeof detail);
        snprintf(msg, msg_size, "cannot register EspNNDelegateBackend (error 0x%x): %s", static_cast<unsigned>(reg),
                 detail);
        return false;
    }
    return true;
}

/* One STATE block holds Impl, the planned-buffer spans and the I/O slots (from a partition
 * also the image's I/O descriptions and digest, and the mapping moves into it).  Null on
 * failure, with `src` still owning the mapping. */
EspnnModel::Impl *create_impl(const espnn_pte_desc_t &d, Source *src, char *msg, size_t msg_size) {
    using Impl = EspnnModel::Impl;
    const size_t n_io = static_cast<size_t>(d.n_inputs) + d.n_outputs;
    const size_t spans_at = align_up(sizeof(Impl), alignof(et::Span<uint8_t>));
    const size_t slots_at = align_up(spans_at + kMaxPlanned * sizeof(et::Span<uint8_t>), alignof(Slot));
    const size_t tensors_at = align_up(slots_at + n_io * sizeof(Slot), alignof(espnn_pte_tensor_t));
    const size_t self_bytes = tensors_at + (src->in_partition ? n_io * sizeof(espnn_pte_tensor_t) : 0);
    espnn_mem_block_t self =
        espnn_mem_alloc(ESPNN_MEM_STATE, self_bytes, kPoolAlign, "EspnnModel state", msg, msg_size);
    if (self.ptr == nullptr) {
        return nullptr;
    }
    Impl *impl = new (self.ptr) Impl(d.data, d.size);
    impl->self = self;
    uint8_t *base = static_cast<uint8_t *>(self.ptr);
    impl->planned_spans = new (base + spans_at) et::Span<uint8_t>[kMaxPlanned];
    impl->inputs = new (base + slots_at) Slot[d.n_inputs + d.n_outputs];
    impl->outputs = impl->inputs + d.n_inputs;
    impl->desc = d;
    if (src->in_partition) {
        espnn_pte_tensor_t *own = reinterpret_cast<espnn_pte_tensor_t *>(base + tensors_at);
        for (size_t i = 0; i < n_io; ++i) {
            new (own + i) espnn_pte_tensor_t(src->io_copy[i]);
        }
        impl->desc.inputs = own;
        impl->desc.outputs = own + d.n_inputs;
        memcpy(impl->sha256, src->sha_hex, sizeof impl->sha256);
        impl->desc.sha256 = impl->sha256;
        impl->mapping = std::move(src->mapping);
    }
    return impl;
}

} // namespace

bool EspnnModel::begin() {
    if (impl_ != nullptr) {
        return true;
    }
    error_[0] = '\0';
    char msg[320];
    Source src;
    const espnn_pte_desc_t *d = check_versions(desc_, msg, sizeof msg) ? open_source(desc_, &src, msg, sizeof msg)
                                                                        : nullptr;
    if (d == nullptr || !check_program(*d, shared_, msg, sizeof msg) || !register_backend(msg, sizeof msg)) {
        fail("%s", msg);
        return false;
    }
    impl_ = create_impl(*d, &src, msg, sizeof msg);
    if (impl_ == nullptr || !load(msg, sizeof msg)) {
        fail("%s", msg);
        end(); /* releases what load() took, and the mapping */
        return false;
    }
    return true;
}

namespace {

/* The method's inputs and outputs against the header's: a header and a .pte of different
 * builds stop here. */
bool check_io(const et::MethodMeta &meta, const espnn_pte_desc_t &d, char *msg, size_t msg_size) {
    if (meta.num_inputs() != d.n_inputs || meta.num_outputs() != d.n_outputs) {
        snprintf(msg, msg_size,
                 "the embedded program has %lu inputs and %lu outputs, model_pte.h declares %u and %u: "
                 "the header and the .pte come from different builds",
                 static_cast<unsigned long>(meta.num_inputs()), static_cast<unsigned long>(meta.num_outputs()),
                 static_cast<unsigned>(d.n_inputs), static_cast<unsigned>(d.n_outputs));
        return false;
    }
    for (size_t k = 0; k < d.n_inputs + d.n_outputs; ++k) {
        const bool is_output = k >= d.n_inputs;
        const size_t i = is_output ? k - d.n_inputs : k;
        const espnn_pte_tensor_t &want = is_output ? d.outputs[i] : d.inputs[i];
        auto info = is_output ? meta.output_tensor_meta(i) : meta.input_tensor_meta(i);
        if (!info.ok()) {
            snprintf(msg, msg_size, "%s %lu of the program is not a tensor", is_output ? "output" : "input",
                     static_cast<unsigned long>(i));
            return false;
        }
        const auto sizes = info->sizes();
        bool same = espnn_dtype_of(info->scalar_type()) == want.dtype && sizes.size() == want.rank;
        for (size_t j = 0; same && j < sizes.size(); ++j) {
            same = sizes[j] >= 0 && static_cast<uint32_t>(sizes[j]) == want.dims[j];
        }
        if (!same) {
            snprintf(msg, msg_size,
                     "%s %lu of the program (ScalarType %d, rank %lu) does not match model_pte.h (%s, rank %u): "
                     "the header and the .pte come from different builds",
                     is_output ? "output" : "input", static_cast<unsigned long>(i),
                     static_cast<int>(info->scalar_type()), static_cast<unsigned long>(sizes.size()),
                     dtype_text(want.dtype), static_cast<unsigned>(want.rank));
            return false;
        }
    }
    return true;
}

/* The planned buffers: the one PLANNED pool, carved in the program's order. */
bool plan_buffers(EspnnModel::Impl &impl, const et::MethodMeta &meta, char *msg, size_t msg_size) {
    const espnn_pte_desc_t &d = impl.desc;
    const size_t n_planned = meta.num_memory_planned_buffers();
    if (n_planned > kMaxPlanned) {
        snprintf(msg, msg_size, "the program has %lu memory-planned buffers, EspnnModel supports 16",
                 static_cast<unsigned long>(n_planned));
        return false;
    }
    size_t planned_need = 0;
    for (size_t i = 0; i < n_planned; ++i) {
        auto size = meta.memory_planned_buffer_size(i);
        if (!size.ok() || size.get() < 0) {
            snprintf(msg, msg_size, "cannot read the size of planned buffer %lu", static_cast<unsigned long>(i));
            return false;
        }
        /* each buffer starts 16-aligned; the last one needs no padding after it */
        planned_need = align_up(planned_need, kPoolAlign) + static_cast<size_t>(size.get());
    }
    if (planned_need > d.planned_bytes) {
        snprintf(msg, msg_size,
                 "the program's planned buffers need %lu bytes, model_pte.h declares planned_bytes %u: "
                 "the header and the .pte come from different builds",
                 static_cast<unsigned long>(planned_need), static_cast<unsigned>(d.planned_bytes));
        return false;
    }
    if (d.planned_bytes > 0) {
        impl.planned_pool = OwnedBlock(espnn_mem_alloc(ESPNN_MEM_PLANNED, d.planned_bytes, kPoolAlign,
                                                       "ExecuTorch planned buffers", msg, msg_size));
        if (impl.planned_pool.ptr() == nullptr) {
            return false;
        }
    }
    uint8_t *cursor = static_cast<uint8_t *>(impl.planned_pool.ptr());
    for (size_t i = 0; i < n_planned; ++i) {
        const size_t bytes = static_cast<size_t>(meta.memory_planned_buffer_size(i).get());
        impl.planned_spans[i] = et::Span<uint8_t>(cursor, bytes);
        cursor += align_up(bytes, kPoolAlign);
    }
    impl.n_planned = n_planned;
    return true;
}

/* The method and temp pools, and the allocators and memory manager over the three pools. */
bool make_allocators(EspnnModel::Impl &impl, char *msg, size_t msg_size) {
    const espnn_pte_desc_t &d = impl.desc;
    if (d.method_allocator_bytes > 0) {
        impl.method_pool = OwnedBlock(espnn_mem_alloc(ESPNN_MEM_STATE, d.method_allocator_bytes, kPoolAlign,
                                                      "ExecuTorch method allocator", msg, msg_size));
        if (impl.method_pool.ptr() == nullptr) {
            return false;
        }
    }
    if (d.temp_allocator_bytes > 0) {
        impl.temp_pool = OwnedBlock(espnn_mem_alloc(ESPNN_MEM_PLANNED, d.temp_allocator_bytes, kPoolAlign,
                                                    "ExecuTorch temp allocator", msg, msg_size));
        if (impl.temp_pool.ptr() == nullptr) {
            return false;
        }
    }
    impl.method_allocator.emplace(d.method_allocator_bytes, static_cast<uint8_t *>(impl.method_pool.ptr()));
    /* a zero-capacity temp allocator (not none): without one ExecuTorch falls back to the
     * PAL heap, and the description says how much temp memory the kernels need */
    impl.temp_allocator.emplace(d.temp_allocator_bytes, static_cast<uint8_t *>(impl.temp_pool.ptr()));
    impl.planned.emplace(et::Span<et::Span<uint8_t>>(impl.planned_spans, impl.n_planned));
    impl.memory.emplace(&*impl.method_allocator, &*impl.planned, &*impl.temp_allocator);
    return true;
}

/* Why load_method failed: a pool too small (which one, by how much), else the backend's word. */
void describe_load_failure(const EspnnModel::Impl &impl, const char *method_name, et::Error err, char *msg,
                           size_t msg_size) {
    const espnn_pte_desc_t &d = impl.desc;
    if (err == et::Error::MemoryAllocationFailed && impl.method_allocator->failed_request() > 0) {
        snprintf(msg, msg_size,
                 "loading method '%.40s': the method allocator pool of %u bytes (model_pte.h "
                 "method_allocator_bytes) is too small for a request of %lu bytes after %lu used",
                 method_name, static_cast<unsigned>(d.method_allocator_bytes),
                 static_cast<unsigned long>(impl.method_allocator->failed_request()),
                 static_cast<unsigned long>(impl.method_allocator->used_size()));
    } else if (err == et::Error::MemoryAllocationFailed && impl.temp_allocator->failed_request() > 0) {
        snprintf(msg, msg_size,
                 "loading method '%.40s': the temp allocator pool of %u bytes (model_pte.h "
                 "temp_allocator_bytes) is too small for a request of %lu bytes",
                 method_name, static_cast<unsigned>(d.temp_allocator_bytes),
                 static_cast<unsigned long>(impl.temp_allocator->failed_request()));
    } else {
        char what[64];
        snprintf(what, sizeof what, "loading method '%.40s'", method_name);
        describe_failure(msg, msg_size, what, err);
    }
}

/* The method, its delegates initialised, all of them lent ONE arena for the load: the shared
 * one, or our own block of the description's arena_bytes (the largest partition's: every
 * delegate gets the same bytes, espnn_arena_lease.h). */
bool load_method(EspnnModel::Impl &impl, EspnnSharedArena *shared, const char *method_name, char *msg,
                 size_t msg_size) {
    executorch_espnn_clear_last_error();
    /* keyed by our method allocator, the runtime allocator ExecuTorch hands the delegates' init */
    const void *lease_key = static_cast<et::MemoryAllocator *>(&*impl.method_allocator);
    if (impl.desc.arena_bytes > 0) {
        uint8_t *arena = nullptr;
        size_t bytes = 0;
        if (shared != nullptr) {
            arena = shared->data(msg, msg_size);
            bytes = shared->size();
        } else {
            bytes = static_cast<size_t>(impl.desc.arena_bytes);
            impl.arena_pool = OwnedBlock(espnn_mem_alloc(ESPNN_MEM_ARENA, bytes, kPoolAlign,
                                                         "EspNN delegate arena", msg, msg_size));
            arena = static_cast<uint8_t *>(impl.arena_pool.ptr());
        }
        if (arena == nullptr) {
            return false;
        }
        impl.arena = arena;
        if (!espnn_et::arena_lease_open(lease_key, arena, bytes)) {
            snprintf(msg, msg_size, "loading method '%.40s': too many models are loading at the same time; call "
                     "begin() of the models one after the other", method_name);
            return false;
        }
    }
    auto method = impl.program->load_method(method_name, &*impl.memory);
    espnn_et::arena_lease_close(lease_key);
    if (!method.ok()) {
        describe_load_failure(impl, method_name, method.error(), msg, msg_size);
        return false;
    }
    impl.method.emplace(std::move(method.get()));
    return true;
}

/* Bytes of program tensor `info` (its dtype and dims from the description). */
size_t tensor_bytes(const espnn_pte_tensor_t &info) {
    size_t n = info.dtype == ESPNN_DTYPE_FLOAT32 ? 4u : 1u;
    for (size_t j = 0; j < info.rank && j < 4; ++j) {
        n *= info.dims[j];
    }
    return n;
}

/* Where program I/O tensor k (inputs first, then outputs) lives. */
enum class IoHome { Planned, Arena, Own };

/* ExecuTorch's planned storage when it planned the tensor; otherwise (lower(..., io_arena=True),
 * the default) its home in the delegate arena, from the description, so the input's bytes are
 * reused once consumed and the output is written in place by the last op.  A model on a shared
 * arena cannot keep its I/O there (the other models' runs would overwrite it between calls):
 * those tensors, and any without a home, get a block of their own in io_pool. */
IoHome io_home(const EspnnModel::Impl &impl, size_t k, bool shared) {
    const espnn_pte_desc_t &d = impl.desc;
    const et::MethodMeta meta = impl.method->method_meta();
    const bool planned = k < d.n_inputs ? meta.input_tensor_meta(k)->is_memory_planned()
                                        : meta.output_tensor_meta(k - d.n_inputs)->is_memory_planned();
    if (planned) {
        return IoHome::Planned;
    }
    const espnn_pte_tensor_t &info = k < d.n_inputs ? d.inputs[k] : d.outputs[k - d.n_inputs];
    return !shared && info.in_arena && impl.arena != nullptr ? IoHome::Arena : IoHome::Own;
}

/* io_pool: one block for every I/O tensor whose io_home is Own. */
bool place_unplanned(EspnnModel::Impl &impl, bool shared, char *msg, size_t msg_size) {
    const espnn_pte_desc_t &d = impl.desc;
    size_t own = 0;
    for (size_t k = 0; k < d.n_inputs + d.n_outputs; ++k) {
        if (io_home(impl, k, shared) == IoHome::Own) {
            own = align_up(own, kPoolAlign) + tensor_bytes(k < d.n_inputs ? d.inputs[k] : d.outputs[k - d.n_inputs]);
        }
    }
    if (own > 0) {
        impl.io_pool = OwnedBlock(espnn_mem_alloc(ESPNN_MEM_PLANNED, own, kPoolAlign, "EspnnModel I/O buffers", msg,
                                                  msg_size));
        if (impl.io_pool.ptr() == nullptr) {
            return false;
        }
    }
    return true;
}

/* Each I/O slot on the program tensor's own storage (planned by ExecuTorch, or placed by
 * place_unplanned and bound into the method here), with the header's quantization. */
bool bind_slots(EspnnModel::Impl &impl, bool shared, const char *method_name, char *msg, size_t msg_size) {
    const espnn_pte_desc_t &d = impl.desc;
    if (!place_unplanned(impl, shared, msg, msg_size)) {
        return false;
    }
    uint8_t *own = static_cast<uint8_t *>(impl.io_pool.ptr());
    for (size_t k = 0; k < d.n_inputs + d.n_outputs; ++k) {
        const bool is_output = k >= d.n_inputs;
        const size_t i = is_output ? k - d.n_inputs : k;
        const espnn_pte_tensor_t &info = is_output ? d.outputs[i] : d.inputs[i];
        Slot &slot = is_output ? impl.outputs[i] : impl.inputs[i];
        const et::EValue *value = nullptr;
        if (is_output) {
            value = &impl.method->get_output(i);
        } else {
            /* The planned input storage is only reachable through mutable_input() in this
             * ExecuTorch; set_input() would copy every invoke.  It also marks the input set. */
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif
            value = &impl.method->mutable_input(i);
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
        }
        if (!value->isTensor()) {
            snprintf(msg, msg_size, "%s %lu of method '%.40s' is not a tensor", is_output ? "output" : "input",
                     static_cast<unsigned long>(i), method_name);
            return false;
        }
        const auto &tensor = value->toTensor();
        const IoHome home = io_home(impl, k, shared);
        if (home != IoHome::Planned) {
            const size_t bytes = tensor_bytes(info);
            uint8_t *where = nullptr;
            if (home == IoHome::Arena) {
                if (static_cast<uint64_t>(info.arena_offset) + bytes > d.arena_bytes) {
                    snprintf(msg, msg_size,
                             "%s %lu of method '%.40s': model_pte.h places it at arena offset %lu, past the arena "
                             "of %u bytes: the header and the .pte come from different builds",
                             is_output ? "output" : "input", static_cast<unsigned long>(i), method_name,
                             static_cast<unsigned long>(info.arena_offset), static_cast<unsigned>(d.arena_bytes));
                    return false;
                }
                where = impl.arena + info.arena_offset;
            } else {
                own = reinterpret_cast<uint8_t *>(align_up(reinterpret_cast<uintptr_t>(own), kPoolAlign));
                where = own;
                own += bytes;
            }
            if (is_output) {
                const et::Error err = impl.method->set_output_data_ptr(where, bytes, i);
                if (err != et::Error::Ok) {
                    describe_failure(msg, msg_size, "binding a program output", err);
                    return false;
                }
            } else {
                tensor.unsafeGetTensorImpl()->set_data(where);
            }
        }
        if (tensor.mutable_data_ptr() == nullptr) {
            snprintf(msg, msg_size, "%s %lu of method '%.40s' has no storage", is_output ? "output" : "input",
                     static_cast<unsigned long>(i), method_name);
            return false;
        }
        slot.tensor = tensor.mutable_data_ptr();
        slot.numel = static_cast<size_t>(tensor.numel());
        slot.dtype = info.dtype;
        slot.scale = info.scale;
        slot.zero_point = info.zero_point;
    }
    return true;
}

} // namespace

namespace {

/* A profiling build with a layer table: the sink's buffers, one slot more than the table has
 * (so a program that runs more ops than its header lists is caught, not overrun). */
bool prepare_profile(EspnnModel::Impl &impl, char *msg, size_t msg_size) {
#if ESPNN_PROFILE
    const espnn_pte_profile_t *table = impl.desc.profile;
    if (table == nullptr) {
        return true;
    }
    const size_t n_ops = static_cast<size_t>(table->n_layers) + 1;
    const size_t n_calls = static_cast<size_t>(table->n_partitions) + 1;
    const size_t bytes = (n_ops + 3 * n_calls) * sizeof(uint32_t);
    impl.profile_block = OwnedBlock(espnn_mem_alloc(ESPNN_MEM_STATE, bytes, kPoolAlign, "EspnnModel profile",
                                                    msg, msg_size));
    if (impl.profile_block.ptr() == nullptr) {
        return false;
    }
    uint32_t *words = static_cast<uint32_t *>(impl.profile_block.ptr());
    impl.sink.op_ticks = words;
    impl.sink.op_capacity = static_cast<uint32_t>(n_ops);
    impl.sink.call_enter = words + n_ops;
    impl.sink.call_exit = words + n_ops + n_calls;
    impl.sink.call_ops = words + n_ops + 2 * n_calls;
    impl.sink.call_capacity = static_cast<uint32_t>(n_calls);
#else
    (void)impl;
    (void)msg;
    (void)msg_size;
#endif
    return true;
}

} // namespace

bool EspnnModel::load(char *msg, size_t msg_size) {
    Impl &impl = *impl_;
    const espnn_pte_desc_t &d = impl.desc;
    const char *method_name = d.method != nullptr ? d.method : "forward";

    auto program = et::Program::load(&impl.loader, et::Program::Verification::InternalConsistency);
    if (!program.ok()) {
        describe_failure(msg, msg_size, "loading the embedded program", program.error());
        return false;
    }
    impl.program.emplace(std::move(program.get()));

    auto meta = impl.program->method_meta(method_name);
    if (!meta.ok()) {
        snprintf(msg, msg_size, "the embedded program has no method '%.40s' (error 0x%x)", method_name,
                 static_cast<unsigned>(meta.error()));
        return false;
    }
    return check_io(*meta, d, msg, msg_size) && plan_buffers(impl, *meta, msg, msg_size) &&
           make_allocators(impl, msg, msg_size) && load_method(impl, shared_, method_name, msg, msg_size) &&
           bind_slots(impl, shared_ != nullptr, method_name, msg, msg_size) && prepare_profile(impl, msg, msg_size);
}

static void convert_output(const Slot &slot) {
    if (slot.dtype == ESPNN_DTYPE_INT8) {
        dequantize(static_cast<const int8_t *>(slot.tensor), static_cast<float *>(slot.staging.ptr), slot.numel,
                   slot.scale, slot.zero_point);
    } else {
        quantize(static_cast<const float *>(slot.tensor), static_cast<int8_t *>(slot.staging.ptr), slot.numel,
                 slot.scale, slot.zero_point);
    }
}

void *EspnnModel::view(bool is_output, size_t index, ViewKind kind) {
    const char *role = is_output ? "output" : "input";
    if (impl_ == nullptr) {
        fail("%s(%lu) before a successful begin()", role, static_cast<unsigned long>(index));
        return nullptr;
    }
    const size_t count = is_output ? desc_.n_outputs : desc_.n_inputs;
    if (index >= count) {
        fail("%s index %lu out of range: the model has %lu %ss", role, static_cast<unsigned long>(index),
             static_cast<unsigned long>(count), role);
        return nullptr;
    }
    Slot &slot = is_output ? impl_->outputs[index] : impl_->inputs[index];
    const uint8_t wanted = kind == kViewFloat ? ESPNN_DTYPE_FLOAT32 : ESPNN_DTYPE_INT8;
    if (wanted == slot.dtype) {
        slot.use_staging = false;
        return slot.tensor;
    }
    if (!(slot.scale > 0.0f) || !std::isfinite(slot.scale)) {
        fail("%s %lu is %s and model_pte.h gives it no quantization (scale %g): use %s<%s>()", role,
             static_cast<unsigned long>(index), dtype_text(slot.dtype), static_cast<double>(slot.scale), role,
             slot.dtype == ESPNN_DTYPE_INT8 ? "int8_t" : "float");
        return nullptr;
    }
    if (slot.staging.ptr == nullptr) {
        const size_t bytes = view_bytes(slot.numel, slot.dtype, wanted);
        char what[48];
        snprintf(what, sizeof what, "%s %lu %s view", role, static_cast<unsigned long>(index),
                 wanted == ESPNN_DTYPE_FLOAT32 ? "float" : "int8");
        char msg[256];
        slot.staging = espnn_mem_alloc(ESPNN_MEM_PLANNED, bytes, kPoolAlign, what, msg, sizeof msg);
        if (slot.staging.ptr == nullptr) {
            fail("%s", msg);
            return nullptr;
        }
        memset(slot.staging.ptr, 0, bytes);
    }
    slot.use_staging = true;
    if (is_output) {
        convert_output(slot); /* valid right away, not only after the next invoke() */
    }
    return slot.staging.ptr;
}

bool EspnnModel::invoke() {
    if (impl_ == nullptr) {
        if (error_[0] == '\0') {
            fail("invoke() before a successful begin()");
        }
        return false;
    }
    const et_timestamp_t start = et::pal_current_ticks();
    for (size_t i = 0; i < desc_.n_inputs; ++i) {
        const Slot &slot = impl_->inputs[i];
        if (!slot.use_staging) {
            continue;
        }
        if (slot.dtype == ESPNN_DTYPE_INT8) {
            quantize(static_cast<const float *>(slot.staging.ptr), static_cast<int8_t *>(slot.tensor), slot.numel,
                     slot.scale, slot.zero_point);
        } else {
            dequantize(static_cast<const int8_t *>(slot.staging.ptr), static_cast<float *>(slot.tensor), slot.numel,
                       slot.scale, slot.zero_point);
        }
    }
    if (shared_ != nullptr && !shared_->acquire(this)) {
        fail("invoke: the shared arena is in use by another model's invoke() (or the application): models "
             "sharing an EspnnSharedArena must never run at the same time; run them one after the other or "
             "give each its own arena");
        return false;
    }
    executorch_espnn_clear_last_error();
#if ESPNN_PROFILE
    /* the whole method's time, so that the CPU operators' share is the rest (the delegates stamp
     * their own entry and exit, espnn_profile_sink.h) */
    const void *profile_key = static_cast<et::MemoryAllocator *>(&*impl_->method_allocator);
    const bool profiling = impl_->sink.op_ticks != nullptr && espnn_et::profile_sink_open(profile_key, &impl_->sink);
    impl_->run.valid = false;
    const uint32_t executed = espnn_profile_now();
#endif
    const et::Error err = impl_->method->execute();
#if ESPNN_PROFILE
    const uint32_t finished = espnn_profile_now();
    if (profiling) {
        espnn_et::profile_sink_close(profile_key);
        impl_->run.start = executed;
        impl_->run.stop = finished;
        impl_->run.ops = impl_->sink.ops;
        impl_->run.calls = impl_->sink.calls;
        impl_->run.overflow = impl_->sink.overflow;
        impl_->run.op_ticks = impl_->sink.op_ticks;
        impl_->run.call_enter = impl_->sink.call_enter;
        impl_->run.call_exit = impl_->sink.call_exit;
        impl_->run.call_ops = impl_->sink.call_ops;
        impl_->run.valid = err == et::Error::Ok;
    }
#endif
    if (shared_ != nullptr) {
        shared_->release(this);
    }
    if (err != et::Error::Ok) {
        describe_failure(error_, sizeof error_, "invoke", err);
        return false;
    }
    for (size_t i = 0; i < desc_.n_outputs; ++i) {
        if (impl_->outputs[i].use_staging) {
            convert_output(impl_->outputs[i]);
        }
    }
    const et_timestamp_t stop = et::pal_current_ticks();
    const uint64_t us = et::ticks_to_ns(stop - start) / 1000u;
    latency_us_ = us > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(us);
    error_[0] = '\0';
    return true;
}

bool EspnnModel::profile(void (*print)(const char *line, void *ctx), void *ctx) const {
    const espnn_pte_desc_t &d = impl_ != nullptr ? impl_->desc : desc_;
#if ESPNN_PROFILE
    const espnn_profile_run_t *run = impl_ != nullptr ? &impl_->run : nullptr;
    return espnn_profile_print(d.profile, run, espnn_profile_unit(), print, ctx);
#else
    (void)d;
    return espnn_profile_print(nullptr, nullptr, nullptr, print, ctx);
#endif
}
