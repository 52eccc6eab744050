/*
 * The emulated firmware's application: EspnnModel over the generated model_pte.h, as an Arduino
 * sketch or an ESP-IDF app uses it (begin, fill the inputs, invoke, read the outputs), fed the
 * inputs of model_vectors.h and compared byte for byte with the outputs executorch_espnn.host.run
 * gave for them on the host.  Prints one line per case, what the pools and delegates hold, and
 * one verdict line; exits 0 only when every byte matched.  The same source on every emulated
 * MCU (cortex-m7, esp32c3): when model_pte.h embeds self-test cases it also runs
 * EspnnModel::self_test() and prints its line (a case that is not bit-exact fails the run), and
 * on a board that counts instructions (EMU_COUNTS_INSTRUCTIONS) one "EMU INSN invoke.<case> N"
 * line per invoke() (emulated/esp_qemu.py's instruction_counts reads them).
 */
#include <executorch_espnn.h>

#include <executorch/runtime/platform/log.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "espnn_format.h"
#include "espnn_mem.h"
#include "model_pte.h"
#include "model_vectors.h"

#ifndef EMU_TARGET_NAME
#define EMU_TARGET_NAME "cortex-m7"
#endif

#ifdef EMU_COUNTS_INSTRUCTIONS
extern "C" uint64_t emu_instructions(void); /* the board's retired-instruction count */
#endif

namespace {

int verdict(bool pass, unsigned failed, unsigned long compared, const char *why) {
    std::printf("EMU VERDICT %s target=%s model=%s kernels=%s cases=%u failed=%u "
                "compared_bytes=%lu%s%s\n",
                pass ? "PASS" : "FAIL", EMU_TARGET_NAME, EMU_MODEL_NAME, EMU_KERNELS_NAME,
                static_cast<unsigned>(EMU_NUM_CASES), failed, compared, why[0] ? " reason=" : "",
                why);
    return pass ? 0 : 1;
}

/* The program's own dtype: the view that is the tensor's storage (no conversion). */
void *input_view(EspnnModel &model, size_t i) {
    const espnn_pte_tensor_t *info = model.input_info(i);
    if (info != nullptr && info->dtype == ESPNN_DTYPE_INT8) {
        return model.input<int8_t>(i);
    }
    return model.input<float>(i);
}

const void *output_view(EspnnModel &model, size_t i) {
    const espnn_pte_tensor_t *info = model.output_info(i);
    if (info != nullptr && info->dtype == ESPNN_DTYPE_INT8) {
        return model.output<int8_t>(i);
    }
    return model.output<float>(i);
}

} // namespace

int main() {
    /* the PAL's log path: one line through et_pal_emit_log_message */
    ET_LOG(Info, "emulated %s firmware for %s", EMU_TARGET_NAME, EMU_MODEL_NAME);

    static EspnnModel model(model_pte); /* as a sketch's global: no allocation here */
    if (!model.begin()) {
        std::printf("begin failed: %s\n", model.error());
        return verdict(false, EMU_NUM_CASES, 0, "begin");
    }
    if (model.input_count() != EMU_NUM_INPUTS || model.output_count() != EMU_NUM_OUTPUTS) {
        return verdict(false, EMU_NUM_CASES, 0, "io-count");
    }
    executorch_espnn_memory_stats_t st;
    executorch_espnn_get_memory_stats(&st);
    std::printf("EMU MEMORY policy_bytes=%lu delegates=%lu handle_bytes=%lu state_bytes=%lu "
                "arena_bytes=%lu weights_bytes=%lu\n",
                static_cast<unsigned long>(espnn_mem_internal_in_use()),
                static_cast<unsigned long>(st.delegates), static_cast<unsigned long>(st.handle_bytes),
                static_cast<unsigned long>(st.state_bytes), static_cast<unsigned long>(st.arena_bytes),
                static_cast<unsigned long>(st.weights_bytes));

#if ESPNN_MODEL_SELFTEST_CASES > 0
    {
        char line[192];
        const bool exact = model.self_test(line, sizeof line);
        std::printf("%s\n", line);
        if (!exact) {
            return verdict(false, EMU_NUM_CASES, 0, "selftest");
        }
    }
#endif

    unsigned failed = 0;
    unsigned long compared = 0;
    for (unsigned c = 0; c < EMU_NUM_CASES; ++c) {
        bool ok = true;
        for (size_t i = 0; i < EMU_NUM_INPUTS; ++i) {
            void *dst = input_view(model, i);
            const emu_blob_t &in = emu_inputs[c][i];
            if (dst == nullptr) {
                std::printf("case %u: input %u: %s\n", c, static_cast<unsigned>(i), model.error());
                return verdict(false, EMU_NUM_CASES, compared, "input");
            }
            std::memcpy(dst, in.data, in.size); /* every input before every invoke() */
        }
#ifdef EMU_COUNTS_INSTRUCTIONS
        const uint64_t insn0 = emu_instructions();
        const bool invoked = model.invoke();
        std::printf("EMU INSN invoke.%u %" PRIu64 "\n", c, emu_instructions() - insn0);
#else
        const bool invoked = model.invoke();
#endif
        if (!invoked) {
            std::printf("case %u: invoke failed: %s\n", c, model.error());
            failed++;
            continue;
        }
        for (size_t o = 0; o < EMU_NUM_OUTPUTS && ok; ++o) {
            const uint8_t *got = static_cast<const uint8_t *>(output_view(model, o));
            const emu_blob_t &want = emu_outputs[c][o];
            for (uint32_t b = 0; b < want.size; ++b) {
                if (got == nullptr || got[b] != want.data[b]) {
                    std::printf("case %u: MISMATCH output %u byte %" PRIu32 " got 0x%02x want 0x%02x\n", c,
                                static_cast<unsigned>(o), b, got ? got[b] : 0u, want.data[b]);
                    ok = false;
                    break;
                }
            }
            compared += want.size;
        }
        std::printf("case %u: %s (%" PRIu32 " us emulated)\n", c, ok ? "ok" : "FAILED",
                    model.last_latency_us());
        failed += ok ? 0u : 1u;
    }
#if defined(ESPNN_PROFILE) && ESPNN_PROFILE
    /* a profiling firmware: the last case's per-layer profile (docs/runtime.md, "Profiling") */
    if (!model.profile()) {
        failed++;
    }
#endif
    model.end();
    return verdict(failed == 0, failed, compared, "");
}
