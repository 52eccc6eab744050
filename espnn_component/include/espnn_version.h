/*
 * Version of executorch-espnn that this component source belongs to.  It must equal
 * executorch_espnn/version.py (tests/test_host_runtime.py checks it): payloads and generated
 * headers carry the producer's version, and the runtime compares them with this one.
 */
#ifndef ESPNN_VERSION_H
#define ESPNN_VERSION_H

#define ESPNN_ET_PACKAGE_VERSION "0.1.0"
#define ESPNN_ET_PACKAGE_VERSION_MAJOR 0
#define ESPNN_ET_PACKAGE_VERSION_MINOR 1
#define ESPNN_ET_PACKAGE_VERSION_PATCH 0

#endif /* ESPNN_VERSION_H */
