/*
 * The board hooks of the bare-metal PAL (pal/espnn_pal_baremetal.cpp), for a firmware without
 * an RTOS or an ESP-IDF underneath.  The PAL times everything with the board's free-running
 * counter: define both functions in the application (strong definitions replace the weak ones
 * of the PAL).  Without them the PAL uses the C library's clock() and CLOCKS_PER_SEC, which on
 * many bare-metal C libraries is coarse or absent.
 */
#ifndef ESPNN_BAREMETAL_H
#define ESPNN_BAREMETAL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A monotonic count that does not wrap in the firmware's lifetime (extend a 24- or 32-bit
 * hardware counter to 64 bits). */
uint64_t espnn_baremetal_ticks(void);

/* How many counts espnn_baremetal_ticks() advances per second (nonzero). */
uint32_t espnn_baremetal_ticks_per_second(void);

#ifdef __cplusplus
}
#endif

#endif /* ESPNN_BAREMETAL_H */
