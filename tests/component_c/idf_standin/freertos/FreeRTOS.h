/* Test stand-in for ESP-IDF's freertos/FreeRTOS.h: the types the component's sources use. */
#ifndef ESPNN_TEST_FREERTOS_H
#define ESPNN_TEST_FREERTOS_H

#include <stdint.h>

typedef uint32_t TickType_t;
typedef int BaseType_t;
#define portMAX_DELAY ((TickType_t)0xffffffffUL)
#define pdTRUE 1
#define pdFALSE 0

#endif
