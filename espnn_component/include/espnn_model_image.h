/*
 * The model image (custom_executorch_storage = partition): a .pte with the facts EspnnModel
 * needs, written by the build (executorch_espnn/model_image.py, the layout's Python home) into
 * the model partition by `pio run -t uploadmodel`.  This is the C side: a parser that never
 * trusts the bytes (a partition may hold anything: an old model, a half-written one, another
 * build's), the checks against what the firmware was built for, and the sha256 they use.
 * Plain C11, no allocation.  docs/model-partition.md describes the layout.
 */
#ifndef ESPNN_MODEL_IMAGE_H
#define ESPNN_MODEL_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "espnn_pte.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ESPNN_IMAGE_FORMAT_VERSION 1u
#define ESPNN_IMAGE_HEADER_SIZE 512u
#define ESPNN_IMAGE_STRING_BYTES 16u
#define ESPNN_IMAGE_SIGNATURE_TEXT_BYTES 160u
#define ESPNN_IMAGE_MAX_TENSORS 16u

typedef struct espnn_image_quant {
    float scale; /* 0: the tensor is not quantized */
    int32_t zero_point;
} espnn_image_quant_t;

/* The header's fields, copied out (strings NUL-terminated) and checked by espnn_image_parse. */
typedef struct espnn_model_image {
    const uint8_t *pte; /* inside the parsed bytes, 16-byte aligned when they are */
    uint32_t pte_size;
    uint8_t pte_sha256[32];
    char executorch_version[ESPNN_IMAGE_STRING_BYTES];
    char package_version[ESPNN_IMAGE_STRING_BYTES];
    uint16_t payload_format_major;
    uint16_t payload_format_minor;
    char target[ESPNN_IMAGE_STRING_BYTES];
    uint32_t arena_bytes;
    uint32_t state_bytes;
    uint32_t planned_bytes;
    uint32_t method_allocator_bytes;
    uint32_t temp_allocator_bytes;
    uint32_t pointer_bytes; /* the pointer size the pools were measured with */
    uint32_t n_inputs;
    uint32_t n_outputs;
    uint8_t signature_sha256[32];
    char signature[ESPNN_IMAGE_SIGNATURE_TEXT_BYTES];
    espnn_image_quant_t quant[ESPNN_IMAGE_MAX_TENSORS]; /* inputs, then outputs */
} espnn_model_image_t;

/* FIPS 180-4 SHA-256 of `len` bytes into `out`. */
void espnn_sha256(const void *data, size_t len, uint8_t out[32]);

/* Parses `size` bytes (a mapped partition: its whole size) as a model image: magic, format
 * version, the header's checksum, the .pte's length (within `size`) and its sha256.  Returns 0,
 * or -1 with one line in `msg` naming what is wrong and how to fix it. */
int espnn_image_parse(const uint8_t *data, size_t size, espnn_model_image_t *out, char *msg,
                      size_t msg_size);

/* Checks a parsed image against the firmware's description (a partition-storage model_pte.h):
 * ExecuTorch and executorch-espnn versions, payload format, lowering target, pointer size and
 * the I/O signature.  Returns 0, or -1 with one line naming the image's and the firmware's
 * values and the fix. */
int espnn_image_check(const espnn_model_image_t *image, const espnn_pte_desc_t *desc, char *msg,
                      size_t msg_size);

#ifdef __cplusplus
}
#endif

#endif /* ESPNN_MODEL_IMAGE_H */
