/* printf for ESP-NN's error messages (emulated/xtensa_s3/libc.c): %s %d %i %u %x %c %%. */
#ifndef EMU_S3_STDIO_H
#define EMU_S3_STDIO_H
#include <stddef.h>
int printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int puts(const char *s);
#endif
