// Make each allocation of load_method() fail in turn; every attempt must fail cleanly, the
// sanitizers must see no error and (LeakSanitizer, at exit) no leak, and a later load with
// enough memory must work and reproduce the clean run.
//
//   failure_injection A.pte          the backend on the Method's runtime allocator: its k-th
//                                    allocate() returns nullptr
//   failure_injection_policy A.pte   the backend on the memory policy: the policy heap's k-th
//                                    aligned_alloc() returns nullptr (-Wl,--wrap)
//
// Prints "allocations N" for a clean load, then one line per injected failure,
// "fail K/N: error 0xEE: <last backend error or ->", then "recovered: outputs match".
//
// The policy build also drives EspnnModel (what firmware uses), from a description built
// from the program and the pool sizes host.measure() reports:
//   failure_injection_policy A.pte --begin PLANNED METHOD TEMP
//                            [--stamp|--stamp-ok ET PKG FMAJ FMIN]...
// each allocation of begin() fails in turn ("begin fail K/N: <error()>"), nothing stays held,
// a later begin() works; then each --stamp variant of the version stamps must make begin()
// fail before allocating anything, each --stamp-ok variant must work
// ("stamp ET PKG FMAJ.FMIN: ok|<error()>").
#include "harness.h"

#include <atomic>
#include <string>

#if defined(HARDENING_MEMORY_POLICY)
#include "espnn_compat.h"
#include "espnn_format.h"
#include "espnn_mem.h"
#endif

using namespace hardening;

namespace {

#if defined(HARDENING_MEMORY_POLICY)
std::atomic<long> g_calls{0};
std::atomic<long> g_fail_at{0};
std::atomic<bool> g_failed{false};
#endif

/* The Method's allocator, failing its fail_at-th allocation (0: never). */
class FailingAllocator : public executorch::extension::MallocMemoryAllocator {
  public:
    explicit FailingAllocator(long fail_at) : fail_at_(fail_at) {}
    void *allocate(size_t size, size_t alignment = kDefaultAlignment) override {
        if (++calls_ == fail_at_) {
            failed_ = true;
            return nullptr;
        }
        return MallocMemoryAllocator::allocate(size, alignment);
    }
    long calls() const { return calls_; }
    bool failed() const { return failed_; }

  private:
    long fail_at_;
    long calls_ = 0;
    bool failed_ = false;
};

void *volatile g_leak_sink; /* --leak-selftest */

struct Attempt {
    et::Error error;
    long calls;
    bool injected;
};

Attempt attempt(Pte &pte, long fail_at, std::vector<std::vector<unsigned char>> *outputs) {
    executorch_espnn_clear_last_error();
#if defined(HARDENING_MEMORY_POLICY)
    g_calls = 0;
    g_failed = false;
    g_fail_at = fail_at;
    Instance instance(pte);
    et::Error err = instance.load();
    g_fail_at = 0;
    const long calls = g_calls.load();
    const bool injected = g_failed.load();
#else
    FailingAllocator allocator(fail_at);
    Instance instance(pte, &allocator);
    et::Error err = instance.load();
    const long calls = allocator.calls();
    const bool injected = allocator.failed();
#endif
    if (err == et::Error::Ok && outputs != nullptr) {
        err = instance.run(7, outputs);
    }
    return {err, calls, injected};
}

} // namespace

#if defined(HARDENING_MEMORY_POLICY)
extern "C" void *__real_aligned_alloc(size_t alignment, size_t size);
extern "C" void *__wrap_aligned_alloc(size_t alignment, size_t size) {
    const long n = ++g_calls;
    if (n == g_fail_at.load()) {
        g_failed = true;
        return nullptr;
    }
    return __real_aligned_alloc(alignment, size);
}
#endif

#if defined(HARDENING_MEMORY_POLICY)
namespace {

/* A model description as model_pte.h would carry it, for the program in `pte`. */
struct Desc {
    espnn_pte_desc_t d{};
    std::vector<espnn_pte_tensor_t> tensors;
    std::string et_version, package_version;
};

void describe(Pte &pte, const unsigned char *data, uint32_t size, const uint32_t sizes[3],
              Desc *out) {
    auto meta = pte.program().method_meta("forward");
    const size_t n_in = meta->num_inputs(), n_out = meta->num_outputs();
    out->tensors.assign(n_in + n_out, espnn_pte_tensor_t{});
    for (size_t k = 0; k < n_in + n_out; ++k) {
        auto info = k < n_in ? meta->input_tensor_meta(k) : meta->output_tensor_meta(k - n_in);
        espnn_pte_tensor_t &t = out->tensors[k];
        t.name = k < n_in ? "input" : "output";
        t.dtype = info->scalar_type() == ScalarType::Float ? ESPNN_DTYPE_FLOAT32 : ESPNN_DTYPE_INT8;
        t.rank = static_cast<uint8_t>(info->sizes().size());
        for (size_t j = 0; j < info->sizes().size() && j < 4; ++j) {
            t.dims[j] = static_cast<uint32_t>(info->sizes()[j]);
        }
    }
    out->et_version = espnn_et::runtime_executorch_version();
    out->package_version = espnn_et::runtime_package_version();
    espnn_pte_desc_t &d = out->d;
    d.desc_version = ESPNN_PTE_DESC_VERSION;
    d.data = data;
    d.size = size;
    d.sha256 = "";
    d.method = "forward";
    d.executorch_version = out->et_version.c_str();
    d.package_version = out->package_version.c_str();
    d.payload_format_major = ESPNN_FORMAT_MAJOR;
    d.payload_format_minor = ESPNN_FORMAT_MINOR;
    d.planned_bytes = sizes[0];
    d.method_allocator_bytes = sizes[1];
    d.temp_allocator_bytes = sizes[2];
    d.n_inputs = static_cast<uint32_t>(n_in);
    d.n_outputs = static_cast<uint32_t>(n_out);
    d.inputs = out->tensors.data();
    d.outputs = out->tensors.data() + n_in;
}

/* begin() with the fail_at-th policy allocation failing; on success, one invoke. */
bool begin_once(const espnn_pte_desc_t &d, long fail_at, long *calls, bool *injected,
                std::vector<std::vector<unsigned char>> *outputs, std::string *error) {
    EspnnModel model(d);
    g_calls = 0;
    g_failed = false;
    g_fail_at = fail_at;
    bool ok = model.begin();
    g_fail_at = 0;
    *calls = g_calls.load();
    *injected = g_failed.load();
    if (ok && outputs != nullptr) {
        for (size_t i = 0; i < d.n_inputs; ++i) {
            std::vector<unsigned char> bytes(model.input_numel(i) *
                                             (d.inputs[i].dtype == ESPNN_DTYPE_FLOAT32 ? 4u : 1u));
            fill(bytes, d.inputs[i].dtype == ESPNN_DTYPE_FLOAT32 ? ScalarType::Float : ScalarType::Char,
                 7u + static_cast<uint32_t>(i));
            void *dst = d.inputs[i].dtype == ESPNN_DTYPE_FLOAT32 ? static_cast<void *>(model.input<float>(i))
                                                                 : static_cast<void *>(model.input<int8_t>(i));
            std::memcpy(dst, bytes.data(), bytes.size());
        }
        ok = model.invoke();
        outputs->clear();
        for (size_t i = 0; ok && i < d.n_outputs; ++i) {
            const bool f = d.outputs[i].dtype == ESPNN_DTYPE_FLOAT32;
            const auto *p = f ? static_cast<const unsigned char *>(static_cast<void *>(model.output<float>(i)))
                              : static_cast<const unsigned char *>(static_cast<void *>(model.output<int8_t>(i)));
            outputs->emplace_back(p, p + model.output_numel(i) * (f ? 4u : 1u));
        }
    }
    *error = model.error();
    return ok;
}

int begin_injection(Pte &pte, const char *path, const uint32_t sizes[3], int argc, char **argv) {
    /* EspnnModel wants the .pte 16-aligned and alive: its own copy */
    FILE *f = std::fopen(path, "rb");
    std::vector<unsigned char> file;
    unsigned char chunk[65536];
    size_t got = 0;
    while (f != nullptr && (got = std::fread(chunk, 1, sizeof chunk, f)) > 0) {
        file.insert(file.end(), chunk, chunk + got);
    }
    if (f != nullptr) {
        std::fclose(f);
    }
    auto *data = static_cast<unsigned char *>(std::aligned_alloc(16, (file.size() + 15) / 16 * 16));
    std::memcpy(data, file.data(), file.size());
    Desc desc;
    describe(pte, data, static_cast<uint32_t>(file.size()), sizes, &desc);

    int bad = 0;
    long n = 0;
    bool injected = false;
    std::string error;
    std::vector<std::vector<unsigned char>> reference, again;
    if (!begin_once(desc.d, 0, &n, &injected, &reference, &error)) {
        std::printf("begin: FAILED: %s\n", error.c_str());
        std::free(data);
        return 1;
    }
    std::printf("begin allocations %ld\n", n);
    for (long k = 1; k <= n; ++k) {
        long calls = 0;
        const bool ok = begin_once(desc.d, k, &calls, &injected, nullptr, &error);
        std::printf("begin fail %ld/%ld: %s\n", k, n, error.empty() ? "-" : error.c_str());
        if (ok || !injected || error.empty()) {
            std::printf("  UNEXPECTED: %s\n", ok ? "begin succeeded" : "no failure or no message");
            bad++;
        }
        if (espnn_mem_internal_in_use() != 0) {
            std::printf("  UNEXPECTED: %lu bytes still held through the memory policy\n",
                        static_cast<unsigned long>(espnn_mem_internal_in_use()));
            bad++;
        }
    }
    long calls = 0;
    if (!begin_once(desc.d, 0, &calls, &injected, &again, &error) || again != reference) {
        std::printf("begin recovered: FAILED: %s\n", error.c_str());
        bad++;
    } else {
        std::printf("begin recovered: outputs match\n");
    }
    for (int i = 0; i + 4 < argc; ++i) {
        const bool want_ok = std::strcmp(argv[i], "--stamp-ok") == 0;
        if (!want_ok && std::strcmp(argv[i], "--stamp") != 0) {
            continue;
        }
        Desc variant = desc;
        variant.et_version = argv[i + 1];
        variant.package_version = argv[i + 2];
        variant.d.executorch_version = variant.et_version.c_str();
        variant.d.package_version = variant.package_version.c_str();
        variant.d.inputs = variant.tensors.data();
        variant.d.outputs = variant.tensors.data() + variant.d.n_inputs;
        variant.d.payload_format_major = static_cast<uint16_t>(std::atoi(argv[i + 3]));
        variant.d.payload_format_minor = static_cast<uint16_t>(std::atoi(argv[i + 4]));
        std::vector<std::vector<unsigned char>> outs;
        const bool ok = begin_once(variant.d, 0, &calls, &injected, want_ok ? &outs : nullptr, &error);
        std::printf("stamp %s %s %s.%s: %s\n", argv[i + 1], argv[i + 2], argv[i + 3], argv[i + 4],
                    ok ? "ok" : error.c_str());
        if (want_ok && (!ok || outs != reference)) {
            std::printf("  UNEXPECTED: a compatible stamp was refused or ran differently\n");
            bad++;
        }
        if (!want_ok && (ok || calls != 0)) {
            std::printf("  UNEXPECTED: %s\n", ok ? "begin succeeded" : "allocated before the check");
            bad++;
        }
        if (espnn_mem_internal_in_use() != 0) {
            std::printf("  UNEXPECTED: memory still held after end()\n");
            bad++;
        }
    }
    std::free(data);
    return bad;
}

} // namespace
#endif

int main(int argc, char **argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: failure_injection A.pte\n");
        return 2;
    }
    if (std::strcmp(argv[1], "--leak-selftest") == 0) {
        /* proves LeakSanitizer is live in this binary: this block must be reported at exit */
        g_leak_sink = std::malloc(77);
        g_leak_sink = nullptr;
        std::printf("leaked 77 bytes\n");
        return 0;
    }
    et::runtime_init();
    if (executorch_espnn_register_backend() != 0) {
        std::fprintf(stderr, "registration failed: %s\n", last_error().c_str());
        return 1;
    }
    Pte pte;
    if (!pte.read(argv[1])) {
        return 1;
    }
#if defined(HARDENING_MEMORY_POLICY)
    if (argc >= 6 && std::strcmp(argv[2], "--begin") == 0) {
        const uint32_t sizes[3] = {static_cast<uint32_t>(std::strtoul(argv[3], nullptr, 10)),
                                   static_cast<uint32_t>(std::strtoul(argv[4], nullptr, 10)),
                                   static_cast<uint32_t>(std::strtoul(argv[5], nullptr, 10))};
        return begin_injection(pte, argv[1], sizes, argc, argv) == 0 ? 0 : 1;
    }
#endif
    std::vector<std::vector<unsigned char>> reference;
    const Attempt clean = attempt(pte, 0, &reference);
    if (clean.error != et::Error::Ok) {
        std::fprintf(stderr, "clean run failed 0x%x: %s\n", static_cast<unsigned>(clean.error),
                     last_error().c_str());
        return 1;
    }
    const long n = clean.calls;
    std::printf("allocations %ld\n", n);
    int bad = 0;
    for (long k = 1; k <= n; ++k) {
        const Attempt a = attempt(pte, k, nullptr);
        const std::string why = last_error();
        std::printf("fail %ld/%ld: error 0x%x: %s\n", k, n, static_cast<unsigned>(a.error),
                    why.empty() ? "-" : why.c_str());
        if (!a.injected || a.error == et::Error::Ok) {
            std::printf("  UNEXPECTED: %s\n", a.injected ? "load succeeded" : "nothing injected");
            bad++;
        }
#if defined(HARDENING_MEMORY_POLICY)
        if (espnn_mem_internal_in_use() != 0) {
            std::printf("  UNEXPECTED: %lu bytes still held through the memory policy\n",
                        static_cast<unsigned long>(espnn_mem_internal_in_use()));
            bad++;
        }
#endif
    }
    std::vector<std::vector<unsigned char>> again;
    const Attempt last = attempt(pte, 0, &again);
    if (last.error != et::Error::Ok || again != reference) {
        std::printf("recovered: FAILED (0x%x)\n", static_cast<unsigned>(last.error));
        bad++;
    } else {
        std::printf("recovered: outputs match\n");
    }
#if defined(HARDENING_MEMORY_POLICY)
    if (espnn_mem_internal_in_use() != 0) {
        std::printf("UNEXPECTED: %lu bytes held after every Method is gone\n",
                    static_cast<unsigned long>(espnn_mem_internal_in_use()));
        bad++;
    }
#endif
    return bad == 0 ? 0 : 1;
}
