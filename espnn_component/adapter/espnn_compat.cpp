#include "espnn_compat.h"

#include <stdio.h>
#include <string.h>

#include "espnn_format.h"
#include "espnn_version.h"

#ifndef ESPNN_ET_EXECUTORCH_VERSION
#error "Define ESPNN_ET_EXECUTORCH_VERSION to the version of the ExecuTorch runtime this component is built against (e.g. -DESPNN_ET_EXECUTORCH_VERSION=\"1.5.1\"); the build files of the component do it."
#endif

namespace espnn_et {

namespace {

/* Reads one decimal number; false if there is none or it does not fit comfortably. */
bool read_number(const char **cursor, unsigned *out) {
    const char *p = *cursor;
    unsigned value = 0;
    int digits = 0;
    while (*p >= '0' && *p <= '9') {
        if (digits == 6) {
            return false;
        }
        value = value * 10u + static_cast<unsigned>(*p - '0');
        ++p;
        ++digits;
    }
    if (digits == 0) {
        return false;
    }
    *cursor = p;
    *out = value;
    return true;
}

/* Generated headers are text the user may have edited: print only safe ASCII of them. */
void printable(const char *text, char *out, size_t size) {
    size_t n = 0;
    if (text == nullptr) {
        text = "(none)";
    }
    for (; *text != '\0' && n + 1 < size; ++text) {
        const char c = *text;
        out[n++] = (c >= 0x20 && c < 0x7f) ? c : '?';
    }
    out[n] = '\0';
}

} // namespace

bool parse_version(const char *text, Version *out) {
    if (text == nullptr || out == nullptr) {
        return false;
    }
    Version v;
    const char *p = text;
    if (!read_number(&p, &v.major) || *p != '.') {
        return false;
    }
    ++p;
    if (!read_number(&p, &v.minor)) {
        return false;
    }
    if (*p == '.') {
        ++p;
        if (!read_number(&p, &v.patch)) {
            v.patch = 0;
        }
    }
    *out = v;
    return true;
}

const char *runtime_package_version() { return ESPNN_ET_PACKAGE_VERSION; }

const char *runtime_executorch_version() { return ESPNN_ET_EXECUTORCH_VERSION; }

bool producer_compatible(unsigned major, unsigned minor) {
    if (major != ESPNN_ET_PACKAGE_VERSION_MAJOR) {
        return false;
    }
    return ESPNN_ET_PACKAGE_VERSION_MAJOR != 0 || minor == ESPNN_ET_PACKAGE_VERSION_MINOR;
}

PayloadCheck check_payload_header(const void *data, size_t len, char *msg, size_t msg_size) {
    /* magic (4), format major/minor (2 x u16), producer major/minor/patch (3 x u8) */
    const size_t fixed = 11;
    const uint8_t *p = static_cast<const uint8_t *>(data);
    if (p == nullptr || len < fixed) {
        snprintf(msg, msg_size, "delegate payload of %lu bytes is shorter than its %lu-byte version header",
                 static_cast<unsigned long>(p == nullptr ? 0 : len), static_cast<unsigned long>(fixed));
        return PayloadCheck::kTruncated;
    }
    if (p[0] != ESPNN_MAGIC_0 || p[1] != ESPNN_MAGIC_1 || p[2] != ESPNN_MAGIC_2 || p[3] != ESPNN_MAGIC_3) {
        snprintf(msg, msg_size,
                 "delegate payload starts with 0x%02x%02x%02x%02x, not the ESP-NN magic 'ESNN' "
                 "(0x45534e4e): the program was not lowered by executorch-espnn",
                 p[0], p[1], p[2], p[3]);
        return PayloadCheck::kMagic;
    }
    const unsigned fmt_major = static_cast<unsigned>(p[4] | (p[5] << 8));
    const unsigned fmt_minor = static_cast<unsigned>(p[6] | (p[7] << 8));
    const unsigned prod_major = p[8];
    const unsigned prod_minor = p[9];
    const unsigned prod_patch = p[10];
    const bool format_ok = fmt_major == ESPNN_FORMAT_MAJOR && fmt_minor <= ESPNN_FORMAT_MINOR;
    if (format_ok && producer_compatible(prod_major, prod_minor)) {
        if (msg_size > 0) {
            msg[0] = '\0';
        }
        return PayloadCheck::kOk;
    }
    char producer_rule[24];
    if (ESPNN_ET_PACKAGE_VERSION_MAJOR == 0) {
        snprintf(producer_rule, sizeof producer_rule, "%d.%d.x", ESPNN_ET_PACKAGE_VERSION_MAJOR,
                 ESPNN_ET_PACKAGE_VERSION_MINOR);
    } else {
        snprintf(producer_rule, sizeof producer_rule, "%d.x", ESPNN_ET_PACKAGE_VERSION_MAJOR);
    }
    snprintf(msg, msg_size,
             "payload format %u.%u / producer %u.%u.%u, runtime reads format %d.%d from producer %s: "
             "lower the model again with executorch-espnn %s, or build the firmware with the "
             "component version that produced it",
             fmt_major, fmt_minor, prod_major, prod_minor, prod_patch, ESPNN_FORMAT_MAJOR,
             ESPNN_FORMAT_MINOR, producer_rule, ESPNN_ET_PACKAGE_VERSION);
    return PayloadCheck::kIncompatible;
}

bool check_desc_versions(const espnn_pte_desc_t &desc, char *msg, size_t msg_size) {
    char et_text[24];
    char pkg_text[24];
    printable(desc.executorch_version, et_text, sizeof et_text);
    printable(desc.package_version, pkg_text, sizeof pkg_text);
    Version et{};
    Version pkg{};
    Version rt_et{};
    const bool et_parsed = parse_version(desc.executorch_version, &et);
    const bool pkg_parsed = parse_version(desc.package_version, &pkg);
    parse_version(ESPNN_ET_EXECUTORCH_VERSION, &rt_et);
    const bool et_ok = et_parsed && et.major == rt_et.major && et.minor == rt_et.minor;
    const bool pkg_ok = pkg_parsed && producer_compatible(pkg.major, pkg.minor);
    const bool fmt_ok = desc.payload_format_major == ESPNN_FORMAT_MAJOR &&
                        desc.payload_format_minor <= ESPNN_FORMAT_MINOR;
    if (et_ok && pkg_ok && fmt_ok) {
        if (msg_size > 0) {
            msg[0] = '\0';
        }
        return true;
    }
    snprintf(msg, msg_size,
             "model header built by executorch-espnn %s for ExecuTorch %s (payload format %u.%u); "
             "this runtime is executorch-espnn %s with ExecuTorch %s (payload format %d.%d): "
             "rebuild so that the model step and the component come from the same installation",
             pkg_text, et_text, static_cast<unsigned>(desc.payload_format_major),
             static_cast<unsigned>(desc.payload_format_minor), ESPNN_ET_PACKAGE_VERSION,
             ESPNN_ET_EXECUTORCH_VERSION, ESPNN_FORMAT_MAJOR, ESPNN_FORMAT_MINOR);
    return false;
}

} // namespace espnn_et
