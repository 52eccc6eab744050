/* Test stand-in for ESP-IDF's esp_partition.h: the declarations EspnnModel's partition mapping
 * uses, in the ESP-IDF 5.1+ form or, before 5.1 (ESPNN_STANDIN_IDF_MAJOR=4: 4.4), the older form
 * (mmap kinds, handle and unmap of spi_flash).  No definitions: the cross-compile gate
 * compiles against it, tests run the host mapping. */
#ifndef ESPNN_TEST_ESP_PARTITION_H
#define ESPNN_TEST_ESP_PARTITION_H

#include <stddef.h>
#include <stdint.h>

#include "esp_idf_version.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef int esp_err_t;
#define ESP_OK 0

typedef enum { ESP_PARTITION_TYPE_APP = 0x00, ESP_PARTITION_TYPE_DATA = 0x01 } esp_partition_type_t;
typedef enum { ESP_PARTITION_SUBTYPE_ANY = 0xff } esp_partition_subtype_t;

typedef struct {
    void *flash_chip;
    esp_partition_type_t type;
    esp_partition_subtype_t subtype;
    uint32_t address;
    uint32_t size;
    uint32_t erase_size;
    char label[17];
    int encrypted;
    int readonly;
} esp_partition_t;

#if ESP_IDF_VERSION >= ESP_IDF_VERSION_VAL(5, 1, 0)
typedef enum { ESP_PARTITION_MMAP_DATA, ESP_PARTITION_MMAP_INST } esp_partition_mmap_memory_t;
typedef uint32_t esp_partition_mmap_handle_t;
esp_err_t esp_partition_mmap(const esp_partition_t *partition, size_t offset, size_t size,
                             esp_partition_mmap_memory_t memory, const void **out_ptr,
                             esp_partition_mmap_handle_t *out_handle);
void esp_partition_munmap(esp_partition_mmap_handle_t handle);
#else
typedef enum { SPI_FLASH_MMAP_DATA, SPI_FLASH_MMAP_INST } spi_flash_mmap_memory_t;
typedef uint32_t spi_flash_mmap_handle_t;
esp_err_t esp_partition_mmap(const esp_partition_t *partition, size_t offset, size_t size,
                             spi_flash_mmap_memory_t memory, const void **out_ptr,
                             spi_flash_mmap_handle_t *out_handle);
void spi_flash_munmap(spi_flash_mmap_handle_t handle);
#endif

const esp_partition_t *esp_partition_find_first(esp_partition_type_t type, esp_partition_subtype_t subtype,
                                                const char *label);

#ifdef __cplusplus
}
#endif

#endif
