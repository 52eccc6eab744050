/* The one declaration where Espressif's newlib (the ESP toolchains' libc) and Debian's newlib
 * headers disagree, for compiling ESP-IDF code with Debian's RISC-V GCC
 * (devkit/real_builders.py riscv_compilers): Debian's newlib declares _global_impure_ptr
 * `struct _reent *const`, Espressif's `struct _reent *`, and ESP-IDF 5.5's
 * newlib/platform_include/sys/reent.h redeclares it the Espressif way.  Searched after GCC's own
 * headers and before Debian's newlib ones: Debian's declaration goes under another name, then
 * this declares it as Espressif's newlib does. */
#ifndef ESPNN_DEVKIT_ESP_NEWLIB_REENT_H
#define ESPNN_DEVKIT_ESP_NEWLIB_REENT_H
#define _global_impure_ptr _espnn_debian_global_impure_ptr
#include_next <sys/reent.h>
#undef _global_impure_ptr
#ifdef __cplusplus
extern "C" struct _reent *_global_impure_ptr __ATTRIBUTE_IMPURE_PTR__;
#else
extern struct _reent *_global_impure_ptr __ATTRIBUTE_IMPURE_PTR__;
#endif
#endif
