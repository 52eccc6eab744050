/*
 * Model image parser and checks (espnn_model_image.h), and the SHA-256 they use: our own small
 * implementation of FIPS 180-4, so that the component needs no crypto library on any target
 * (tests compare it with Python's hashlib).  Every field is read byte by byte (the image may be
 * mapped at any alignment; little-endian on every chip we serve) and checked before use.
 */
#include "espnn_model_image.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* ---- SHA-256 ------------------------------------------------------------------------------ */

static const uint32_t k_sha256_round[64] = {
    0x428a2f98u, 0x71374491u, 0xb5c0fbcfu, 0xe9b5dba5u, 0x3956c25bu, 0x59f111f1u, 0x923f82a4u, 0xab1c5ed5u,
    0xd807aa98u, 0x12835b01u, 0x243185beu, 0x550c7dc3u, 0x72be5d74u, 0x80deb1feu, 0x9bdc06a7u, 0xc19bf174u,
    0xe49b69c1u, 0xefbe4786u, 0x0fc19dc6u, 0x240ca1ccu, 0x2de92c6fu, 0x4a7484aau, 0x5cb0a9dcu, 0x76f988dau,
    0x983e5152u, 0xa831c66du, 0xb00327c8u, 0xbf597fc7u, 0xc6e00bf3u, 0xd5a79147u, 0x06ca6351u, 0x14292967u,
    0x27b70a85u, 0x2e1b2138u, 0x4d2c6dfcu, 0x53380d13u, 0x650a7354u, 0x766a0abbu, 0x81c2c92eu, 0x92722c85u,
    0xa2bfe8a1u, 0xa81a664bu, 0xc24b8b70u, 0xc76c51a3u, 0xd192e819u, 0xd6990624u, 0xf40e3585u, 0x106aa070u,
    0x19a4c116u, 0x1e376c08u, 0x2748774cu, 0x34b0bcb5u, 0x391c0cb3u, 0x4ed8aa4au, 0x5b9cca4fu, 0x682e6ff3u,
    0x748f82eeu, 0x78a5636fu, 0x84c87814u, 0x8cc70208u, 0x90befffau, 0xa4506cebu, 0xbef9a3f7u, 0xc67178f2u,
};

static uint32_t rotr(uint32_t x, unsigned n) { return (x >> n) | (x << (32u - n)); }

static uint32_t load_be32(const uint8_t *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

static void sha256_block(uint32_t h[8], const uint8_t block[64]) {
    uint32_t w[64];
    for (unsigned i = 0; i < 16; ++i) {
        w[i] = load_be32(block + 4 * i);
    }
    for (unsigned i = 16; i < 64; ++i) {
        const uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
        const uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
    for (unsigned i = 0; i < 64; ++i) {
        const uint32_t t1 = k + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) +
                            k_sha256_round[i] + w[i];
        const uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        k = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
    h[5] += f;
    h[6] += g;
    h[7] += k;
}

void espnn_sha256(const void *data, size_t len, uint8_t out[32]) {
    uint32_t h[8] = {0x6a09e667u, 0xbb67ae85u, 0x3c6ef372u, 0xa54ff53au,
                     0x510e527fu, 0x9b05688cu, 0x1f83d9abu, 0x5be0cd19u};
    const uint8_t *p = (const uint8_t *)data;
    size_t left = len;
    while (left >= 64) {
        sha256_block(h, p);
        p += 64;
        left -= 64;
    }
    /* the tail, the 0x80 marker and the 64-bit length in bits: one or two more blocks */
    uint8_t tail[128];
    memset(tail, 0, sizeof tail);
    if (left > 0) {
        memcpy(tail, p, left);
    }
    tail[left] = 0x80u;
    const size_t tail_len = left < 56 ? 64 : 128;
    const uint64_t bits = (uint64_t)len * 8u;
    for (unsigned i = 0; i < 8; ++i) {
        tail[tail_len - 1 - i] = (uint8_t)(bits >> (8 * i));
    }
    sha256_block(h, tail);
    if (tail_len == 128) {
        sha256_block(h, tail + 64);
    }
    for (unsigned i = 0; i < 8; ++i) {
        out[4 * i] = (uint8_t)(h[i] >> 24);
        out[4 * i + 1] = (uint8_t)(h[i] >> 16);
        out[4 * i + 2] = (uint8_t)(h[i] >> 8);
        out[4 * i + 3] = (uint8_t)h[i];
    }
}

/* ---- the header ------------------------------------------------------------------------- */

/* Field offsets of executorch_espnn/model_image.py's layout (its struct _FIXED, then the
 * quantization table, reserved bytes, and the header's own sha256 in the last 32 bytes). */
enum {
    OFF_MAGIC = 0,
    OFF_FORMAT = 8,
    OFF_HEADER_SIZE = 12,
    OFF_PTE_OFFSET = 16,
    OFF_PTE_SIZE = 20,
    OFF_PTE_SHA = 24,
    OFF_ET_VERSION = 56,
    OFF_PKG_VERSION = 72,
    OFF_FMT_MAJOR = 88,
    OFF_FMT_MINOR = 90,
    OFF_TARGET = 92,
    OFF_POOLS = 108, /* arena, state, planned, method, temp, pointer bytes */
    OFF_N_INPUTS = 132,
    OFF_N_OUTPUTS = 136,
    OFF_SIG_SHA = 140,
    OFF_SIG_TEXT = 172,
    OFF_QUANT = 332,
    OFF_CHECKSUM = ESPNN_IMAGE_HEADER_SIZE - 32,
};

static const char k_magic[8] = {'E', 'S', 'P', 'N', 'N', 'I', 'M', 'G'};

static uint32_t load_le32(const uint8_t *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static uint16_t load_le16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }

/* A NUL-padded text field, kept printable (a corrupt image must not put control bytes or
 * invalid UTF-8 into a log line). */
static void load_text(const uint8_t *p, size_t field, char *out, size_t out_size) {
    size_t n = 0;
    for (; n < field && n + 1 < out_size && p[n] != 0; ++n) {
        out[n] = (p[n] >= 0x20 && p[n] < 0x7f) ? (char)p[n] : '?';
    }
    out[n] = '\0';
}

static void hex8(const uint8_t *sha, char out[17]) {
    static const char digits[] = "0123456789abcdef";
    for (unsigned i = 0; i < 8; ++i) {
        out[2 * i] = digits[sha[i] >> 4];
        out[2 * i + 1] = digits[sha[i] & 15u];
    }
    out[16] = '\0';
}

static const char *k_fix = "write this build's model with `pio run -t uploadmodel`";

int espnn_image_parse(const uint8_t *data, size_t size, espnn_model_image_t *out, char *msg,
                      size_t msg_size) {
    memset(out, 0, sizeof *out);
    if (data == NULL || size < ESPNN_IMAGE_HEADER_SIZE) {
        snprintf(msg, msg_size, "the model partition (%lu bytes) is smaller than a model image header (%u bytes): %s",
                 (unsigned long)size, (unsigned)ESPNN_IMAGE_HEADER_SIZE, k_fix);
        return -1;
    }
    if (memcmp(data + OFF_MAGIC, k_magic, sizeof k_magic) != 0) {
        snprintf(msg, msg_size, "the model partition holds no model image (magic %02x%02x%02x%02x...): %s",
                 data[0], data[1], data[2], data[3], k_fix);
        return -1;
    }
    const uint32_t format = load_le32(data + OFF_FORMAT);
    const uint32_t header_size = load_le32(data + OFF_HEADER_SIZE);
    const uint32_t pte_offset = load_le32(data + OFF_PTE_OFFSET);
    if (format != ESPNN_IMAGE_FORMAT_VERSION || header_size != ESPNN_IMAGE_HEADER_SIZE ||
        pte_offset != ESPNN_IMAGE_HEADER_SIZE) {
        snprintf(msg, msg_size,
                 "the model image has format version %" PRIu32 " (header %" PRIu32 " bytes), this firmware reads "
                 "version %u: %s with the executorch-espnn this firmware was built with",
                 format, header_size, (unsigned)ESPNN_IMAGE_FORMAT_VERSION, k_fix);
        return -1;
    }
    uint8_t sha[32];
    espnn_sha256(data, OFF_CHECKSUM, sha);
    if (memcmp(sha, data + OFF_CHECKSUM, sizeof sha) != 0) {
        snprintf(msg, msg_size, "the model image's header checksum does not match (a corrupt or half-written image): %s",
                 k_fix);
        return -1;
    }
    const uint32_t pte_size = load_le32(data + OFF_PTE_SIZE);
    if (pte_size == 0 || pte_size > size - pte_offset) {
        snprintf(msg, msg_size,
                 "the model image's .pte of %" PRIu32 " bytes does not fit the %lu-byte partition after its header: "
                 "rebuild with a larger model partition (custom_executorch_partition_size) and upload the firmware",
                 pte_size, (unsigned long)size);
        return -1;
    }
    espnn_sha256(data + pte_offset, pte_size, sha);
    if (memcmp(sha, data + OFF_PTE_SHA, sizeof sha) != 0) {
        char got[17];
        char want[17];
        hex8(sha, got);
        hex8(data + OFF_PTE_SHA, want);
        snprintf(msg, msg_size,
                 "the model image's .pte has sha256 %s..., its header says %s... (a corrupt or half-written image): %s",
                 got, want, k_fix);
        return -1;
    }
    out->n_inputs = load_le32(data + OFF_N_INPUTS);
    out->n_outputs = load_le32(data + OFF_N_OUTPUTS);
    if (out->n_inputs > ESPNN_IMAGE_MAX_TENSORS || out->n_outputs > ESPNN_IMAGE_MAX_TENSORS - out->n_inputs) {
        snprintf(msg, msg_size, "the model image lists %" PRIu32 " inputs and %" PRIu32 " outputs (at most %u): %s",
                 out->n_inputs, out->n_outputs, (unsigned)ESPNN_IMAGE_MAX_TENSORS, k_fix);
        return -1;
    }
    out->pte = data + pte_offset;
    out->pte_size = pte_size;
    memcpy(out->pte_sha256, data + OFF_PTE_SHA, 32);
    load_text(data + OFF_ET_VERSION, ESPNN_IMAGE_STRING_BYTES, out->executorch_version, sizeof out->executorch_version);
    load_text(data + OFF_PKG_VERSION, ESPNN_IMAGE_STRING_BYTES, out->package_version, sizeof out->package_version);
    out->payload_format_major = load_le16(data + OFF_FMT_MAJOR);
    out->payload_format_minor = load_le16(data + OFF_FMT_MINOR);
    load_text(data + OFF_TARGET, ESPNN_IMAGE_STRING_BYTES, out->target, sizeof out->target);
    uint32_t *pools[6] = {&out->arena_bytes, &out->state_bytes, &out->planned_bytes,
                          &out->method_allocator_bytes, &out->temp_allocator_bytes, &out->pointer_bytes};
    for (unsigned i = 0; i < 6; ++i) {
        *pools[i] = load_le32(data + OFF_POOLS + 4 * i);
    }
    memcpy(out->signature_sha256, data + OFF_SIG_SHA, 32);
    load_text(data + OFF_SIG_TEXT, ESPNN_IMAGE_SIGNATURE_TEXT_BYTES, out->signature, sizeof out->signature);
    for (uint32_t i = 0; i < out->n_inputs + out->n_outputs; ++i) {
        const uint32_t bits = load_le32(data + OFF_QUANT + 8 * i);
        float scale;
        memcpy(&scale, &bits, sizeof scale);
        /* only a finite positive scale is a quantization; anything else means "none" */
        out->quant[i].scale = (scale > 0.0f && scale < 3.0e38f) ? scale : 0.0f;
        out->quant[i].zero_point = (int32_t)load_le32(data + OFF_QUANT + 8 * i + 4);
    }
    if (msg_size > 0) {
        msg[0] = '\0';
    }
    return 0;
}

static int hex_equals(const uint8_t sha[32], const char *hex) {
    static const char digits[] = "0123456789abcdef";
    if (hex == NULL || strlen(hex) != 64) {
        return 0;
    }
    for (unsigned i = 0; i < 32; ++i) {
        if (hex[2 * i] != digits[sha[i] >> 4] || hex[2 * i + 1] != digits[sha[i] & 15u]) {
            return 0;
        }
    }
    return 1;
}

static const char *text_or(const char *s) { return s != NULL ? s : "?"; }

int espnn_image_check(const espnn_model_image_t *image, const espnn_pte_desc_t *desc, char *msg,
                      size_t msg_size) {
    const char *fix = "rebuild the model for this firmware and write it with `pio run -t uploadmodel` "
                      "(or rebuild and upload the firmware for the new model)";
    const int versions_ok = strcmp(image->executorch_version, text_or(desc->executorch_version)) == 0 &&
                            strcmp(image->package_version, text_or(desc->package_version)) == 0 &&
                            image->payload_format_major == desc->payload_format_major &&
                            image->payload_format_minor == desc->payload_format_minor;
    if (!versions_ok) {
        snprintf(msg, msg_size,
                 "the model partition holds a model built by executorch-espnn %s for ExecuTorch %s (payload format "
                 "%u.%u), this firmware was built by executorch-espnn %s for ExecuTorch %s (payload format %u.%u): %s",
                 image->package_version, image->executorch_version, (unsigned)image->payload_format_major,
                 (unsigned)image->payload_format_minor, text_or(desc->package_version),
                 text_or(desc->executorch_version), (unsigned)desc->payload_format_major,
                 (unsigned)desc->payload_format_minor, fix);
        return -1;
    }
    if (strcmp(image->target, text_or(desc->target)) != 0) {
        snprintf(msg, msg_size,
                 "the model partition holds a model lowered for %s, this firmware was built for %s: %s", image->target,
                 text_or(desc->target), fix);
        return -1;
    }
    if (image->pointer_bytes < sizeof(void *)) {
        snprintf(msg, msg_size,
                 "the model image's pools were measured with %" PRIu32 "-byte pointers, this build has %u-byte "
                 "pointers: %s",
                 image->pointer_bytes, (unsigned)sizeof(void *), fix);
        return -1;
    }
    if (!hex_equals(image->signature_sha256, desc->io_signature_sha256) || image->n_inputs != desc->n_inputs ||
        image->n_outputs != desc->n_outputs) {
        snprintf(msg, msg_size, "the model partition holds a model with I/O \"%.100s\", this firmware was built for "
                 "\"%.100s\": %s",
                 image->signature, text_or(desc->io_signature), fix);
        return -1;
    }
    if (msg_size > 0) {
        msg[0] = '\0';
    }
    return 0;
}
