/* For clang (devkit/real_builders.py xtensa_compilers): clang's own <stdatomic.h> passes on to
 * the C library's in a hosted build, and newlib's uses the <stdint.h> names (int_least8_t...)
 * without including it; GCC's <stdatomic.h> never reaches newlib's. */
#ifndef ESPNN_DEVKIT_ESP_STDATOMIC_H
#define ESPNN_DEVKIT_ESP_STDATOMIC_H
#include <stdint.h>
#include_next <stdatomic.h>
#endif
