/*
 * Scratch guard test mode of the host kernels (not ESP-NN API; host test builds only).
 *
 * Built with -DESPNN_HOST_SCRATCH_GUARD=<ESPNN_TARGET_* id>, the host twin of each
 * scratch-using kernel (conv, depthwise conv, softmax) writes the scratch regions the real
 * ESP-NN kernel of that target writes, and the engine gives each op a side buffer of the
 * payload's scratch_size followed by guard bytes instead of its arena scratch.  After every
 * op the guards are checked: a payload whose scratch_size is short of what the kernel writes
 * aborts the run with a message naming the op (the payload's rule, executorch_espnn/scratch.py,
 * is what this tests, independently of it).
 */
#ifndef ESP_NN_HOST_GUARD_H
#define ESP_NN_HOST_GUARD_H

#include <stdint.h>

#ifdef ESPNN_HOST_SCRATCH_GUARD
#if ESPNN_HOST_SCRATCH_GUARD < 1 || ESPNN_HOST_SCRATCH_GUARD > 6
/* 0 (generic: the ANSI kernels) writes no scratch: nothing to mirror */
#error "ESPNN_HOST_SCRATCH_GUARD: mirrored targets are 1..6 (ESP32, S2, S3, C3, C6, P4)"
#endif
#define HN_GUARD_S3 (ESPNN_HOST_SCRATCH_GUARD == 3)
#define HN_GUARD_P4 (ESPNN_HOST_SCRATCH_GUARD == 6)

/* the side buffer for op `op`: `allotted` bytes, then guard bytes; 16-byte aligned like an
 * arena scratch region; NULL for 0 bytes, as the engine passes it */
void *hn_guard_scratch(uint32_t op, uint32_t allotted);
/* abort with a message: the mirrored kernel, given NULL, would skip its work or write
 * through the NULL pointer */
_Noreturn void hn_guard_null(const char *kernel);
/* abort (after a message on stderr) if the last op wrote past its allotted bytes */
void hn_guard_check(void);
/* what the mirrored kernels write with: any byte but the guard's */
#define HN_GUARD_WRITE 0x3C
#endif

#endif /* ESP_NN_HOST_GUARD_H */
