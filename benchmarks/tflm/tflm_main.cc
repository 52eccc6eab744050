/*
 * The TFLite Micro side of benchmarks/vs_tflm.py: one inference of an embedded .tflite on an
 * emulated MCU, with the ops the model uses registered (tflm_ops.h, generated), checked byte
 * for byte against what tflite-micro's Python interpreter computed on this computer for the
 * same input.  Prints the verdict, the instructions around Invoke() (tflm_board.c: the same
 * counter our firmware's EMU INSN lines read on that board) and the arena TFLM used.  The
 * arena is the largest block the heap gives, so one firmware fits every board's RAM.  Our
 * code calling TFLM's public API; TFLM itself comes from the tree the benchmark is given.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensorflow/lite/micro/micro_interpreter.h"
#include "tensorflow/lite/micro/micro_mutable_op_resolver.h"
#include "tensorflow/lite/schema/schema_generated.h"

#include "tflm_ops.h"

extern "C" const uint8_t tflm_model[], tflm_input[], tflm_expected[];
extern "C" const uint32_t tflm_input_size, tflm_expected_size;
extern "C" uint64_t tflm_instructions(void);

namespace {
constexpr size_t kArenaStep = 1024;

/* the largest block of at most TFLM_ARENA_BYTES the heap gives, in 1 KiB steps */
uint8_t *take_arena(size_t *bytes) {
    for (size_t n = TFLM_ARENA_BYTES; n >= kArenaStep; n -= kArenaStep) {
        void *p = malloc(n + 16);
        if (p != nullptr) {
            *bytes = n;
            /* TFLM aligns its own buffers; 16 keeps the ESP-NN SIMD loads on aligned rows */
            return reinterpret_cast<uint8_t *>((reinterpret_cast<uintptr_t>(p) + 15u) & ~uintptr_t{15});
        }
    }
    *bytes = 0;
    return nullptr;
}
}  // namespace

int main() {
    size_t arena_bytes = 0;
    uint8_t *arena = take_arena(&arena_bytes);
    if (arena == nullptr) {
        printf("TFLM VERDICT FAIL no heap for an arena\n");
        return 1;
    }
    printf("TFLM ARENA %u\n", (unsigned)arena_bytes);
    const tflite::Model *model = tflite::GetModel(tflm_model);
    static tflite::MicroMutableOpResolver<TFLM_N_OPS> resolver;
    TFLM_ADD_OPS(resolver);
    static tflite::MicroInterpreter interpreter(model, resolver, arena, arena_bytes);
    if (interpreter.AllocateTensors() != kTfLiteOk) {
        printf("TFLM VERDICT FAIL allocate\n");
        return 1;
    }
    TfLiteTensor *in = interpreter.input(0);
    TfLiteTensor *out = interpreter.output(0);
    if (in->bytes != tflm_input_size || out->bytes != tflm_expected_size) {
        printf("TFLM VERDICT FAIL sizes input %u/%u output %u/%u\n", (unsigned)in->bytes,
               (unsigned)tflm_input_size, (unsigned)out->bytes, (unsigned)tflm_expected_size);
        return 1;
    }
    memcpy(in->data.int8, tflm_input, tflm_input_size);
    const uint64_t i0 = tflm_instructions();
    const TfLiteStatus st = interpreter.Invoke();
    const uint64_t insn = tflm_instructions() - i0;
    if (st != kTfLiteOk) {
        printf("TFLM VERDICT FAIL invoke\n");
        return 1;
    }
    unsigned differ = 0;
    for (uint32_t i = 0; i < tflm_expected_size; i++) {
        differ += out->data.int8[i] != (int8_t)tflm_expected[i];
    }
    printf("TFLM INSN %llu\n", (unsigned long long)insn);
    printf("TFLM ARENA_USED %u\n", (unsigned)interpreter.arena_used_bytes());
    printf("TFLM VERDICT %s differ=%u compared_bytes=%u\n", differ ? "FAIL" : "PASS", differ,
           (unsigned)tflm_expected_size);
    return differ ? 1 : 0;
}
