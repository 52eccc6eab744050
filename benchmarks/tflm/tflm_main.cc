/*
 * The TFLite Micro side of benchmarks/vs_tflm.py: one inference of an embedded .tflite on the
 * emulated Cortex-M7, with the ops the model uses registered (tflm_ops.h, generated), checked
 * byte for byte against what tflite-micro's Python interpreter computed on this computer for
 * the same input.  Prints the verdict, the SysTick ticks around Invoke() (under QEMU -icount
 * shift=0 one tick is 40 instructions: the 25 MHz SysTick over a 1 GHz virtual clock) and the
 * arena TFLM used.  Our code calling TFLM's public API; TFLM itself comes from the tree the
 * benchmark is given.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tensorflow/lite/micro/micro_interpreter.h"
#include "tensorflow/lite/micro/micro_mutable_op_resolver.h"
#include "tensorflow/lite/schema/schema_generated.h"

#include "tflm_ops.h"

extern "C" const uint8_t tflm_model[], tflm_input[], tflm_expected[];
extern "C" const uint32_t tflm_input_size, tflm_expected_size;
extern "C" uint64_t tflm_ticks(void);

namespace {
alignas(16) uint8_t arena[TFLM_ARENA_BYTES];
}

int main() {
    const tflite::Model *model = tflite::GetModel(tflm_model);
    static tflite::MicroMutableOpResolver<TFLM_N_OPS> resolver;
    TFLM_ADD_OPS(resolver);
    static tflite::MicroInterpreter interpreter(model, resolver, arena, sizeof arena);
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
    const uint64_t t0 = tflm_ticks();
    const TfLiteStatus st = interpreter.Invoke();
    const uint64_t ticks = tflm_ticks() - t0;
    if (st != kTfLiteOk) {
        printf("TFLM VERDICT FAIL invoke\n");
        return 1;
    }
    unsigned differ = 0;
    for (uint32_t i = 0; i < tflm_expected_size; i++) {
        differ += out->data.int8[i] != (int8_t)tflm_expected[i];
    }
    printf("TFLM TICKS %llu\n", (unsigned long long)ticks);
    printf("TFLM ARENA_USED %u\n", (unsigned)interpreter.arena_used_bytes());
    printf("TFLM VERDICT %s differ=%u compared_bytes=%u\n", differ ? "FAIL" : "PASS", differ,
           (unsigned)tflm_expected_size);
    return differ ? 1 : 0;
}
