/*
 * The ESP-NN API as the op families include it (private).
 *
 * ESP-NN's esp_nn.h picks the optimised kernels of the chip from CONFIG_NN_OPTIMIZED and
 * CONFIG_IDF_TARGET_*, but does not include sdkconfig.h itself: without this, an ESP-IDF
 * build would silently call the slow ANSI kernels.  On the host, esp_nn.h is this project's
 * host_espnn/ (or a real ESP-NN tree built ANSI-only).
 */
#ifndef ESPNN_ESP_NN_H
#define ESPNN_ESP_NN_H

#if defined(ESP_PLATFORM)
#include "sdkconfig.h"
#endif
#include "esp_nn.h"

#endif /* ESPNN_ESP_NN_H */
