/* Test stand-in for ESP-IDF's freertos/semphr.h (FreeRTOS's documented signatures). */
#ifndef ESPNN_TEST_FREERTOS_SEMPHR_H
#define ESPNN_TEST_FREERTOS_SEMPHR_H

#include "freertos/FreeRTOS.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct StaticSemaphore {
    void *opaque[12];
} StaticSemaphore_t;
typedef struct QueueDefinition *SemaphoreHandle_t;

SemaphoreHandle_t xSemaphoreCreateMutexStatic(StaticSemaphore_t *buffer);
BaseType_t xSemaphoreTake(SemaphoreHandle_t sem, TickType_t ticks);
BaseType_t xSemaphoreGive(SemaphoreHandle_t sem);

#ifdef __cplusplus
}
#endif

#endif
