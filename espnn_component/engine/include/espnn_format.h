/*
 * Delegate payload format 2.0: constants shared by the parser and the ops.
 * Mirrors executorch_espnn/payload/format.py (tests/test_payload_format.py checks that
 * every value here equals the Python one); docs/payload-format.md is the prose spec.
 */
#ifndef ESPNN_FORMAT_H
#define ESPNN_FORMAT_H

#define ESPNN_MAGIC_0 0x45 /* 'E' */
#define ESPNN_MAGIC_1 0x53 /* 'S' */
#define ESPNN_MAGIC_2 0x4E /* 'N' */
#define ESPNN_MAGIC_3 0x4E /* 'N' */
#define ESPNN_FORMAT_MAJOR 2
#define ESPNN_FORMAT_MINOR 0

#define ESPNN_HEADER_SIZE 64
#define ESPNN_TENSOR_RECORD_SIZE 24
#define ESPNN_OP_HEADER_SIZE 16
#define ESPNN_CONST_ALIGN 16
#define ESPNN_ARENA_ALIGN 16
#define ESPNN_NO_TENSOR 0xFFFF

#define ESPNN_MAX_TENSORS 4096
#define ESPNN_MAX_OPS 4096
#define ESPNN_MAX_IO 32
#define ESPNN_MAX_OP_INPUTS 16
#define ESPNN_MAX_RANK 4
#define ESPNN_MAX_DIM 65535
#define ESPNN_MAX_PAYLOAD_BYTES 0x7FFFFFFFu
#define ESPNN_MAX_ARENA_BYTES 0x7FFFFFFFu
#define ESPNN_MAX_TENSOR_BYTES 0xFFFFFFFFu /* product(dims) x element size, computed */

/* targets */
#define ESPNN_TARGET_GENERIC 0
#define ESPNN_TARGET_ESP32 1
#define ESPNN_TARGET_ESP32S2 2
#define ESPNN_TARGET_ESP32S3 3
#define ESPNN_TARGET_ESP32C3 4
#define ESPNN_TARGET_ESP32C6 5
#define ESPNN_TARGET_ESP32P4 6
#define ESPNN_TARGET_COUNT 7

/* dtypes */
#define ESPNN_DTYPE_INT8 1
#define ESPNN_DTYPE_UINT8 2
#define ESPNN_DTYPE_INT16 3
#define ESPNN_DTYPE_INT32 4
#define ESPNN_DTYPE_FLOAT32 5

/* storage */
#define ESPNN_STORAGE_ARENA 0
#define ESPNN_STORAGE_CONST 1
#define ESPNN_STORAGE_INPUT 2
#define ESPNN_STORAGE_OUTPUT 3

#define ESPNN_TENSOR_FLAG_NHWC 0x01
#define ESPNN_TENSOR_FLAGS_KNOWN 0x01

/* opcodes */
#define ESPNN_OP_QUANTIZE 1
#define ESPNN_OP_DEQUANTIZE 2
#define ESPNN_OP_CONV2D 3
#define ESPNN_OP_DEPTHWISE_CONV2D 4
#define ESPNN_OP_FULLY_CONNECTED 5
#define ESPNN_OP_ADD 6
#define ESPNN_OP_MUL 7
#define ESPNN_OP_MAX_POOL2D 8
#define ESPNN_OP_AVG_POOL2D 9
#define ESPNN_OP_MEAN_HW 10
#define ESPNN_OP_SOFTMAX 11
#define ESPNN_OP_LUT 12
#define ESPNN_OP_RESHAPE 13
#define ESPNN_OP_TRANSPOSE 14
#define ESPNN_OP_SLICE 15
#define ESPNN_OP_CONCAT 16
#define ESPNN_OP_PAD 17
#define ESPNN_OP_UPSAMPLE_NEAREST 18
#define ESPNN_OP_COUNT 19 /* one past the last opcode */

/* number of int32 parameter words per opcode (format 2.0) */
#define ESPNN_PARAMS_QUANTIZE 4
#define ESPNN_PARAMS_DEQUANTIZE 4
#define ESPNN_PARAMS_CONV2D 13
#define ESPNN_PARAMS_DEPTHWISE_CONV2D 13
#define ESPNN_PARAMS_FULLY_CONNECTED 4
#define ESPNN_PARAMS_ADD 12
#define ESPNN_PARAMS_MUL 7
#define ESPNN_PARAMS_MAX_POOL2D 10
#define ESPNN_PARAMS_AVG_POOL2D 11
#define ESPNN_PARAMS_MEAN_HW 4
#define ESPNN_PARAMS_SOFTMAX 3
#define ESPNN_PARAMS_LUT 0
#define ESPNN_PARAMS_RESHAPE 0
#define ESPNN_PARAMS_TRANSPOSE 4
#define ESPNN_PARAMS_SLICE 8
#define ESPNN_PARAMS_CONCAT 1
#define ESPNN_PARAMS_PAD 9
#define ESPNN_PARAMS_UPSAMPLE_NEAREST 0

#define ESPNN_AVG_DIVISOR_VALID 0
#define ESPNN_AVG_DIVISOR_INCLUDE_PAD 1

#define ESPNN_SHIFT_MIN (-31)
#define ESPNN_SHIFT_MAX 0
#define ESPNN_ADD_LEFT_SHIFT_MAX 20
#define ESPNN_SOFTMAX_SHIFT_MAX 30
#define ESPNN_SOFTMAX_MAX_ROW 4095
#define ESPNN_SOFTMAX_OUT_ZERO_POINT (-128)

/* accumulator-overflow guards (see the format doc, "Bounds that keep int32 exact") */
#define ESPNN_MAX_REDUCTION 65535
#define ESPNN_MAX_ABS_BIAS (1L << 24)
#define ESPNN_MAX_MEAN_COUNT (1L << 23)
#define ESPNN_MAX_POOL_WINDOW (1L << 23)

#endif /* ESPNN_FORMAT_H */
