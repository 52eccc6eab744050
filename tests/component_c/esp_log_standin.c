/* esp_log_write() for the stand-in esp_log.h: the formatted line on stdout. */
#include <stdarg.h>
#include <stdio.h>

#include "esp_log.h"

void esp_log_write(esp_log_level_t level, const char *tag, const char *format, ...) {
    (void)level;
    (void)tag;
    va_list ap;
    va_start(ap, format);
    vprintf(format, ap);
    va_end(ap);
}
