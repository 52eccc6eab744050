/*
 * Version compatibility between what produced a model and the runtime that loads it.
 *
 * Two places ask: the backend's init() (the payload header's format and producer version)
 * and EspnnModel::begin() (the generated header's version stamps).  Both answer with one
 * ASCII line naming both sides, so the user sees which versions met.  No ExecuTorch here.
 */
#ifndef ESPNN_COMPAT_H
#define ESPNN_COMPAT_H

#include <stddef.h>
#include <stdint.h>

#include "espnn_pte.h"

namespace espnn_et {

struct Version {
    unsigned major = 0;
    unsigned minor = 0;
    unsigned patch = 0;
};

/* Parses the leading "X.Y[.Z]" of a version string ("1.5.1+cpu" -> 1.5.1).  False when the
 * string does not start with two dot-separated numbers. */
bool parse_version(const char *text, Version *out);

/* The versions this runtime was built with. */
const char *runtime_package_version();    /* executorch-espnn, from espnn_version.h */
const char *runtime_executorch_version(); /* the ExecuTorch runtime (a compile definition) */

/* The package rule: while major is 0, the same major.minor; from 1 on, the same major. */
bool producer_compatible(unsigned major, unsigned minor);

enum class PayloadCheck {
    kOk,
    kTruncated,   /* shorter than the fixed header fields */
    kMagic,       /* not an ESP-NN delegate payload */
    kIncompatible /* format or producer version this runtime does not read */
};

/* Checks magic, format version and producer version of a delegate payload before anything
 * else is read.  On failure writes one ASCII line to msg, e.g. "payload format 2.0 /
 * producer 0.3.1, runtime reads format 1.0 from producer 0.1.x". */
PayloadCheck check_payload_header(const void *data, size_t len, char *msg, size_t msg_size);

/* Compares the stamps of a generated model header with this runtime (ExecuTorch major.minor,
 * package rule above, payload format).  False with a message naming both sides. */
bool check_desc_versions(const espnn_pte_desc_t &desc, char *msg, size_t msg_size);

} // namespace espnn_et

#endif /* ESPNN_COMPAT_H */
