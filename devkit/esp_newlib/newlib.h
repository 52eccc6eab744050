/* Espressif's newlib configuration on top of Debian's newlib headers, for compiling ESP-IDF
 * code with Debian's RISC-V GCC (devkit/real_builders.py riscv_compilers): the ESP toolchains'
 * newlib is built with retargetable locking, which ESP-IDF 5.5's newlib/platform_include/
 * sys/lock.h builds its _lock_t API on; Debian's is not. */
#ifndef ESPNN_DEVKIT_ESP_NEWLIB_H
#define ESPNN_DEVKIT_ESP_NEWLIB_H
#include_next <newlib.h>
#ifndef _RETARGETABLE_LOCKING
#define _RETARGETABLE_LOCKING 1
#endif
#endif
