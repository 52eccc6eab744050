"""The delegate payload format, version 2.4: every constant, record layout and bound.

This module is the single source of the format that ``docs/payload-format.md`` describes in
prose; the C engine's ``engine/include/espnn_format.h`` (constants, opcodes, parameter
counts, the decoded state's record and per-op sizes) and ``engine/src/registry.c`` (each opcode's input and parameter layout and names,
dtype sizes) are generated from it by ``python -m executorch_espnn.payload.ctables``.  The writer enforces every bound listed here, so
it never emits a payload the device would reject; the reader checks them again.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass, field

MAGIC = b"ESNN"
FORMAT_MAJOR = 2
FORMAT_MINOR = 4  # 2.1: PRELU, UPSAMPLE_BILINEAR, TRANSPOSE_CONV2D, LAYER_NORM, BATCH_MATMUL, AVG_POOL2D_FLOAT; ADD's input multipliers may be negative; 2.2: io tensors may move unit dims (read/written in place); 2.3: DIV; 2.4: io homes in the arena (HEADER_FLAG_IO_HOMES)

HEADER_SIZE = 64
TENSOR_RECORD_SIZE = 24
OP_HEADER_SIZE = 16
CONST_ALIGN = 16  # every constant tensor starts on a 16-byte boundary of the payload
ARENA_ALIGN = 16  # arena tensors and scratch start on 16-byte boundaries
NO_TENSOR = 0xFFFF  # an absent optional op input

# Engine limits.  The writer refuses to exceed them; the partitioner splits before it must.
MAX_TENSORS = 4096
MAX_OPS = 4096
MAX_IO = 32  # per direction
MAX_OP_INPUTS = 16
MAX_RANK = 4
MAX_DIM = 65535  # ESP-NN takes widths, heights, channels and FC sizes as uint16
MAX_PAYLOAD_BYTES = 0x7FFF_FFFF
MAX_ARENA_BYTES = 0x7FFF_FFFF
MAX_TENSOR_BYTES = 0xFFFF_FFFF  # product(dims) x element size must fit a u32

# magic, format major/minor, producer major/minor/patch, target, total_size, flags,
# n_tensors, n_ops, n_inputs, n_outputs, tensors/io/ops offsets, ops_size, const offset/size,
# arena_size, two reserved words (zero)
# header flags (2.4).  IO_HOMES: an io-homes table of n_inputs + n_outputs u32 follows the io
# table: each delegate input/output's byte offset in the arena (NO_HOME: none), where the
# runtime places the tensor when the caller binds no buffer of its own, so the program's
# inputs and outputs live in the arena, planned like activations (docs/payload-format.md).
HEADER_FLAG_IO_HOMES = 0x01
HEADER_FLAGS_KNOWN = HEADER_FLAG_IO_HOMES
NO_HOME = 0xFFFF_FFFF
HEADER_STRUCT = struct.Struct("<4sHHBBBBIIHHHHIIIIIIIII")
assert HEADER_STRUCT.size == HEADER_SIZE, HEADER_STRUCT.size
# dtype, rank, storage, flags, dims[4] (u16), offset, scale, zero_point.  No byte size: every
# reader computes it from dims and dtype (``TensorRec.nbytes``), so it cannot disagree.
TENSOR_STRUCT = struct.Struct("<BBBB4HIfi")
assert TENSOR_STRUCT.size == TENSOR_RECORD_SIZE, TENSOR_STRUCT.size
OP_HEADER_STRUCT = struct.Struct("<HBBHHII")
assert OP_HEADER_STRUCT.size == OP_HEADER_SIZE, OP_HEADER_STRUCT.size


class Target(enum.IntEnum):
    """What the payload's scratch sizes were computed for."""

    GENERIC = 0  # ANSI kernels: runs anywhere, including the host simulator
    ESP32 = 1
    ESP32S2 = 2
    ESP32S3 = 3
    ESP32C3 = 4
    ESP32C6 = 5
    ESP32P4 = 6

    @classmethod
    def parse(cls, name: str) -> Target:
        key = name.strip().lower().replace("-", "")
        for t in cls:
            if t.name.lower() == key:
                return t
        raise ValueError(name)


class DType(enum.IntEnum):
    INT8 = 1
    UINT8 = 2
    INT16 = 3
    INT32 = 4
    FLOAT32 = 5

    @property
    def size(self) -> int:
        return {1: 1, 2: 1, 3: 2, 4: 4, 5: 4}[int(self)]

    @property
    def numpy_name(self) -> str:
        return {1: "int8", 2: "uint8", 3: "int16", 4: "int32", 5: "float32"}[int(self)]

    @classmethod
    def from_numpy_name(cls, name: str) -> DType:
        """The dtype whose ``numpy_name`` is ``name`` (KeyError for none)."""
        return {d.numpy_name: d for d in cls}[name]


class Storage(enum.IntEnum):
    ARENA = 0  # offset = byte offset in the activation arena
    CONST = 1  # offset = byte offset from the start of the constants section
    INPUT = 2  # offset = index of the delegate input
    OUTPUT = 3  # offset = index of the delegate output


TENSOR_FLAG_NHWC = 0x01  # dims are the physical N,H,W,C order of a logically NCHW tensor
TENSOR_FLAGS_KNOWN = TENSOR_FLAG_NHWC


class Opcode(enum.IntEnum):
    QUANTIZE = 1
    DEQUANTIZE = 2
    CONV2D = 3
    DEPTHWISE_CONV2D = 4
    FULLY_CONNECTED = 5
    ADD = 6
    MUL = 7
    MAX_POOL2D = 8
    AVG_POOL2D = 9
    MEAN_HW = 10
    SOFTMAX = 11
    LUT = 12
    RESHAPE = 13
    TRANSPOSE = 14
    SLICE = 15
    CONCAT = 16
    PAD = 17
    UPSAMPLE_NEAREST = 18
    # format 2.1
    PRELU = 19
    UPSAMPLE_BILINEAR = 20
    TRANSPOSE_CONV2D = 21
    # 22 stays free: sub is an ADD with a negated input multiplier (``ops/elementwise.py``)
    LAYER_NORM = 23
    BATCH_MATMUL = 24
    # format 2.3: division by a tensor (division by a number is a LUT)
    DIV = 25
    # 26..27 stay free (expand is CONCAT copies)
    AVG_POOL2D_FLOAT = 28


@dataclass(frozen=True)
class OpSpec:
    """Static description of one opcode: its input slots and its int32 parameter words."""

    opcode: Opcode
    inputs: tuple[str, ...]  # slot names; a trailing '?' marks an optional slot
    params: tuple[str, ...]  # each one little-endian int32 word, in this order
    since_minor: int = 0
    variadic_inputs: bool = False  # CONCAT: 1..MAX_OP_INPUTS inputs, all slot 'inputs'
    # input slots whose arena bytes the output may take exactly (same offset, size and dims)
    in_place_slots: tuple[int, ...] = ()
    in_place_any_dims: bool = False  # RESHAPE: ... with other dims of the same byte size
    # bytes of precomputed parameters the engine keeps per op of this opcode: the size of its
    # family's state struct in engine/ops/, which asserts it against ESPNN_STATE_BYTES_<OP>
    # (generated from this field), so the state_bytes formula (state.py) cannot drift from C
    state_bytes: int = field(kw_only=True)

    @property
    def params_size(self) -> int:
        return 4 * len(self.params)


_CONV_PARAMS = (
    "stride_h", "stride_w", "pad_top", "pad_left", "pad_bottom", "pad_right",
    "dilation_h", "dilation_w",
)
_POOL_PARAMS = (
    "kernel_h", "kernel_w", "stride_h", "stride_w",
    "pad_top", "pad_left", "pad_bottom", "pad_right", "act_min", "act_max",
)

OP_SPECS: dict[Opcode, OpSpec] = {
    s.opcode: s
    for s in (
        OpSpec(
            Opcode.QUANTIZE, ("input",), ("perm0", "perm1", "perm2", "perm3"), state_bytes=44
        ),
        OpSpec(
            Opcode.DEQUANTIZE, ("input",), ("perm0", "perm1", "perm2", "perm3"), state_bytes=44
        ),
        OpSpec(
            Opcode.CONV2D,
            ("input", "filter", "bias?", "mult", "shift"),
            (*_CONV_PARAMS, "groups", "in_offset", "out_offset", "act_min", "act_max"),
            state_bytes=52,
        ),
        OpSpec(
            Opcode.DEPTHWISE_CONV2D,
            ("input", "filter", "bias?", "mult", "shift"),
            (*_CONV_PARAMS, "ch_mult", "in_offset", "out_offset", "act_min", "act_max"),
            state_bytes=56,
        ),
        OpSpec(
            Opcode.FULLY_CONNECTED,
            ("input", "filter", "bias?", "mult", "shift"),
            ("in_offset", "out_offset", "act_min", "act_max"),
            state_bytes=32,
        ),
        OpSpec(
            Opcode.ADD,
            ("a", "b"),
            (
                "a_offset", "b_offset", "a_mult", "a_shift", "b_mult", "b_shift",
                "left_shift", "out_mult", "out_shift", "out_offset", "act_min", "act_max",
            ),
            in_place_slots=(0, 1),
            state_bytes=104,
        ),
        OpSpec(
            Opcode.MUL,
            ("a", "b"),
            ("a_offset", "b_offset", "out_mult", "out_shift", "out_offset", "act_min", "act_max"),
            in_place_slots=(0, 1),
            state_bytes=88,
        ),
        OpSpec(Opcode.MAX_POOL2D, ("input",), _POOL_PARAMS, state_bytes=40),
        OpSpec(Opcode.AVG_POOL2D, ("input",), (*_POOL_PARAMS, "divisor_mode"), state_bytes=40),
        OpSpec(
            Opcode.MEAN_HW, ("input",), ("in_offset", "out_offset", "mult", "shift"), state_bytes=24
        ),
        OpSpec(Opcode.SOFTMAX, ("input",), ("mult", "shift", "diff_min"), state_bytes=20),
        OpSpec(Opcode.LUT, ("input", "table"), (), in_place_slots=(0,), state_bytes=4),
        OpSpec(
            Opcode.RESHAPE, ("input",), (), in_place_slots=(0,), in_place_any_dims=True, state_bytes=4
        ),
        OpSpec(Opcode.TRANSPOSE, ("input",), ("perm0", "perm1", "perm2", "perm3"), state_bytes=36),
        OpSpec(
            Opcode.SLICE,
            ("input",),
            ("start0", "start1", "start2", "start3", "step0", "step1", "step2", "step3"),
            state_bytes=40,
        ),
        OpSpec(Opcode.CONCAT, ("inputs",), ("axis",), variadic_inputs=True, state_bytes=40),
        OpSpec(
            Opcode.PAD,
            ("input",),
            (
                "before0", "before1", "before2", "before3",
                "after0", "after1", "after2", "after3", "value",
            ),
            state_bytes=56,
        ),
        OpSpec(Opcode.UPSAMPLE_NEAREST, ("input", "y_map", "x_map"), (), state_bytes=24),
        OpSpec(
            Opcode.PRELU,
            ("input", "alpha", "neg_mult", "neg_shift"),
            ("in_offset", "alpha_offset", "out_offset", "pos_mult", "pos_shift"),
            since_minor=1,
            state_bytes=28,
        ),
        OpSpec(
            Opcode.UPSAMPLE_BILINEAR,
            ("input", "y_index", "y_frac", "x_index", "x_frac"),
            (),
            since_minor=1,
            state_bytes=24,
        ),
        OpSpec(
            Opcode.TRANSPOSE_CONV2D,
            ("input", "filter", "bias?", "mult", "shift"),
            (*_CONV_PARAMS, "out_pad_h", "out_pad_w", "groups", "in_offset", "out_offset", "act_min", "act_max"),
            since_minor=1,
            state_bytes=48,
        ),
        OpSpec(
            Opcode.LAYER_NORM,
            ("input", "gamma", "beta"),
            ("out_offset", "gamma_shift", "eps_hi", "eps_lo"),
            since_minor=1,
            state_bytes=24,
        ),
        OpSpec(
            Opcode.BATCH_MATMUL,
            ("a", "b"),
            ("a_offset", "b_offset", "out_mult", "out_shift", "out_offset", "act_min", "act_max"),
            since_minor=1,
            state_bytes=48,
        ),
        OpSpec(
            Opcode.DIV,
            ("a", "b", "mult", "shift"),
            ("a_offset", "b_zero_point", "out_offset", "act_min", "act_max"),
            since_minor=3,
            in_place_slots=(0, 1),
            state_bytes=76,
        ),
        OpSpec(
            Opcode.AVG_POOL2D_FLOAT,
            ("input", "dequant"),
            (*_POOL_PARAMS, "divisor_mode", "torch_op"),
            since_minor=1,
            state_bytes=52,
        ),
    )
}

# The engine's decoded state (docs/engine.md, "State layout"): a header, one record per tensor up
# to the last non-constant one, a byte offset per constant after it, a record per delegate
# input/output and per op, then per op its input ids and OpSpec.state_bytes.  Its one address
# (an io record's bound buffer) has an 8-byte slot, so these sizes are the same on 32- and 64-bit
# builds; espnn_internal.h asserts its structs against the ESPNN_STATE_*_BYTES generated from them.
STATE_HEADER_BYTES = 48
STATE_TENSOR_BYTES = 20
STATE_CONST_BYTES = 4
STATE_IO_BYTES = 24
STATE_OP_BYTES = 20

# AVG_POOL2D divisor_mode values
AVG_DIVISOR_VALID = 0  # count of input elements under the window (ESP-NN, count_include_pad=False)
AVG_DIVISOR_INCLUDE_PAD = 1  # PyTorch count_include_pad=True: window clipped to the padded input

# AVG_POOL2D_FLOAT: the int8 codes' dequantized values (float32, one per code -128..127), and
# which PyTorch CPU kernel's float32 arithmetic the op reproduces (torch_op):
DEQUANT_TABLE_SIZE = 256
AVG_TORCH_POOL = 0  # avg_pool2d: the window's taps summed row by row, / the divisor
AVG_TORCH_ADAPTIVE = 1  # adaptive_avg_pool2d: the same sum, / kernel_h, then / kernel_w
AVG_TORCH_MEAN = 2  # mean: one window over the whole input, ATen's cascade sum, / H*W

# Bounds on requantisation parameters (see docs/payload-format.md, "Arithmetic").
SHIFT_MIN = -31
SHIFT_MAX = 0
ADD_LEFT_SHIFT_MAX = 20
MULT_MAX = 0x7FFF_FFFF  # ADD's a_mult/b_mult lie in [-MULT_MAX, MULT_MAX] (negative: a - b, since 2.1)
# PRELU: a positive shift is a left shift before the multiply (TFLite's MultiplyByQuantizedMultiplier),
# for multipliers >= 1; 14 keeps |(x + in_offset) * (alpha + alpha_offset)| << 14 below 2^31
PRELU_SHIFT_MAX = 14
# UPSAMPLE_BILINEAR: per-axis weights in units of 2^-BILINEAR_FRAC_BITS, so the four products of
# an int8 value (|q| <= 128) with y and x weights sum to at most 128 * 2^22 = 2^29
BILINEAR_FRAC_BITS = 11
BILINEAR_ONE = 1 << BILINEAR_FRAC_BITS
SOFTMAX_OUT_SCALE = 1.0 / 256.0
SOFTMAX_OUT_ZERO_POINT = -128
SOFTMAX_SHIFT_MAX = 30
SOFTMAX_MAX_ROW = 4095  # keeps the int32 sum of Q12.19 exponentials from overflowing

# Guards against int32 accumulator overflow in the kernels: |x + in_offset| <= 256 and
# |w| <= 127, so a reduction of up to MAX_REDUCTION terms plus a bias of at most
# MAX_ABS_BIAS stays below 2**31; mean and average-pool sums are bounded the same way.
MAX_REDUCTION = 65535
MAX_ABS_BIAS = 1 << 24
MAX_MEAN_COUNT = 1 << 23
MAX_POOL_WINDOW = 1 << 23

# LAYER_NORM: rows of at most this many values keep every sum of its integer algorithm in
# int64 (docs/payload-format.md); gamma_shift in 0..31; eps_hi in 0..LAYER_NORM_EPS_HI_MAX
# (the fixed-point epsilon below 2^61); beta below 2^31 in Q16 output units.
LAYER_NORM_MAX_ROW = 4096
LAYER_NORM_GAMMA_SHIFT_MAX = 31
LAYER_NORM_EPS_HI_MAX = (1 << 29) - 1
LAYER_NORM_FRAC_BITS = 16  # beta and the rescaled product are Q16 output units
# DIV: one multiplier per int8 code of the divisor (indexed by code + 128), TFLite's meaning
# of a positive shift (a left shift first, as PRELU); |a + a_offset| <= 255, so 255 << 14 < 2^31.
# A code worth 0 holds (MULT_MAX, DIV_SHIFT_MAX): any non-zero numerator saturates, as x / 0 does;
# 0 / 0 (a numerator of 0 over the code b_zero_point) gives code 0, what PT2E's NaN casts to
DIV_TABLE_SIZE = 256
DIV_SHIFT_MAX = 14
# BATCH_MATMUL: |a + a_offset| and |b + b_offset| are at most 255, so a reduction of up to
# this many products stays below 2^31
MAX_MATMUL_DEPTH = 32768
