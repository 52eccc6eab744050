/*
 * The opcode tables: each opcode's input/parameter layout (mirror of OP_SPECS in
 * executorch_espnn/payload/format.py; the names are the field names errors report) and the
 * op family that prepares and runs it.
 */
#include "espnn_internal.h"

static const char *const p_perm[] = {"perm0", "perm1", "perm2", "perm3"};
static const char *const p_conv[] = {
    "stride_h", "stride_w", "pad_top", "pad_left", "pad_bottom", "pad_right", "dilation_h",
    "dilation_w", "groups", "in_offset", "out_offset", "act_min", "act_max",
};
static const char *const p_dwconv[] = {
    "stride_h", "stride_w", "pad_top", "pad_left", "pad_bottom", "pad_right", "dilation_h",
    "dilation_w", "ch_mult", "in_offset", "out_offset", "act_min", "act_max",
};
static const char *const p_fc[] = {"in_offset", "out_offset", "act_min", "act_max"};
static const char *const p_add[] = {
    "a_offset", "b_offset", "a_mult", "a_shift", "b_mult", "b_shift",
    "left_shift", "out_mult", "out_shift", "out_offset", "act_min", "act_max",
};
static const char *const p_mul[] = {
    "a_offset", "b_offset", "out_mult", "out_shift", "out_offset", "act_min", "act_max",
};
static const char *const p_pool[] = {
    "kernel_h", "kernel_w", "stride_h", "stride_w", "pad_top", "pad_left",
    "pad_bottom", "pad_right", "act_min", "act_max", "divisor_mode",
};
static const char *const p_mean[] = {"in_offset", "out_offset", "mult", "shift"};
static const char *const p_softmax[] = {"mult", "shift", "diff_min"};
static const char *const p_slice[] = {
    "start0", "start1", "start2", "start3", "step0", "step1", "step2", "step3",
};
static const char *const p_concat[] = {"axis"};
static const char *const p_pad[] = {
    "before0", "before1", "before2", "before3", "after0", "after1", "after2", "after3", "value",
};

#define SPEC(name, n_in, n_par, opt, inplace, params) \
    { name, n_in, n_par, opt, inplace, params }

static const espnn_op_spec_t specs[ESPNN_OP_COUNT] = {
    [ESPNN_OP_QUANTIZE] = SPEC("QUANTIZE", 1, ESPNN_PARAMS_QUANTIZE, 0, 0, p_perm),
    [ESPNN_OP_DEQUANTIZE] = SPEC("DEQUANTIZE", 1, ESPNN_PARAMS_DEQUANTIZE, 0, 0, p_perm),
    [ESPNN_OP_CONV2D] = SPEC("CONV2D", 5, ESPNN_PARAMS_CONV2D, 1u << 2, 0, p_conv),
    [ESPNN_OP_DEPTHWISE_CONV2D] =
        SPEC("DEPTHWISE_CONV2D", 5, ESPNN_PARAMS_DEPTHWISE_CONV2D, 1u << 2, 0, p_dwconv),
    [ESPNN_OP_FULLY_CONNECTED] =
        SPEC("FULLY_CONNECTED", 5, ESPNN_PARAMS_FULLY_CONNECTED, 1u << 2, 0, p_fc),
    [ESPNN_OP_ADD] = SPEC("ADD", 2, ESPNN_PARAMS_ADD, 0, 1, p_add),
    [ESPNN_OP_MUL] = SPEC("MUL", 2, ESPNN_PARAMS_MUL, 0, 1, p_mul),
    [ESPNN_OP_MAX_POOL2D] = SPEC("MAX_POOL2D", 1, ESPNN_PARAMS_MAX_POOL2D, 0, 0, p_pool),
    [ESPNN_OP_AVG_POOL2D] = SPEC("AVG_POOL2D", 1, ESPNN_PARAMS_AVG_POOL2D, 0, 0, p_pool),
    [ESPNN_OP_MEAN_HW] = SPEC("MEAN_HW", 1, ESPNN_PARAMS_MEAN_HW, 0, 0, p_mean),
    [ESPNN_OP_SOFTMAX] = SPEC("SOFTMAX", 1, ESPNN_PARAMS_SOFTMAX, 0, 0, p_softmax),
    [ESPNN_OP_LUT] = SPEC("LUT", 2, ESPNN_PARAMS_LUT, 0, 1, NULL),
    [ESPNN_OP_RESHAPE] = SPEC("RESHAPE", 1, ESPNN_PARAMS_RESHAPE, 0, 1, NULL),
    [ESPNN_OP_TRANSPOSE] = SPEC("TRANSPOSE", 1, ESPNN_PARAMS_TRANSPOSE, 0, 0, p_perm),
    [ESPNN_OP_SLICE] = SPEC("SLICE", 1, ESPNN_PARAMS_SLICE, 0, 0, p_slice),
    [ESPNN_OP_CONCAT] = SPEC("CONCAT", 0, ESPNN_PARAMS_CONCAT, 0, 0, p_concat),
    [ESPNN_OP_PAD] = SPEC("PAD", 1, ESPNN_PARAMS_PAD, 0, 0, p_pad),
    [ESPNN_OP_UPSAMPLE_NEAREST] =
        SPEC("UPSAMPLE_NEAREST", 3, ESPNN_PARAMS_UPSAMPLE_NEAREST, 0, 0, NULL),
};

static const espnn_op_family_t *const families[ESPNN_OP_COUNT] = {
    [ESPNN_OP_QUANTIZE] = &espnn_family_quantize,
    [ESPNN_OP_DEQUANTIZE] = &espnn_family_dequantize,
    [ESPNN_OP_CONV2D] = &espnn_family_conv2d,
    [ESPNN_OP_DEPTHWISE_CONV2D] = &espnn_family_depthwise_conv2d,
    [ESPNN_OP_FULLY_CONNECTED] = &espnn_family_fully_connected,
    [ESPNN_OP_ADD] = &espnn_family_add,
    [ESPNN_OP_MUL] = &espnn_family_mul,
    [ESPNN_OP_MAX_POOL2D] = &espnn_family_max_pool2d,
    [ESPNN_OP_AVG_POOL2D] = &espnn_family_avg_pool2d,
    [ESPNN_OP_MEAN_HW] = &espnn_family_mean_hw,
    [ESPNN_OP_SOFTMAX] = &espnn_family_softmax,
    [ESPNN_OP_LUT] = &espnn_family_lut,
    [ESPNN_OP_RESHAPE] = &espnn_family_reshape,
    [ESPNN_OP_TRANSPOSE] = &espnn_family_transpose,
    [ESPNN_OP_SLICE] = &espnn_family_slice,
    [ESPNN_OP_CONCAT] = &espnn_family_concat,
    [ESPNN_OP_PAD] = &espnn_family_pad,
    [ESPNN_OP_UPSAMPLE_NEAREST] = &espnn_family_upsample_nearest,
};

const espnn_op_spec_t *espnn_op_spec(uint32_t opcode)
{
    if (opcode == 0 || opcode >= ESPNN_OP_COUNT) {
        return NULL;
    }
    return &specs[opcode];
}

const espnn_op_family_t *espnn_op_family(uint32_t opcode)
{
    if (opcode == 0 || opcode >= ESPNN_OP_COUNT) {
        return NULL;
    }
    return families[opcode];
}

const char *espnn_opcode_name(uint32_t opcode)
{
    const espnn_op_spec_t *s = espnn_op_spec(opcode);
    return s ? s->name : "?";
}

uint32_t espnn_dtype_size(uint32_t dtype)
{
    switch (dtype) {
    case ESPNN_DTYPE_INT8:
    case ESPNN_DTYPE_UINT8:
        return 1;
    case ESPNN_DTYPE_INT16:
        return 2;
    case ESPNN_DTYPE_INT32:
    case ESPNN_DTYPE_FLOAT32:
        return 4;
    default:
        return 0;
    }
}
