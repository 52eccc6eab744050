/*
 * Mapping the model partition (espnn_model_partition.h).  ESP-IDF: esp_partition_find_first by
 * label, then esp_partition_mmap of the header and of header + .pte (flash used in place, as an
 * embedded .pte is); before ESP-IDF 5.1 (4.4: Arduino-ESP32 2.0.x) the mmap kinds, handle and
 * unmap are spi_flash's.  The
 * host board: the file the build names (or ESPNN_MODEL_PARTITION_FILE), mapped read-only.
 */
#include "espnn_model_partition.h"

#include <stdio.h>
#include <string.h>

#if defined(ESP_PLATFORM)
#include "esp_idf_version.h"
#include "esp_partition.h"
#elif defined(__has_include)
#if __has_include(<sys/mman.h>)
#define ESPNN_PARTITION_POSIX 1 /* the host board */
#endif
#endif
#if defined(ESPNN_PARTITION_POSIX)
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

namespace espnn_partition {

namespace {

const char *label_of(const espnn_pte_desc_t &d) { return d.partition_label != nullptr ? d.partition_label : "?"; }

#if defined(ESP_PLATFORM)
/* ESP-IDF 5.1 moved the partition API into its own component with its own mmap names */
#if ESP_IDF_VERSION >= ESP_IDF_VERSION_VAL(5, 1, 0)
using MmapHandle = esp_partition_mmap_handle_t;
constexpr esp_partition_mmap_memory_t kMmapData = ESP_PARTITION_MMAP_DATA;
void unmap_handle(MmapHandle h) { esp_partition_munmap(h); }
#else
using MmapHandle = spi_flash_mmap_handle_t;
constexpr spi_flash_mmap_memory_t kMmapData = SPI_FLASH_MMAP_DATA;
void unmap_handle(MmapHandle h) { spi_flash_munmap(h); }
#endif

bool map_bytes(const esp_partition_t *part, size_t size, Mapping *m, char *msg, size_t msg_size) {
    const void *ptr = nullptr;
    MmapHandle handle = 0;
    const esp_err_t err = esp_partition_mmap(part, 0, size, kMmapData, &ptr, &handle);
    if (err != ESP_OK) {
        snprintf(msg, msg_size, "cannot map %lu bytes of the model partition '%s' (esp_err 0x%x)",
                 static_cast<unsigned long>(size), part->label, static_cast<unsigned>(err));
        return false;
    }
    m->data = static_cast<const uint8_t *>(ptr);
    m->size = size;
    m->handle = static_cast<uint32_t>(handle);
    m->mapped = true;
    return true;
}

bool map(const espnn_pte_desc_t &d, Mapping *m, char *msg, size_t msg_size) {
    const esp_partition_t *part =
        esp_partition_find_first(ESP_PARTITION_TYPE_DATA, ESP_PARTITION_SUBTYPE_ANY, label_of(d));
    if (part == nullptr) {
        snprintf(msg, msg_size,
                 "no data partition '%s' in the flash's partition table: upload this firmware with its partition "
                 "table (`pio run -t upload`), then the model (`pio run -t uploadmodel`)",
                 label_of(d));
        return false;
    }
    if (part->size < ESPNN_IMAGE_HEADER_SIZE) {
        snprintf(msg, msg_size, "the model partition '%s' has %lu bytes, too few for a model image", part->label,
                 static_cast<unsigned long>(part->size));
        return false;
    }
    /* the header first, to map only the image's bytes (the data MMU's pages are few) */
    if (!map_bytes(part, ESPNN_IMAGE_HEADER_SIZE, m, msg, msg_size)) {
        return false;
    }
    const uint8_t *h = m->data;
    const uint32_t pte_size = static_cast<uint32_t>(h[20]) | (static_cast<uint32_t>(h[21]) << 8) |
                              (static_cast<uint32_t>(h[22]) << 16) | (static_cast<uint32_t>(h[23]) << 24);
    close(m);
    size_t want = part->size;
    if (pte_size <= part->size - ESPNN_IMAGE_HEADER_SIZE) {
        want = ESPNN_IMAGE_HEADER_SIZE + pte_size; /* else the parser names the bad length */
    }
    return map_bytes(part, want, m, msg, msg_size);
}

void unmap(Mapping *m) { unmap_handle(static_cast<MmapHandle>(m->handle)); }
#elif defined(ESPNN_PARTITION_POSIX)
bool map(const espnn_pte_desc_t &d, Mapping *m, char *msg, size_t msg_size) {
    const char *path = getenv("ESPNN_MODEL_PARTITION_FILE");
    if (path == nullptr || path[0] == '\0') {
        path = d.host_image_path;
    }
    if (path == nullptr || path[0] == '\0') {
        snprintf(msg, msg_size,
                 "model_pte.h names no file for the model partition '%s' (ESPNN_MODEL_HOST_IMAGE_PATH): set "
                 "ESPNN_MODEL_PARTITION_FILE to the image `pio run -t uploadmodel` writes",
                 label_of(d));
        return false;
    }
    const int fd = ::open(path, O_RDONLY);
    if (fd < 0) {
        snprintf(msg, msg_size, "cannot open the model partition file %.160s (%s): write the model with "
                 "`pio run -t uploadmodel`", path, strerror(errno));
        return false;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size <= 0) {
        ::close(fd);
        snprintf(msg, msg_size, "the model partition file %.160s is empty: write the model with "
                 "`pio run -t uploadmodel`", path);
        return false;
    }
    const size_t size = static_cast<size_t>(st.st_size);
    if (size > d.partition_size) {
        ::close(fd);
        snprintf(msg, msg_size,
                 "the model partition file %.120s has %lu bytes, more than the %lu-byte partition '%s' this "
                 "firmware was built with: rebuild with a larger custom_executorch_partition_size and upload the "
                 "firmware",
                 path, static_cast<unsigned long>(size), static_cast<unsigned long>(d.partition_size), label_of(d));
        return false;
    }
    void *p = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (p == MAP_FAILED) {
        snprintf(msg, msg_size, "cannot map the model partition file %.160s (%s)", path, strerror(errno));
        return false;
    }
    m->data = static_cast<const uint8_t *>(p);
    m->size = size;
    m->mapped = true;
    return true;
}

void unmap(Mapping *m) { munmap(const_cast<uint8_t *>(m->data), m->size); }
#else
/* a bare-metal firmware has no partition table: it embeds its model */
bool map(const espnn_pte_desc_t &d, Mapping *, char *msg, size_t msg_size) {
    snprintf(msg, msg_size,
             "this platform cannot map the model partition '%s': build with custom_executorch_storage = embedded",
             label_of(d));
    return false;
}

void unmap(Mapping *) {}
#endif

void to_hex(const uint8_t sha[32], char *out) {
    static const char digits[] = "0123456789abcdef";
    for (unsigned i = 0; i < 32; ++i) {
        out[2 * i] = digits[sha[i] >> 4];
        out[2 * i + 1] = digits[sha[i] & 15u];
    }
    out[64] = '\0';
}

} // namespace

void close(Mapping *mapping) {
    if (mapping->mapped) {
        unmap(mapping);
    }
    *mapping = Mapping{};
}

bool open(const espnn_pte_desc_t &header, Mapping *mapping, espnn_pte_desc_t *out, espnn_pte_tensor_t *tensors,
          char *sha_hex, char *msg, size_t msg_size) {
    if (!map(header, mapping, msg, msg_size)) {
        return false;
    }
    espnn_model_image_t image;
    char why[300];
    const size_t limit = mapping->size < header.partition_size || header.partition_size == 0 ? mapping->size
                                                                                            : header.partition_size;
    if (espnn_image_parse(mapping->data, limit, &image, why, sizeof why) != 0 ||
        espnn_image_check(&image, &header, why, sizeof why) != 0) {
        snprintf(msg, msg_size, "partition '%s': %s", label_of(header), why);
        close(mapping);
        return false;
    }
    *out = header;
    out->data = image.pte;
    out->size = image.pte_size;
    to_hex(image.pte_sha256, sha_hex);
    out->sha256 = sha_hex;
    out->arena_bytes = image.arena_bytes;
    out->state_bytes = image.state_bytes;
    out->planned_bytes = image.planned_bytes;
    out->method_allocator_bytes = image.method_allocator_bytes;
    out->temp_allocator_bytes = image.temp_allocator_bytes;
    const uint32_t n = header.n_inputs + header.n_outputs;
    for (uint32_t i = 0; i < n; ++i) {
        tensors[i] = i < header.n_inputs ? header.inputs[i] : header.outputs[i - header.n_inputs];
        tensors[i].scale = image.quant[i].scale;
        tensors[i].zero_point = image.quant[i].zero_point;
    }
    out->inputs = tensors;
    out->outputs = tensors + header.n_inputs;
    return true;
}

} // namespace espnn_partition
