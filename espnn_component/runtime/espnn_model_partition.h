/*
 * EspnnModel's model partition (custom_executorch_storage = partition): map the partition the
 * description names (ESP-IDF: esp_partition_mmap, zero copy; the host board: the file that
 * stands for it, mapped with mmap), check the image in it against the firmware, and describe
 * the mapped program as an embedded one, so the rest of EspnnModel does not care where the
 * bytes are.  Private to the runtime.
 */
#ifndef ESPNN_MODEL_PARTITION_H
#define ESPNN_MODEL_PARTITION_H

#include <stddef.h>
#include <stdint.h>

#include "espnn_model_image.h"
#include "espnn_pte.h"

namespace espnn_partition {

struct Mapping {
    const uint8_t *data = nullptr;
    size_t size = 0;
    uint32_t handle = 0; /* ESP-IDF: the mmap handle */
    bool mapped = false;
};

/* Maps the partition of `header` (a partition-storage description) and checks its image.
 * On success fills `out` (a copy of `header` with the image's bytes, sha256 and pool sizes, and
 * `tensors` = header's inputs then outputs with the image's quantization) and returns true;
 * else writes one line into msg, unmaps, and returns false.  `tensors` holds n_inputs +
 * n_outputs entries; `sha_hex` 65 bytes. */
bool open(const espnn_pte_desc_t &header, Mapping *mapping, espnn_pte_desc_t *out,
          espnn_pte_tensor_t *tensors, char *sha_hex, char *msg, size_t msg_size);

void close(Mapping *mapping);

/* Owns one mapping and unmaps it when destroyed, so that every early return of
 * EspnnModel::begin() releases it; begin() moves it into the model once the model holds the
 * program that reads the mapped bytes.  Move-only: two owners would unmap twice. */
class OwnedMapping {
  public:
    OwnedMapping() = default;
    ~OwnedMapping() { close(&mapping_); }
    OwnedMapping(OwnedMapping &&other) noexcept : mapping_(other.mapping_) { other.mapping_ = Mapping{}; }
    OwnedMapping &operator=(OwnedMapping &&other) noexcept {
        if (this != &other) {
            close(&mapping_);
            mapping_ = other.mapping_;
            other.mapping_ = Mapping{};
        }
        return *this;
    }
    OwnedMapping(const OwnedMapping &) = delete;
    OwnedMapping &operator=(const OwnedMapping &) = delete;

    Mapping *get() { return &mapping_; }

  private:
    Mapping mapping_{};
};

} // namespace espnn_partition

#endif /* ESPNN_MODEL_PARTITION_H */
