/*
 * The scratch guard test mode (see esp_nn_host_guard.h).  Compiled to nothing else.
 */
#include "esp_nn_host_guard.h"

#ifdef ESPNN_HOST_SCRATCH_GUARD
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Guard bytes after the allotted scratch: more than any shortfall the tests provoke, so a
 * short payload hits the guard, not the heap.  The mirrored kernels write past it only if
 * a payload is short by more than this. */
#define GUARD_BYTES (1u << 20)
#define GUARD_BYTE 0xA5

static uint8_t *side;
static size_t side_cap;
static uint32_t side_op, side_allotted;
static int side_null;

void *hn_guard_scratch(uint32_t op, uint32_t allotted)
{
    side_op = op;
    side_null = allotted == 0;
    if (side_null) {
        return NULL; /* as the engine passes it: no scratch, no pointer */
    }
    const size_t need = (size_t)allotted + GUARD_BYTES;
    if (need > side_cap) {
        free(side);
        side_cap = (need + 15u) & ~(size_t)15u;
        side = aligned_alloc(16, side_cap);
        if (side == NULL) {
            fprintf(stderr, "scratch guard: cannot allocate %zu bytes\n", side_cap);
            abort();
        }
    }
    side_allotted = allotted;
    memset(side + allotted, GUARD_BYTE, GUARD_BYTES);
    return side;
}

_Noreturn void hn_guard_null(const char *kernel)
{
    fprintf(stderr,
            "scratch guard: op %lu: %s gets a NULL scratch (scratch_size 0) and would not "
            "compute or would write through it (fix the scratch rule)\n",
            (unsigned long)side_op, kernel);
    abort();
}

void hn_guard_check(void)
{
    if (side_null) {
        return;
    }
    const uint8_t *g = side + side_allotted;
    size_t last = GUARD_BYTES;
    while (last > 0 && g[last - 1] == GUARD_BYTE) {
        last--;
    }
    if (last > 0) {
        fprintf(stderr,
                "scratch guard: op %lu wrote %lu bytes past its scratch_size %lu (the kernel "
                "touches more than the payload allots: fix the scratch rule)\n",
                (unsigned long)side_op, (unsigned long)last, (unsigned long)side_allotted);
        abort();
    }
}
#else
typedef int hn_scratch_guard_unused; /* ISO C wants a declaration in every file */
#endif
