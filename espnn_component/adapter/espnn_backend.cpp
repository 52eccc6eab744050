/*
 * EspNNDelegateBackend: the ExecuTorch BackendInterface around the C engine.
 *
 * init()    version header -> espnn_inspect (validates everything) -> memory -> espnn_init
 * execute() checks every argument against the payload's I/O table, then binds and invokes
 *           under the process-wide execute lock; allocates nothing
 * destroy() runs the destructor and returns memory-policy blocks
 *
 * Every log line is built from ASCII literals, numbers and the engine's static field names.
 */
#include <cinttypes>
#include <new>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include <executorch/runtime/backend/interface.h>
#include <executorch/runtime/core/error.h>
#include <executorch/runtime/core/evalue.h>
#include <executorch/runtime/core/exec_aten/exec_aten.h>

#include "espnn_arena_lease.h"
#include "espnn_compat.h"
#include "espnn_engine.h"
#include "espnn_et_config.h"
#include "espnn_lock.h"
#include "espnn_profile_sink.h"
#include "espnn_status.h"
#include "executorch_espnn.h"

#if defined(ESPNN_ET_USE_MEMORY_POLICY)
#include "espnn_mem.h"
#endif

namespace espnn_et {

namespace et = ::executorch::runtime;
using ::executorch::aten::ScalarType;
using ::executorch::aten::Tensor;

namespace {

constexpr const char *kBackendName = "EspNNDelegateBackend";
#if defined(ESPNN_ET_USE_MEMORY_POLICY)
constexpr size_t kMsgSize = ESPNN_MEM_MSG_MAX;
#else
constexpr size_t kMsgSize = 256;
#endif

/* One allocation of the delegate: from the memory policy (freed in destroy) or from the
 * runtime allocator (released with the Method, nothing to free). */
struct Block {
    void *ptr = nullptr;
    size_t bytes = 0;
    bool borrowed = false; /* the arena EspnnModel lent (espnn_arena_lease.h): not ours to free */
#if defined(ESPNN_ET_USE_MEMORY_POLICY)
    espnn_mem_block_t policy{};
#endif
};

struct Delegate {
    espnn_model_t model;
    Block self;    /* the block this struct lives in */
    Block state;   /* decoded tables */
    Block arena;   /* activations + scratch */
    Block weights; /* a copy of the constants, or empty when used in place */
#if ESPNN_PROFILE
    const void *profile_key = nullptr; /* the Method's runtime allocator: its EspnnModel's sink */
#endif
};

class DelegateMemory {
  public:
    explicit DelegateMemory(et::MemoryAllocator *runtime_allocator) : runtime_(runtime_allocator) {}

    /* what: "handle", "state", "arena", "weights" */
    bool allocate(int use, size_t bytes, size_t align, const char *what, Block *out) {
        out->ptr = nullptr;
        out->bytes = bytes;
        if (bytes == 0) {
            return true;
        }
#if defined(ESPNN_ET_USE_MEMORY_POLICY)
        (void)runtime_;
        char what_text[48];
        snprintf(what_text, sizeof what_text, "EspNN delegate %s", what);
        char msg[kMsgSize];
        msg[0] = '\0';
        out->policy = espnn_mem_alloc(static_cast<espnn_mem_use_t>(use), bytes, align, what_text, msg,
                                      sizeof msg);
        out->ptr = out->policy.ptr;
        if (out->ptr == nullptr) {
            report_error("%s", msg[0] != '\0' ? msg : "memory policy refused an allocation");
            return false;
        }
        return true;
#else
        (void)use;
        if (runtime_ == nullptr) {
            report_error("init: the runtime gave no allocator for the %s (%lu bytes)", what,
                         static_cast<unsigned long>(bytes));
            return false;
        }
        out->ptr = runtime_->allocate(bytes, align);
        if (out->ptr == nullptr) {
            report_error("init: the method allocator cannot hold the delegate %s of %lu bytes "
                         "(aligned to %lu); give the Method a larger method allocator",
                         what, static_cast<unsigned long>(bytes), static_cast<unsigned long>(align));
            return false;
        }
        return true;
#endif
    }

    static void release(Block *block) {
#if defined(ESPNN_ET_USE_MEMORY_POLICY)
        if (block->policy.ptr != nullptr) {
            espnn_mem_free(block->policy);
        }
        block->policy = espnn_mem_block_t{};
#endif
        block->ptr = nullptr;
        block->bytes = 0;
        block->borrowed = false;
    }

  private:
    et::MemoryAllocator *runtime_;
};

#if defined(ESPNN_ET_USE_MEMORY_POLICY)
constexpr int kUseState = ESPNN_MEM_STATE;
constexpr int kUseArena = ESPNN_MEM_ARENA;
constexpr int kUseWeights = ESPNN_MEM_WEIGHTS;
#else
constexpr int kUseState = 3;
constexpr int kUseArena = 0;
constexpr int kUseWeights = 2;
#endif

/* The delegate's arena: the one arena its EspnnModel lends for this load (keyed by the Method's
 * runtime allocator; every delegate of the method gets the same bytes, espnn_arena_lease.h),
 * else its own. */
bool allocate_arena(et::BackendInitContext &context, DelegateMemory &memory, size_t bytes, Block *out) {
    void *ptr = nullptr;
    size_t capacity = 0;
    switch (arena_lease_take(context.get_runtime_allocator(), bytes, &ptr, &capacity)) {
    case LeaseTake::kTaken:
        out->ptr = ptr;
        out->bytes = bytes;
        out->borrowed = true;
        return true;
    case LeaseTake::kTooSmall:
        report_error("init: the model's delegate arena of %lu bytes cannot hold this delegate's arena of %lu "
                     "bytes: model_pte.h's arena_bytes (or the EspnnSharedArena's size, ESPNN_SHARED_ARENA_BYTES "
                     "of the build's espnn_models.h) and the embedded .pte come from different builds; "
                     "regenerate them together",
                     static_cast<unsigned long>(capacity), static_cast<unsigned long>(bytes));
        return false;
    case LeaseTake::kNoLease:
        break;
    }
    return memory.allocate(kUseArena, bytes, ESPNN_ARENA_ALIGN, "arena", out);
}

bool policy_copies_weights() {
#if defined(ESPNN_ET_USE_MEMORY_POLICY)
    const espnn_mem_config_t *config = espnn_mem_get_config();
    return config != nullptr && config->weights != ESPNN_WEIGHTS_IN_PLACE;
#else
    return false;
#endif
}

et::Error error_for(espnn_status_t status) {
    switch (status) {
    case ESPNN_ERR_MAGIC:
    case ESPNN_ERR_VERSION:
    case ESPNN_ERR_TARGET:
    case ESPNN_ERR_UNSUPPORTED:
        return et::Error::DelegateInvalidCompatibility;
    case ESPNN_ERR_TRUNCATED:
    case ESPNN_ERR_INVALID:
    case ESPNN_ERR_ALIGNMENT:
        return et::Error::InvalidProgram;
    case ESPNN_ERR_MEMORY:
        return et::Error::DelegateMemoryAllocationFailed;
    case ESPNN_ERR_ARGUMENT:
    case ESPNN_ERR_IO:
        return et::Error::InvalidArgument;
    default:
        return et::Error::Internal;
    }
}

void report_engine_error(const char *stage, const espnn_error_t &err) {
    char text[kMsgSize];
    espnn_format_error(&err, text, sizeof text);
    report_error("%s: %s", stage, text);
}

const char *dtype_name(uint8_t dtype) {
    switch (dtype) {
    case ESPNN_DTYPE_INT8:
        return "int8";
    case ESPNN_DTYPE_FLOAT32:
        return "float32";
    default:
        return "unknown";
    }
}

const char *scalar_type_name(ScalarType t) {
    switch (t) {
    case ScalarType::Byte:
        return "uint8";
    case ScalarType::Char:
        return "int8";
    case ScalarType::Short:
        return "int16";
    case ScalarType::Int:
        return "int32";
    case ScalarType::Long:
        return "int64";
    case ScalarType::Float:
        return "float32";
    case ScalarType::Double:
        return "float64";
    case ScalarType::Bool:
        return "bool";
    default:
        return "other";
    }
}

bool dtype_matches(uint8_t dtype, ScalarType t) {
    return (dtype == ESPNN_DTYPE_INT8 && t == ScalarType::Char) ||
           (dtype == ESPNN_DTYPE_FLOAT32 && t == ScalarType::Float);
}

/* "[1, 3, 96, 96]" into buf from any integer sequence */
template <typename Seq> void format_list(const Seq &values, size_t n, char *buf, size_t size) {
    size_t used = 0;
    used += static_cast<size_t>(snprintf(buf + used, size - used, "["));
    for (size_t i = 0; i < n && used < size; ++i) {
        used += static_cast<size_t>(
            snprintf(buf + used, size - used, i == 0 ? "%ld" : ", %ld", static_cast<long>(values[i])));
    }
    if (used < size) {
        snprintf(buf + used, size - used, "]");
    }
}

/* Whether a tensor of `sizes` (contiguous) holds the bytes of the payload's io tensor: the same
 * dims, or (format 2.2) the same dims apart from where unit dims stand, so the engine can read
 * e.g. a [1, 1, H, W] program tensor as its NHWC [1, H, W, 1] in place. */
template <class Sizes> bool same_bytes_shape(const Sizes &sizes, const espnn_io_info_t &io) {
    size_t i = 0;
    size_t k = 0;
    for (;;) {
        while (i < sizes.size() && sizes[i] == 1) {
            ++i;
        }
        while (k < io.rank && io.dims[k] == 1) {
            ++k;
        }
        if (i == sizes.size() || k == io.rank) {
            return i == sizes.size() && k == io.rank;
        }
        if (sizes[i] < 0 || static_cast<uint32_t>(sizes[i]) != io.dims[k]) {
            return false;
        }
        ++i;
        ++k;
    }
}

/* Checks one delegate argument against the payload's description of it. */
bool check_argument(const Delegate &d, const et::EValue *value, int is_output, uint32_t index,
                    void **data, size_t *nbytes) {
    const char *role = is_output ? "output" : "input";
    espnn_io_info_t io;
    if (espnn_io_info(&d.model, is_output, index, &io) != ESPNN_OK) {
        report_error("execute: the payload has no %s %" PRIu32, role, index);
        return false;
    }
    if (value == nullptr || !value->isTensor()) {
        report_error("execute: delegate %s %" PRIu32 " is not a tensor (EValue tag %d); the payload expects a "
                     "%s tensor",
                     role, index, value == nullptr ? -1 : static_cast<int>(value->tag), dtype_name(io.dtype));
        return false;
    }
    const Tensor &t = value->toTensor();
    if (!dtype_matches(io.dtype, t.scalar_type())) {
        report_error("execute: delegate %s %" PRIu32 " is %s, the payload expects %s", role, index,
                     scalar_type_name(t.scalar_type()), dtype_name(io.dtype));
        return false;
    }
    char got[96];
    char want[96];
    const auto sizes = t.sizes();
    if (!same_bytes_shape(sizes, io)) {
        format_list(sizes, sizes.size(), got, sizeof got);
        format_list(io.dims, io.rank, want, sizeof want);
        report_error("execute: delegate %s %" PRIu32 " has shape %s, the payload expects %s", role, index, got,
                     want);
        return false;
    }
    const auto order = t.dim_order();
    for (size_t i = 0; i < order.size(); ++i) {
        if (order[i] != i) {
            format_list(order, order.size(), got, sizeof got);
            report_error("execute: delegate %s %" PRIu32 " has dim order %s (e.g. channels-last); the payload "
                         "reads contiguous tensors in the default dim order: make the tensor "
                         "contiguous before it reaches the delegate",
                         role, index, got);
            return false;
        }
    }
    if (t.nbytes() != io.nbytes) {
        report_error("execute: delegate %s %" PRIu32 " holds %lu bytes, the payload expects %lu", role, index,
                     static_cast<unsigned long>(t.nbytes()), static_cast<unsigned long>(io.nbytes));
        return false;
    }
    void *ptr = t.mutable_data_ptr();
    if (ptr == nullptr && io.nbytes != 0 && io.arena_home == ESPNN_NO_HOME) {
        report_error("execute: delegate %s %" PRIu32 " has no data pointer (a program input or output ExecuTorch "
                     "did not plan: bind it with Method::set_input / set_output_data_ptr)",
                     role, index);
        return false;
    }
    *data = ptr;
    *nbytes = t.nbytes();
    return true;
}

LiveMemory live_of(const Delegate &d) {
    LiveMemory m;
    m.delegates = 1;
    m.handle_bytes = d.self.bytes;
    m.state_bytes = d.state.bytes;
    m.arena_bytes = d.arena.borrowed ? 0 : d.arena.bytes; /* a lent arena is its owner's */
    m.weights_bytes = d.weights.bytes;
    return m;
}

void release_all(Delegate *d) {
    Block self = d->self;
    DelegateMemory::release(&d->weights);
    DelegateMemory::release(&d->arena);
    DelegateMemory::release(&d->state);
    d->~Delegate();
    DelegateMemory::release(&self);
}

class EspNNDelegateBackend final : public et::BackendInterface {
  public:
    bool is_available() const override { return true; }

    et::Result<et::DelegateHandle *> init(et::BackendInitContext &context, et::FreeableBuffer *processed,
                                          et::ArrayRef<et::CompileSpec> compile_specs) const override {
        (void)compile_specs; /* the payload carries everything; specs are informational */
        if (processed == nullptr) {
            report_error("init: no payload");
            return et::Error::InvalidArgument;
        }
        auto data_result = processed->data_safe();
        if (!data_result.ok()) {
            report_error("init: the payload is not a memory buffer");
            processed->Free();
            return et::Error::InvalidProgram;
        }
        const void *data = data_result.get();
        const size_t len = processed->size();

        char msg[kMsgSize];
        switch (check_payload_header(data, len, msg, sizeof msg)) {
        case PayloadCheck::kOk:
            break;
        case PayloadCheck::kTruncated:
            report_error("init: %s", msg);
            processed->Free();
            return et::Error::InvalidProgram;
        case PayloadCheck::kMagic:
        case PayloadCheck::kIncompatible:
            report_error("init: %s", msg);
            processed->Free();
            return et::Error::DelegateInvalidCompatibility;
        }

        espnn_info_t info;
        espnn_error_t err;
        espnn_status_t status = espnn_inspect(data, len, &info, &err);
        if (status != ESPNN_OK) {
            report_engine_error("init", err);
            processed->Free();
            return error_for(status);
        }

        DelegateMemory memory(context.get_runtime_allocator());
        Block self;
        if (!memory.allocate(kUseState, sizeof(Delegate), alignof(Delegate), "handle", &self)) {
            processed->Free();
            return et::Error::DelegateMemoryAllocationFailed;
        }
        Delegate *d = new (self.ptr) Delegate();
        d->self = self;

        /* Constants stay in the payload (zero copy, e.g. flash) unless the policy asks for a
         * RAM copy or the payload sits where int32 constants would be misaligned. */
        const uintptr_t const_addr = reinterpret_cast<uintptr_t>(data) + info.const_offset;
        const bool misaligned = (const_addr % ESPNN_CONST_ALIGN) != 0;
        const bool copy_weights = (policy_copies_weights() || misaligned) && info.const_bytes > 0;
        bool ok = memory.allocate(kUseState, info.state_bytes, 8, "state", &d->state) &&
                  allocate_arena(context, memory, info.arena_bytes, &d->arena);
        if (ok && copy_weights) {
            /* a policy that keeps weights in place refuses WEIGHTS blocks: an alignment copy
             * then counts as delegate state */
            const int use = policy_copies_weights() ? kUseWeights : kUseState;
            ok = memory.allocate(use, info.const_bytes, ESPNN_CONST_ALIGN, "weights", &d->weights);
            if (ok) {
                memcpy(d->weights.ptr, static_cast<const uint8_t *>(data) + info.const_offset, info.const_bytes);
            }
        }
        if (!ok) {
            release_all(d);
            processed->Free();
            return et::Error::DelegateMemoryAllocationFailed;
        }

        status = espnn_init(&d->model, data, len, copy_weights ? d->weights.ptr : nullptr, d->state.ptr,
                            d->state.bytes, d->arena.ptr, d->arena.bytes, &err);
        if (status != ESPNN_OK) {
            report_engine_error("init", err);
            release_all(d);
            processed->Free();
            return error_for(status);
        }
        if (copy_weights) {
            /* the engine reads only its own copy from now on */
            processed->Free();
        }
        live_memory_add(live_of(*d));
#if ESPNN_PROFILE
        d->profile_key = context.get_runtime_allocator();
#endif
        return d;
    }

    et::Error execute(et::BackendExecutionContext &context, et::DelegateHandle *handle,
                      et::Span<et::EValue *> args) const override {
        (void)context;
#if ESPNN_PROFILE
        const uint32_t entered = espnn_profile_now();
#endif
        Delegate *d = static_cast<Delegate *>(handle);
        if (d == nullptr || !d->model.ready) {
            report_error("execute: invalid delegate handle");
            return et::Error::DelegateInvalidHandle;
        }
        const uint32_t n_in = d->model.info.n_inputs;
        const uint32_t n_out = d->model.info.n_outputs;
        if (args.size() != static_cast<size_t>(n_in) + n_out) {
            report_error("execute: the delegate call has %lu arguments, the payload has %" PRIu32
                         " inputs and %" PRIu32 " outputs",
                         static_cast<unsigned long>(args.size()), n_in, n_out);
            return et::Error::InvalidArgument;
        }
        /* Validate everything before touching the model, so a bad call leaves it as it was. */
        void *ptrs[2 * ESPNN_MAX_IO];
        size_t sizes[2 * ESPNN_MAX_IO];
        for (uint32_t k = 0; k < n_in + n_out; ++k) {
            const int is_output = k >= n_in ? 1 : 0;
            const uint32_t index = is_output ? k - n_in : k;
            if (!check_argument(*d, args[k], is_output, index, &ptrs[k], &sizes[k])) {
                return et::Error::InvalidArgument;
            }
        }
        ScopedLock lock(LockId::kExecute, ESPNN_ET_SERIALIZE != 0);
        for (uint32_t k = 0; k < n_in + n_out; ++k) {
            const int is_output = k >= n_in ? 1 : 0;
            const uint32_t index = is_output ? k - n_in : k;
            if (espnn_set_io(&d->model, is_output, index, ptrs[k], sizes[k]) != ESPNN_OK) {
                report_error("execute: the engine refused %s %" PRIu32, is_output ? "output" : "input", index);
                return et::Error::InvalidArgument;
            }
            if (ptrs[k] == nullptr && is_output) {
                /* an unbound program output with a home in the arena (payload 2.4): the engine
                 * writes it there, and the program's tensor shows those bytes */
                espnn_io_info_t io;
                (void)espnn_io_info(&d->model, 1, index, &io);
                args[k]->toTensor().unsafeGetTensorImpl()->set_data(d->model.arena + io.arena_home);
            }
        }
        espnn_error_t err;
#if ESPNN_PROFILE
        ProfileSink *sink = profile_sink_find(d->profile_key);
        const uint32_t n_ops = d->model.info.n_ops;
        const bool keep = sink != nullptr && !sink->overflow && sink->calls < sink->call_capacity &&
                          n_ops <= sink->op_capacity - sink->ops;
        if (sink != nullptr && !keep) {
            sink->overflow = true;
        }
        const espnn_status_t status = keep ? espnn_invoke_profiled(&d->model, sink->op_ticks + sink->ops, &err)
                                           : espnn_invoke(&d->model, &err);
#else
        const espnn_status_t status = espnn_invoke(&d->model, &err);
#endif
        if (status != ESPNN_OK) {
            report_engine_error("execute", err);
            return error_for(status);
        }
#if ESPNN_PROFILE
        if (keep) {
            sink->call_enter[sink->calls] = entered;
            sink->call_exit[sink->calls] = espnn_profile_now();
            sink->call_ops[sink->calls] = n_ops;
            sink->calls++;
            sink->ops += n_ops;
        }
#endif
        return et::Error::Ok;
    }

    void destroy(et::DelegateHandle *handle) const override {
        Delegate *d = static_cast<Delegate *>(handle);
        if (d == nullptr) {
            return;
        }
        live_memory_remove(live_of(*d));
        release_all(d);
    }
};

EspNNDelegateBackend &backend_instance() {
    static EspNNDelegateBackend instance;
    return instance;
}

int register_once() {
    et::Backend entry{kBackendName, &backend_instance()};
    const et::Error err = et::register_backend(entry);
    if (err == et::Error::Ok) {
        return 0;
    }
    if (et::get_backend_class(kBackendName) == &backend_instance()) {
        return 0;
    }
    report_error("registration failed with error 0x%x: another backend named EspNNDelegateBackend is "
                 "already registered in this process (two copies of the delegate library?) or the "
                 "registry is full",
                 static_cast<unsigned>(err));
    return static_cast<int>(err);
}

} // namespace

} // namespace espnn_et

extern "C" int executorch_espnn_register_backend(void) {
    /* A function-local static makes every call after the first return the first result. */
    static const int result = espnn_et::register_once();
    return result;
}

extern "C" size_t executorch_espnn_last_error(char *buf, size_t size) {
    return espnn_et::copy_last_error(buf, size);
}

extern "C" void executorch_espnn_clear_last_error(void) { espnn_et::clear_last_error(); }

extern "C" void executorch_espnn_get_memory_stats(executorch_espnn_memory_stats_t *out) {
    if (out == nullptr) {
        return;
    }
    const espnn_et::LiveMemory m = espnn_et::live_memory();
    out->delegates = m.delegates;
    out->handle_bytes = m.handle_bytes;
    out->state_bytes = m.state_bytes;
    out->arena_bytes = m.arena_bytes;
    out->weights_bytes = m.weights_bytes;
}

namespace {
/* The static registrar: registers at load time when the linker keeps this object file.
 * Static archives may drop it (nothing references it), which is why
 * executorch_espnn_register_backend() exists and EspnnModel::begin() calls it. */
const int g_espnn_registered = executorch_espnn_register_backend();
} // namespace
