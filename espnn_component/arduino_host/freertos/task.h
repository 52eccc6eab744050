/* vTaskDelay on the host board: sleeps the calling thread. */
#ifndef ESPNN_HOST_FREERTOS_TASK_H
#define ESPNN_HOST_FREERTOS_TASK_H

#include "FreeRTOS.h"

#ifdef __cplusplus
extern "C" {
#endif

void vTaskDelay(TickType_t ticks);

#ifdef __cplusplus
}
#endif

#endif /* ESPNN_HOST_FREERTOS_TASK_H */
