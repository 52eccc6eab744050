// ${generated_comment} through executorch_espnn.selective; do not edit.
#pragma once

#ifdef __cplusplus
extern "C" {
#endif

/* Registers the model's selected CPU kernels with the ExecuTorch runtime, once; returns 0 or
 * the ExecuTorch error code. */
int executorch_espnn_register_kernels(void);

#ifdef __cplusplus
}
#endif
