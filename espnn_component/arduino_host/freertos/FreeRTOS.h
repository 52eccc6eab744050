/* The slice of FreeRTOS that single-task ESP-IDF examples use, on the host board. */
#ifndef ESPNN_HOST_FREERTOS_H
#define ESPNN_HOST_FREERTOS_H

#include <stdint.h>

typedef uint32_t TickType_t;
#define configTICK_RATE_HZ 1000
#define portTICK_PERIOD_MS (1000 / configTICK_RATE_HZ)
#define pdMS_TO_TICKS(ms) ((TickType_t)(ms) * configTICK_RATE_HZ / 1000)

#endif /* ESPNN_HOST_FREERTOS_H */
