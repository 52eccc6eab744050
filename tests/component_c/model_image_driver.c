/* Test driver for espnn_model_image.c (tests/test_model_image.py).
 *   model_image_driver sha256 FILE          -> the hex sha256 of FILE
 *   model_image_driver parse FILE           -> "ok ..." fields, or "error: <message>"
 *   model_image_driver check FILE ET PKG MAJOR MINOR TARGET SIG_SHA SIG N_IN N_OUT
 *                                           -> parse, then check against that description
 * The whole file is read into a buffer of exactly its size, so ASan catches any read past it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "espnn_model_image.h"

static unsigned char *read_file(const char *path, size_t *size) {
    FILE *fp = fopen(path, "rb");
    if (fp == NULL) {
        return NULL;
    }
    fseek(fp, 0, SEEK_END);
    const long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    unsigned char *buf = (unsigned char *)malloc(n > 0 ? (size_t)n : 1u);
    *size = n > 0 && fread(buf, 1, (size_t)n, fp) == (size_t)n ? (size_t)n : 0;
    fclose(fp);
    return buf;
}

static void print_hex(const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        printf("%02x", p[i]);
    }
}

int main(int argc, char **argv) {
    if (argc < 3) {
        return 2;
    }
    size_t size = 0;
    unsigned char *data = read_file(argv[2], &size);
    if (data == NULL) {
        return 2;
    }
    if (strcmp(argv[1], "sha256") == 0) {
        uint8_t sha[32];
        espnn_sha256(data, size, sha);
        print_hex(sha, 32);
        printf("\n");
        free(data);
        return 0;
    }
    espnn_model_image_t img;
    char msg[400];
    if (espnn_image_parse(data, size, &img, msg, sizeof msg) != 0) {
        printf("error: %s\n", msg);
        free(data);
        return 0;
    }
    if (strcmp(argv[1], "check") == 0 && argc >= 12) {
        espnn_pte_desc_t desc;
        memset(&desc, 0, sizeof desc);
        desc.executorch_version = argv[3];
        desc.package_version = argv[4];
        desc.payload_format_major = (uint16_t)atoi(argv[5]);
        desc.payload_format_minor = (uint16_t)atoi(argv[6]);
        desc.target = argv[7];
        desc.io_signature_sha256 = argv[8];
        desc.io_signature = argv[9];
        desc.n_inputs = (uint32_t)atoi(argv[10]);
        desc.n_outputs = (uint32_t)atoi(argv[11]);
        if (espnn_image_check(&img, &desc, msg, sizeof msg) != 0) {
            printf("error: %s\n", msg);
        } else {
            printf("ok\n");
        }
        free(data);
        return 0;
    }
    printf("ok pte_offset=%ld pte_size=%lu et=%s pkg=%s format=%u.%u target=%s arena=%lu state=%lu planned=%lu "
           "method=%lu temp=%lu pointer=%lu inputs=%lu outputs=%lu sha=",
           (long)(img.pte - data), (unsigned long)img.pte_size, img.executorch_version, img.package_version,
           (unsigned)img.payload_format_major, (unsigned)img.payload_format_minor, img.target,
           (unsigned long)img.arena_bytes, (unsigned long)img.state_bytes, (unsigned long)img.planned_bytes,
           (unsigned long)img.method_allocator_bytes, (unsigned long)img.temp_allocator_bytes,
           (unsigned long)img.pointer_bytes, (unsigned long)img.n_inputs, (unsigned long)img.n_outputs);
    print_hex(img.pte_sha256, 32);
    printf(" sigsha=");
    print_hex(img.signature_sha256, 32);
    printf(" quant=");
    for (uint32_t i = 0; i < img.n_inputs + img.n_outputs; ++i) {
        printf("%s%.9g/%ld", i ? "," : "", (double)img.quant[i].scale, (long)img.quant[i].zero_point);
    }
    printf(" sig=%s\n", img.signature);
    free(data);
    return 0;
}
