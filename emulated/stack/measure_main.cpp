/*
 * The emulated firmware that measures a program's pools on the 32-bit target itself: the same
 * measurement executorch_espnn.host.measure makes on the host (runtime/espnn_host_api.cpp: the
 * program loaded once, the method allocator replayed as a bump allocator over a 16-aligned pool,
 * one execute on zero inputs), here with 4-byte pointers.  Prints one EMU SIZES line.
 */
#include <cinttypes>
#include <cstdio>

#include "espnn_host_api.h"
#include "model_pte.h"

int main() {
    executorch_espnn_pte_sizes_t s;
    char msg[320];
    const int rc = executorch_espnn_measure_pte(espnn_model_pte_data, ESPNN_MODEL_PTE_SIZE, "forward", &s,
                                                msg, sizeof msg);
    if (rc != 0) {
        std::printf("EMU SIZES FAILED %d: %s\n", rc, msg);
        return 1;
    }
    std::printf("EMU SIZES planned_bytes=%" PRIu64 " method_allocator_bytes=%" PRIu64
                " temp_allocator_bytes=%" PRIu64 " delegate_handle_bytes=%" PRIu64
                " delegate_state_bytes=%" PRIu64 " delegate_arena_bytes=%" PRIu64
                " delegate_weights_bytes=%" PRIu64 " n_planned_buffers=%" PRIu32 " n_delegates=%" PRIu32
                " pointer_bytes=%" PRIu32 "\n",
                s.planned_bytes, s.method_allocator_bytes, s.temp_allocator_bytes, s.delegate_handle_bytes,
                s.delegate_state_bytes, s.delegate_arena_bytes, s.delegate_weights_bytes, s.n_planned_buffers,
                s.n_delegates, s.pointer_bytes);
    return 0;
}
