/* The part of <string.h> the engine, ESP-NN and the harness use (emulated/xtensa_s3/libc.c):
 * no C library exists for the windowed Xtensa ABI on this machine. */
#ifndef EMU_S3_STRING_H
#define EMU_S3_STRING_H
#include <stddef.h>
void *memcpy(void *restrict dst, const void *restrict src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);
#endif
