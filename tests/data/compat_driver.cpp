// Drives espnn_compat.cpp from tests/test_host_runtime.py:
//   compat_driver payload HEXBYTES        -> "<code> <message>"
//   compat_driver desc ET PKG MAJOR MINOR  -> "<0|1> <message>"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "espnn_compat.h"

int main(int argc, char **argv) {
    char msg[512];
    if (argc == 3 && strcmp(argv[1], "payload") == 0) {
        unsigned char bytes[64];
        size_t n = 0;
        for (const char *p = argv[2]; p[0] && p[1] && n < sizeof bytes; p += 2) {
            char pair[3] = {p[0], p[1], 0};
            bytes[n++] = static_cast<unsigned char>(strtoul(pair, nullptr, 16));
        }
        const auto r = espnn_et::check_payload_header(bytes, n, msg, sizeof msg);
        printf("%d %s\n", static_cast<int>(r), msg);
        return 0;
    }
    if (argc == 6 && strcmp(argv[1], "desc") == 0) {
        espnn_pte_desc_t desc{};
        desc.executorch_version = argv[2];
        desc.package_version = argv[3];
        desc.payload_format_major = static_cast<uint16_t>(atoi(argv[4]));
        desc.payload_format_minor = static_cast<uint16_t>(atoi(argv[5]));
        const bool ok = espnn_et::check_desc_versions(desc, msg, sizeof msg);
        printf("%d %s\n", ok ? 1 : 0, msg);
        return 0;
    }
    return 2;
}
