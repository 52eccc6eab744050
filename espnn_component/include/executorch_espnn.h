/*
 * executorch-espnn runtime API: the EspNNDelegateBackend registration functions and
 * EspnnModel, the one-object way to run an embedded .pte (Arduino sketches, ESP-IDF apps,
 * the host runner).
 *
 *   #include <executorch_espnn.h>
 *   #include "model_pte.h"                 // generated: defines `model_pte`
 *   EspnnModel model(model_pte);
 *   if (!model.begin()) puts(model.error());
 *   float *x = model.input<float>(0);      // fill ...
 *   if (!model.invoke()) puts(model.error());
 *   float *y = model.output<float>(0);
 *
 * This header pulls in no ExecuTorch header, so sketches compile with any C++ dialect the
 * board uses; the implementation is C++17.  See docs/runtime.md.
 */
#ifndef EXECUTORCH_ESPNN_H
#define EXECUTORCH_ESPNN_H

#include <stddef.h>
#include <stdint.h>

#include "espnn_pte.h"

#if defined(__GNUC__)
#define EXECUTORCH_ESPNN_API __attribute__((visibility("default")))
#else
#define EXECUTORCH_ESPNN_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Registers EspNNDelegateBackend with the ExecuTorch runtime.  Idempotent and thread-safe;
 * returns 0, or the ExecuTorch error code when another backend already holds the name.
 * A static registrar does the same when the library is loaded, but static linkers drop
 * object files nothing references: an application linking the static library calls this
 * once before loading a program (EspnnModel::begin() does). */
EXECUTORCH_ESPNN_API int executorch_espnn_register_backend(void);

/* The last failure the backend reported (init, execute or registration), as one ASCII line;
 * empty when none.  Copies at most size-1 bytes, always NUL-terminates, returns the length. */
EXECUTORCH_ESPNN_API size_t executorch_espnn_last_error(char *buf, size_t size);
EXECUTORCH_ESPNN_API void executorch_espnn_clear_last_error(void);

/* Bytes held by the delegates that are currently initialised, in all programs. */
typedef struct executorch_espnn_memory_stats {
    uint64_t delegates;
    uint64_t handle_bytes;
    uint64_t state_bytes;
    uint64_t arena_bytes;
    uint64_t weights_bytes; /* constant copies (0 when the weights are used in place) */
} executorch_espnn_memory_stats_t;

EXECUTORCH_ESPNN_API void executorch_espnn_get_memory_stats(executorch_espnn_memory_stats_t *out);

#ifdef __cplusplus
}

/*
 * One delegate arena shared by several EspnnModels that never run at the same time (several
 * models in one firmware, custom_executorch_shared_arena = yes): each model's delegates use it
 * during invoke() instead of an arena of their own, so the firmware holds the largest arena
 * once instead of every model's.  Only the delegate arena is shared: it is scratch that lives
 * inside one run; each model keeps its ExecuTorch planned buffers (they hold its inputs and
 * outputs between calls).
 *
 *   #include "espnn_models.h"                  // generated: ESPNN_SHARED_ARENA_BYTES
 *   static EspnnSharedArena arena(ESPNN_SHARED_ARENA_BYTES);
 *   EspnnModel kws(model_kws_pte, arena), vision(model_vision_pte, arena);
 *
 * Allocated through the memory policy (as an arena) at the first begin() of a model using it,
 * released by the destructor: it must outlive its models.  A model whose arena exceeds size()
 * fails begin(); invoke() claims the arena for its run, so a model invoked while another holds
 * it fails with error() saying so, never touching the other's bytes.
 */
class EXECUTORCH_ESPNN_API EspnnSharedArena {
  public:
    explicit EspnnSharedArena(size_t bytes);
    ~EspnnSharedArena();
    EspnnSharedArena(const EspnnSharedArena &) = delete;
    EspnnSharedArena &operator=(const EspnnSharedArena &) = delete;

    size_t size() const { return bytes_; }
    /* The arena, allocated on first use; nullptr with a message in msg when memory is short. */
    uint8_t *data(char *msg, size_t msg_size);
    /* Claims the arena for `user` (what invoke() does around each run); false when another user
     * holds it.  An application may claim it itself, e.g. to use the bytes as its own scratch
     * between the models' runs. */
    bool acquire(const void *user);
    void release(const void *user);
    /* Who holds the arena now (nullptr when nobody). */
    const void *holder() const;

  private:
    size_t bytes_;
    void *block_ptr_ = nullptr; /* the espnn_mem_block_t, kept as its fields */
    size_t block_bytes_ = 0;
    int block_kind_ = 0;
    const void *holder_ = nullptr;
};

/*
 * One embedded program, its pools sized exactly from the generated description and
 * allocated through the memory policy (espnn_mem.h) in begin().  Not thread-safe: one task
 * uses one EspnnModel; several EspnnModels may run in parallel tasks (delegate execution is
 * serialised inside the backend).
 */
class EXECUTORCH_ESPNN_API EspnnModel {
  public:
    explicit EspnnModel(const espnn_pte_desc_t &desc);
    /* The same, its delegates using `arena` (shared with other models that never run at the
     * same time) instead of an arena of their own. */
    EspnnModel(const espnn_pte_desc_t &desc, EspnnSharedArena &arena);
    ~EspnnModel();
    EspnnModel(const EspnnModel &) = delete;
    EspnnModel &operator=(const EspnnModel &) = delete;

    /* Checks version stamps, allocates the pools, loads the program and its method.
     * False with error() set on any failure; everything allocated so far is released. */
    bool begin();
    /* Runs the method once.  Converts float/int8 views of the I/O at the boundary. */
    bool invoke();
    /* Releases the method, the program and every pool (also done by the destructor). */
    void end();
    bool ready() const { return impl_ != nullptr; }

    /* Element pointers valid from begin() to end().  T is float or int8_t:
     *  - the program's own dtype: the tensor's storage, no copy (with int8 program I/O,
     *    custom_executorch_io = int8, input<int8_t>()/output<int8_t>() allocate nothing);
     *  - float on an int8 program tensor: a float buffer, quantized into the tensor at
     *    invoke() (inputs) or dequantized from it after invoke() (outputs), with the tensor's
     *    scale and zero point from the description;
     *  - int8_t on a float program tensor: the raw int8 values of the delegate's quantized
     *    side, converted the same way (needs a nonzero scale in the description).
     * Asking for one view of an input selects it for the next invoke().  nullptr with
     * error() set when the index is out of range, the type is unusable or memory is short.
     * Write the inputs before every invoke(): ExecuTorch's memory plan may reuse an input's
     * bytes for later tensors once the input is consumed, so invoke() does not preserve the
     * program's own input storage (the float/int8 view buffers above are preserved). */
    template <class T> T *input(size_t index) { return static_cast<T *>(view(false, index, kind_of((T *)nullptr))); }
    template <class T> T *output(size_t index) { return static_cast<T *>(view(true, index, kind_of((T *)nullptr))); }

    size_t input_count() const { return desc_.n_inputs; }
    size_t output_count() const { return desc_.n_outputs; }
    /* Name, dtype, shape and quantization from the description; nullptr when out of range. */
    const espnn_pte_tensor_t *input_info(size_t index) const;
    const espnn_pte_tensor_t *output_info(size_t index) const;
    /* Number of elements of input/output `index` (0 when out of range). */
    size_t input_numel(size_t index) const;
    size_t output_numel(size_t index) const;

    /* Readable reason of the last failure ("" when none). */
    const char *error() const { return error_; }
    /* Wall time of the last successful invoke(), boundary conversions included. */
    uint32_t last_latency_us() const { return latency_us_; }

    /* Runs the cases model_pte.h embeds (custom_executorch_selftest = N): feeds each stored
     * input, invokes, and compares every output with the value the host computed (the Python
     * reference of the delegate, PyTorch for CPU operators).  Writes ONE line into `line`
     * (always NUL-terminated; 192 bytes hold every form), e.g.
     *   selftest: 4/4 bit-exact (worst 0 LSB), latency min/median/max 501/506/512 us
     *   selftest: 3/4 bit-exact (worst 2 LSB): first difference sample 1 output 0 element 17: got -5 expected -3
     * and returns true when every case is bit-exact.  Calls begin() when needed; allocates
     * nothing (it writes the program's own input storage, so it selects the program's own
     * input views: ask again for float/int8 views afterwards); see docs/runtime.md. */
    bool self_test(char *line, size_t size);

    /* The per-layer profile of the last successful invoke() (a profiling build:
     * custom_executorch_profile = yes, CONFIG_ESPNN_ET_PROFILE; docs/runtime.md, "Profiling").
     * Hands `print` one line at a time (no newline; nullptr: printf each with a newline):
     *   espnn-profile begin layers=12 partitions=2 unit=cycles
     *   espnn-profile layer 0 ticks=5120 share=10.24% part=0 op=0 family=CONV2D name="relu" at="model.py:35 in forward"
     *   espnn-profile delegate 0 ticks=310 share=0.62% ops=9
     *   espnn-profile cpu 1 ticks=800 share=1.60% ops="aten.flip.default"
     *   espnn-profile total ticks=50000 layers=47000 delegates=700 cpu=2300 unit=cycles end
     * one `layer` line per delegated op with the report's name and source location, one
     * `delegate` line per delegate call (its time outside its ops), one `cpu` line per stretch of
     * CPU operators (before, between and after the delegates); the shares add up to 100 %.
     * False, after one "espnn-profile error: ..." line saying why, in a firmware built without
     * the profiler, with a model header without the layer table, or before an invoke(). */
    bool profile(void (*print)(const char *line, void *ctx) = nullptr, void *ctx = nullptr) const;

    struct Impl;

  private:
    enum ViewKind { kViewFloat = 0, kViewInt8 = 1 };
    static ViewKind kind_of(float *) { return kViewFloat; }
    static ViewKind kind_of(int8_t *) { return kViewInt8; }
    void *view(bool is_output, size_t index, ViewKind kind);
    bool load(char *msg, size_t msg_size);
    void fail(const char *fmt, ...)
#if defined(__GNUC__)
        __attribute__((format(printf, 2, 3)))
#endif
        ;

    const espnn_pte_desc_t &desc_;
    EspnnSharedArena *shared_ = nullptr;
    Impl *impl_ = nullptr;
    uint32_t latency_us_ = 0;
    char error_[320];
};

#endif /* __cplusplus */

#endif /* EXECUTORCH_ESPNN_H */
