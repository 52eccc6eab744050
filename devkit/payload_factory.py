"""Builders of valid delegate payloads with realistic quantization, and the PyTorch result
each one should produce.

Shared test infrastructure: the reference tests compare ``run_delegate`` with
``Case.expected_torch``; the engine tests compare the C engine with ``run_delegate`` byte
for byte on the same cases.  Quantization parameters are derived from float tensors the way
the lowering derives them (per-tensor affine int8 activations from the observed range,
symmetric per-channel int8 weights in [-127, 127], int32 bias ``round(b / (s_in * s_w))``,
TFLite multipliers from ``quant_math``).

``expected_torch`` is computed independently of the reference: dequantize the inputs, run
the float32 PyTorch op in NCHW, quantize with round-half-to-even, convert to the payload's
NHWC layout.  ``tolerance_lsb`` says how close the reference must be (1 for arithmetic,
0 for data movement, LUT and quantize/dequantize); ``output_lsb`` gives one LSB of each
output in its own unit (1 for int8, the scale for float outputs).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import torch
import torch.nn.functional as F

from executorch_espnn.payload import (
    ConstantPool,
    DType,
    Opcode,
    OpRec,
    Payload,
    Storage,
    Target,
    TensorRec,
    decode,
    encode,
)
from executorch_espnn.payload.format import (
    AVG_DIVISOR_INCLUDE_PAD,
    AVG_DIVISOR_VALID,
    AVG_TORCH_ADAPTIVE,
    AVG_TORCH_MEAN,
    AVG_TORCH_POOL,
    BILINEAR_ONE,
)
from executorch_espnn.planner import PlanBuffer, plan_arena
from executorch_espnn.quant_math import (
    add_params,
    div_multipliers,
    quantize_multiplier,
    softmax_params,
)

Array = npt.NDArray[np.generic]
NCHW_TO_NHWC = (0, 2, 3, 1)
NHWC_TO_NCHW = (0, 3, 1, 2)
_NP_DTYPES = {np.dtype(np.int8): DType.INT8, np.dtype(np.uint8): DType.UINT8,
              np.dtype(np.int16): DType.INT16, np.dtype(np.int32): DType.INT32,
              np.dtype(np.float32): DType.FLOAT32}


@dataclass
class Case:
    name: str
    payload: bytes
    inputs: list[Array]
    expected_torch: list[Array] | None
    tolerance_lsb: int = 1  # 0: must be exactly equal
    output_lsb: list[float] = field(default_factory=list)  # one LSB per output, in its unit


# --------------------------------------------------------------------------- quantization


@dataclass(frozen=True)
class QParams:
    scale: float  # a float32 value: what the payload stores
    zero_point: int

    @staticmethod
    def from_range(lo: float, hi: float) -> QParams:
        """Asymmetric int8 covering [lo, hi] and 0, as a min/max observer gives."""
        lo, hi = min(float(lo), 0.0), max(float(hi), 0.0)
        if hi - lo < 1e-6:
            hi = lo + 1e-6
        scale = float(np.float32((hi - lo) / 255.0))
        zp = int(np.clip(round(-128 - lo / scale), -128, 127))
        return QParams(scale, zp)

    @staticmethod
    def of(x: torch.Tensor | Array) -> QParams:
        t = torch.as_tensor(x)
        return QParams.from_range(float(t.min()), float(t.max()))


def quantize_t(x: torch.Tensor, q: QParams, lo: int = -128, hi: int = 127) -> torch.Tensor:
    """Round half to even, add the zero point, clamp: int8 tensor."""
    y = torch.round(x.to(torch.float32) / q.scale) + q.zero_point
    return torch.clamp(y, lo, hi).to(torch.int8)


def dequantize_t(x: torch.Tensor | Array, q: QParams) -> torch.Tensor:
    return (torch.as_tensor(np.asarray(x)).to(torch.float32) - q.zero_point) * q.scale


def quantize_weights(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Symmetric per-output-channel (dim 0) int8 in [-127, 127]: (int8 weights, scales)."""
    amax = w.abs().reshape(w.shape[0], -1).amax(dim=1).clamp(min=1e-8)
    s = (amax / 127.0).to(torch.float32)
    shape = (-1,) + (1,) * (w.dim() - 1)
    wq = torch.clamp(torch.round(w / s.reshape(shape)), -127, 127).to(torch.int8)
    return wq, s


def act_range(q: QParams, act: str | None) -> tuple[int, int]:
    """Output clamp for a fused activation: none, relu or relu6."""
    if act is None:
        return -128, 127
    lo = int(np.clip(q.zero_point, -128, 127))
    hi = 127 if act == "relu" else int(np.clip(q.zero_point + round(6.0 / q.scale), -128, 127))
    return lo, hi


def _apply_act(y: torch.Tensor, act: str | None) -> torch.Tensor:
    if act == "relu":
        return F.relu(y)
    if act == "relu6":
        return torch.clamp(y, 0.0, 6.0)
    return y


def nhwc(t: torch.Tensor) -> Array:
    return t.permute(*NCHW_TO_NHWC).contiguous().numpy()


def nchw(a: Array) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(a)).permute(*NHWC_TO_NCHW)


def _requant_consts(real: Sequence[float]) -> tuple[Array, Array]:
    pairs = [quantize_multiplier(float(r)) for r in real]
    return (np.array([m for m, _ in pairs], dtype=np.int32),
            np.array([s for _, s in pairs], dtype=np.int32))


# --------------------------------------------------------------------------- payload builder


class PayloadBuilder:
    """Assembles a payload: tensors, constants, ops; the arena is a bump allocator unless an
    explicit offset is given (in-place ops, deliberate aliasing)."""

    def __init__(self, target: Target = Target.GENERIC) -> None:
        self.tensors: list[TensorRec] = []
        self.ops: list[OpRec] = []
        self.inputs: list[int] = []
        self.outputs: list[int] = []
        self.pool = ConstantPool()
        self.arena_top = 0
        self.target = target
        self._planned: dict[int, int | None] = {}  # tensor id -> in-place source (or None)

    def _add(self, t: TensorRec) -> int:
        self.tensors.append(t)
        return len(self.tensors) - 1

    def input(self, dtype: DType, dims: Sequence[int], q: QParams | None = None) -> int:
        q = q or QParams(0.0, 0)
        tid = self._add(TensorRec(dtype, tuple(dims), Storage.INPUT, len(self.inputs), q.scale, q.zero_point))
        self.inputs.append(tid)
        return tid

    def output(self, dtype: DType, dims: Sequence[int], q: QParams | None = None) -> int:
        q = q or QParams(0.0, 0)
        tid = self._add(TensorRec(dtype, tuple(dims), Storage.OUTPUT, len(self.outputs), q.scale, q.zero_point))
        self.outputs.append(tid)
        return tid

    def arena(self, dtype: DType, dims: Sequence[int], q: QParams | None = None,
              offset: int | None = None) -> int:
        q = q or QParams(0.0, 0)
        t = TensorRec(dtype, tuple(dims), Storage.ARENA, 0, q.scale, q.zero_point)
        if offset is None:
            offset = self.arena_top
            self.arena_top += (t.nbytes + 15) // 16 * 16
        t.offset = offset
        self.arena_top = max(self.arena_top, (offset + t.nbytes + 15) // 16 * 16)
        return self._add(t)

    def planned(self, dtype: DType, dims: Sequence[int], q: QParams | None = None,
                inplace_of: int | None = None) -> int:
        """An arena tensor placed by ``executorch_espnn.planner`` at build time, from the
        lifetimes the op list gives it (optionally on the bytes of ``inplace_of``)."""
        q = q or QParams(0.0, 0)
        tid = self._add(TensorRec(dtype, tuple(dims), Storage.ARENA, 0, q.scale, q.zero_point))
        self._planned[tid] = inplace_of
        return tid

    def _plan(self) -> None:
        if not self._planned:
            return
        first: dict[int, int] = {}
        last: dict[int, int] = {}
        for i, op in enumerate(self.ops):
            if op.output in self._planned:
                first[op.output] = i
                last.setdefault(op.output, i)
            for t in op.inputs:
                if t is not None and t in self._planned:
                    last[t] = i
        bufs = [PlanBuffer(t, self.tensors[t].nbytes, first[t], last[t], src)
                for t, src in self._planned.items()]
        plan = plan_arena(bufs)
        base = self.arena_top
        for t, off in plan.offsets.items():
            self.tensors[t].offset = base + off
        self.arena_top = base + plan.size
        self._planned = {}

    def const(self, arr: Array) -> int:
        a = np.ascontiguousarray(arr)
        off = self.pool.add(a.astype(a.dtype.newbyteorder("<")).tobytes())
        return self._add(TensorRec(_NP_DTYPES[a.dtype], tuple(a.shape), Storage.CONST, off))

    def op(self, opcode: Opcode, inputs: Sequence[int | None], output: int, **params: int) -> OpRec:
        rec = OpRec(opcode, tuple(inputs), output, dict(params))
        self.ops.append(rec)
        return rec

    def scratch(self, op: OpRec, nbytes: int, offset: int | None = None) -> None:
        """Give ``op`` a scratch range: fresh arena bytes, or ``offset`` (deliberate aliasing)."""
        if offset is None:
            offset = self.arena_top
        self.arena_top = max(self.arena_top, (offset + nbytes + 15) // 16 * 16)
        op.scratch_offset, op.scratch_size = offset, nbytes

    def build(self) -> bytes:
        self._plan()
        return encode(Payload(
            tensors=self.tensors, ops=self.ops, inputs=self.inputs, outputs=self.outputs,
            constants=self.pool.bytes(), arena_size=self.arena_top, target=self.target,
            producer=(0, 1, 0),
        ))


def _perm_params(perm: Sequence[int]) -> dict[str, int]:
    full = list(perm) + list(range(len(perm), 4))
    return {f"perm{i}": p for i, p in enumerate(full)}


def _int8_case(name: str, b: PayloadBuilder, inputs: list[Array], expected: list[Array],
               tol: int) -> Case:
    return Case(name, b.build(), inputs, expected, tol, [1.0] * len(expected))


def _rand(gen: torch.Generator, *shape: int, scale: float = 1.0, shift: float = 0.0) -> torch.Tensor:
    return torch.randn(*shape, generator=gen) * scale + shift


def _quant_input(gen: torch.Generator, shape: Sequence[int], scale: float = 1.0,
                 shift: float = 0.0) -> tuple[torch.Tensor, QParams, torch.Tensor]:
    """A float tensor, its qparams, and its int8 quantization (all in the given layout)."""
    x = _rand(gen, *shape, scale=scale, shift=shift)
    q = QParams.of(x)
    return x, q, quantize_t(x, q)


# --------------------------------------------------------------------------- convolution


def conv_case(
    name: str, *, n: int = 1, cin: int, h: int, w: int, cout: int | None = None,
    k: tuple[int, int],
    stride: tuple[int, int] = (1, 1), pad: tuple[int, int, int, int] = (0, 0, 0, 0),
    dilation: tuple[int, int] = (1, 1), groups: int = 1, depthwise_mult: int | None = None,
    bias: bool = True, act: str | None = None, seed: int = 0,
) -> Case:
    """CONV2D, or DEPTHWISE_CONV2D when ``depthwise_mult`` is given (then groups = cin).

    ``pad`` is (top, left, bottom, right).
    """
    gen = torch.Generator().manual_seed(seed)
    _, q_in, xq = _quant_input(gen, (n, cin, h, w), shift=0.3)
    depthwise = depthwise_mult is not None
    if depthwise_mult is not None:
        cout, groups = cin * depthwise_mult, cin
    assert cout is not None, "cout is required for CONV2D"
    wf = _rand(gen, cout, cin // groups, k[0], k[1], scale=0.5)
    wq, s_w = quantize_weights(wf)
    s_in = q_in.scale
    bq = torch.round(_rand(gen, cout, scale=0.5) / (s_in * s_w)).to(torch.int32) if bias else None
    x_dq = dequantize_t(xq, q_in)
    w_dq = wq.to(torch.float32) * s_w.reshape(-1, 1, 1, 1)
    b_dq = None if bq is None else bq.to(torch.float32) * (s_in * s_w)
    x_pad = F.pad(x_dq, (pad[1], pad[3], pad[0], pad[2]))
    y = _apply_act(F.conv2d(x_pad, w_dq, b_dq, stride, 0, dilation, groups), act)
    q_out = QParams.of(y)
    lo, hi = act_range(q_out, act)
    expected = nhwc(quantize_t(y, q_out, lo, hi))

    b = PayloadBuilder()
    x_t = b.input(DType.INT8, (n, h, w, cin), q_in)
    oh, ow = y.shape[2], y.shape[3]
    out_t = b.output(DType.INT8, (n, oh, ow, cout), q_out)
    if depthwise:
        filt = wq.numpy().transpose(1, 2, 3, 0)  # [Cout,1,KH,KW] -> [1,KH,KW,Cout]
    else:
        filt = wq.numpy().transpose(0, 2, 3, 1)  # OIHW -> OHWI
    mult, shift = _requant_consts([s_in * float(s) / q_out.scale for s in s_w])
    ins = [x_t, b.const(filt), None if bq is None else b.const(bq.numpy()),
           b.const(mult), b.const(shift)]
    common = dict(
        stride_h=stride[0], stride_w=stride[1], pad_top=pad[0], pad_left=pad[1],
        pad_bottom=pad[2], pad_right=pad[3], dilation_h=dilation[0], dilation_w=dilation[1],
        in_offset=-q_in.zero_point, out_offset=q_out.zero_point, act_min=lo, act_max=hi,
    )
    if depthwise:
        assert depthwise_mult is not None
        b.op(Opcode.DEPTHWISE_CONV2D, ins, out_t, ch_mult=depthwise_mult, **common)
    else:
        b.op(Opcode.CONV2D, ins, out_t, groups=groups, **common)
    return _int8_case(name, b, [nhwc(xq)], [expected], 1)


def fc_case(name: str, *, in_shape: tuple[int, ...], n_out: int, bias: bool = True,
            act: str | None = None, seed: int = 0) -> Case:
    gen = torch.Generator().manual_seed(seed)
    _, q_in, xq = _quant_input(gen, in_shape, shift=-0.2)
    k = in_shape[-1]
    wq, s_w = quantize_weights(_rand(gen, n_out, k, scale=0.3))
    s_in = q_in.scale
    bq = torch.round(_rand(gen, n_out) / (s_in * s_w)).to(torch.int32) if bias else None
    y = F.linear(dequantize_t(xq, q_in), wq.to(torch.float32) * s_w[:, None],
                 None if bq is None else bq.to(torch.float32) * (s_in * s_w))
    y = _apply_act(y, act)
    q_out = QParams.of(y)
    lo, hi = act_range(q_out, act)
    b = PayloadBuilder()
    x_t = b.input(DType.INT8, in_shape, q_in)
    out_t = b.output(DType.INT8, (*in_shape[:-1], n_out), q_out)
    mult, shift = _requant_consts([s_in * float(s) / q_out.scale for s in s_w])
    b.op(Opcode.FULLY_CONNECTED,
         [x_t, b.const(wq.numpy()), None if bq is None else b.const(bq.numpy()),
          b.const(mult), b.const(shift)],
         out_t, in_offset=-q_in.zero_point, out_offset=q_out.zero_point, act_min=lo, act_max=hi)
    return _int8_case(name, b, [xq.numpy()], [quantize_t(y, q_out, lo, hi).numpy()], 1)


# --------------------------------------------------------------------------- elementwise


def binary_case(name: str, opcode: Opcode, a_shape: tuple[int, ...], b_shape: tuple[int, ...],
                *, act: str | None = None, subtract: bool = False, seed: int = 0) -> Case:
    """ADD or MUL of two int8 tensors (NHWC when rank 4), with broadcasting; ``subtract``:
    ADD computing ``a - b`` (the second operand's multiplier negated)."""
    gen = torch.Generator().manual_seed(seed)
    _, q_a, aq = _quant_input(gen, a_shape, scale=1.5)
    _, q_b, bq = _quant_input(gen, b_shape, scale=0.7, shift=0.2)
    a_dq, b_dq = dequantize_t(aq, q_a), dequantize_t(bq, q_b)
    if opcode == Opcode.ADD:
        y = a_dq - b_dq if subtract else a_dq + b_dq
    else:
        y = a_dq * b_dq
    y = _apply_act(y, act)
    q_out = QParams.of(y)
    lo, hi = act_range(q_out, act)
    b = PayloadBuilder()
    ta = b.input(DType.INT8, a_shape, q_a)
    tb = b.input(DType.INT8, b_shape, q_b)
    out = b.output(DType.INT8, tuple(y.shape), q_out)
    b.op(opcode, [ta, tb], out, **binary_params(opcode, q_a, q_b, q_out, lo, hi, subtract))
    return _int8_case(name, b, [aq.numpy(), bq.numpy()], [quantize_t(y, q_out, lo, hi).numpy()], 1)


def binary_params(opcode: Opcode, q_a: QParams, q_b: QParams, q_out: QParams,
                  lo: int = -128, hi: int = 127, subtract: bool = False) -> dict[str, int]:
    common = dict(a_offset=-q_a.zero_point, b_offset=-q_b.zero_point,
                  out_offset=q_out.zero_point, act_min=lo, act_max=hi)
    if opcode == Opcode.ADD:
        return {**common, **add_params(q_a.scale, -q_b.scale if subtract else q_b.scale, q_out.scale)}
    m, s = quantize_multiplier(q_a.scale * q_b.scale / q_out.scale)
    return {**common, "out_mult": m, "out_shift": s}


def div_case(name: str, a_shape: tuple[int, ...], b_shape: tuple[int, ...], *, b_scale: float = 0.7,
             a_scale: float = 1.5, act: str | None = None, zero_rows: int = 0, signed: bool = False,
             seed: int = 0) -> Case:
    """DIV of an int8 tensor by a non-negative int8 tensor (zero point -128), with
    broadcasting, or (``signed``) by one of either sign, which the lowering leaves to the CPU
    but the format and the engine compute all the same (negative multipliers); ``zero_rows`` divisor elements set to the code worth 0 (and one numerator
    with them to its zero point: 0 / 0).  Expected: PyTorch's float32 quotient of the
    dequantized operands, quantized as quantize_per_tensor does: x / 0 = +-inf saturates,
    0 / 0 = NaN casts to code 0."""
    gen = torch.Generator().manual_seed(seed)
    _, q_a, aq = _quant_input(gen, a_shape, scale=a_scale)
    bf = _rand(gen, *b_shape, scale=b_scale)
    if not signed:
        bf = bf.abs() + 0.05 * b_scale
    q_b = QParams.of(bf)
    bq = quantize_t(bf, q_b)
    if zero_rows:
        flat_b = bq.view(-1)
        flat_b[:zero_rows] = q_b.zero_point
        # the first element of a reads the first divisor element: 0 / 0
        aq.view(-1)[0] = q_a.zero_point
    y = dequantize_t(aq, q_a) / dequantize_t(bq, q_b)
    y = _apply_act(y, act)
    finite = y[torch.isfinite(y)]
    q_out = QParams.from_range(float(finite.min()), float(finite.max()))
    lo, hi = act_range(q_out, act)
    b = PayloadBuilder()
    ta = b.input(DType.INT8, a_shape, q_a)
    tb = b.input(DType.INT8, b_shape, q_b)
    out = b.output(DType.INT8, tuple(y.shape), q_out)
    mult, shift = div_multipliers(q_a.scale / q_b.scale / q_out.scale, q_b.zero_point)
    b.op(Opcode.DIV, [ta, tb, b.const(mult), b.const(shift)], out, a_offset=-q_a.zero_point,
         b_zero_point=q_b.zero_point, out_offset=q_out.zero_point, act_min=lo, act_max=hi)
    return _int8_case(name, b, [aq.numpy(), bq.numpy()], [quantize_t(y, q_out, lo, hi).numpy()], 1)


# --------------------------------------------------------------------------- pooling, mean


def pool_case(name: str, *, avg: bool, n: int = 1, c: int, h: int, w: int, k: tuple[int, int],
              stride: tuple[int, int], pad: tuple[int, int] = (0, 0), ceil_mode: bool = False,
              count_include_pad: bool = True, seed: int = 0) -> Case:
    """MAX/AVG_POOL2D with PyTorch's symmetric padding and ceil mode."""
    gen = torch.Generator().manual_seed(seed)
    _, q, xq = _quant_input(gen, (n, c, h, w), shift=0.5)
    x_dq = dequantize_t(xq, q)
    if avg:
        y = F.avg_pool2d(x_dq, k, stride, pad, ceil_mode=ceil_mode, count_include_pad=count_include_pad)
    else:
        y = F.max_pool2d(x_dq, k, stride, pad, ceil_mode=ceil_mode)
    b = PayloadBuilder()
    x_t = b.input(DType.INT8, (n, h, w, c), q)
    out = b.output(DType.INT8, (n, y.shape[2], y.shape[3], c), q)
    params = dict(kernel_h=k[0], kernel_w=k[1], stride_h=stride[0], stride_w=stride[1],
                  pad_top=pad[0], pad_left=pad[1], pad_bottom=pad[0], pad_right=pad[1],
                  act_min=-128, act_max=127)
    if avg:
        mode = AVG_DIVISOR_INCLUDE_PAD if count_include_pad else AVG_DIVISOR_VALID
        b.op(Opcode.AVG_POOL2D, [x_t], out, divisor_mode=mode, **params)
    else:
        b.op(Opcode.MAX_POOL2D, [x_t], out, **params)
    # max pool selects an input value: exact; the average rounds: within 1 LSB
    return _int8_case(name, b, [nhwc(xq)], [nhwc(quantize_t(y, q))], 1 if avg else 0)


def float_pool_case(name: str, torch_op: int, *, n: int = 1, c: int, h: int, w: int,
                    k: tuple[int, int] = (1, 1), stride: tuple[int, int] = (1, 1),
                    pad: tuple[int, int] = (0, 0), ceil_mode: bool = False,
                    count_include_pad: bool = True, requantize: bool = False,
                    act_min: int = -128, seed: int = 0) -> Case:
    """AVG_POOL2D_FLOAT against PyTorch's quantized reference, exactly: dequantize_per_tensor,
    the float32 avg_pool2d / adaptive_avg_pool2d / mean, quantize_per_tensor.  The input has
    few distinct codes, so many window sums tie (the case ESP-NN's integer average rounds
    the other way)."""
    gen = torch.Generator().manual_seed(seed)
    q = QParams(float(np.float32(0.0371)), -3)
    xq = torch.randint(-20, 21, (n, c, h, w), generator=gen).to(torch.int8)
    x_dq = torch_dequantize(xq, q)
    kh, kw = k
    if torch_op == AVG_TORCH_POOL:
        y = F.avg_pool2d(x_dq, k, stride, pad, ceil_mode=ceil_mode, count_include_pad=count_include_pad)
    elif torch_op == AVG_TORCH_ADAPTIVE:
        y = F.adaptive_avg_pool2d(x_dq, (h // kh, w // kw))
        stride = k
    else:
        y = torch.mean(x_dq, dim=(2, 3), keepdim=True)
        kh, kw = k = (h, w)
    q_out = QParams.of(y) if requantize else q
    want = torch.clamp(torch_quantize(y, q_out), act_min, 127)
    b = PayloadBuilder()
    x_t = b.input(DType.INT8, (n, h, w, c), q)
    out = b.output(DType.INT8, (n, y.shape[2], y.shape[3], c), q_out)
    table = torch_dequantize(torch.arange(-128, 128).to(torch.int8), q).numpy()
    mode = AVG_DIVISOR_INCLUDE_PAD if count_include_pad and torch_op == AVG_TORCH_POOL else AVG_DIVISOR_VALID
    b.op(Opcode.AVG_POOL2D_FLOAT, [x_t, b.const(table)], out, kernel_h=kh, kernel_w=kw,
         stride_h=stride[0], stride_w=stride[1], pad_top=pad[0], pad_left=pad[1],
         pad_bottom=pad[0], pad_right=pad[1], act_min=act_min, act_max=127, divisor_mode=mode,
         torch_op=torch_op)
    return _int8_case(name, b, [nhwc(xq)], [nhwc(want)], 0)


def mean_case(name: str, *, n: int = 1, c: int, h: int, w: int, seed: int = 0) -> Case:
    gen = torch.Generator().manual_seed(seed)
    _, q_in, xq = _quant_input(gen, (n, c, h, w), shift=0.4)
    y = torch.mean(dequantize_t(xq, q_in), dim=(2, 3), keepdim=True)
    q_out = QParams.of(y)
    b = PayloadBuilder()
    x_t = b.input(DType.INT8, (n, h, w, c), q_in)
    out = b.output(DType.INT8, (n, 1, 1, c), q_out)
    m, s = quantize_multiplier(q_in.scale / (q_out.scale * h * w))
    b.op(Opcode.MEAN_HW, [x_t], out, in_offset=-q_in.zero_point, out_offset=q_out.zero_point,
         mult=m, shift=s)
    return _int8_case(name, b, [nhwc(xq)], [nhwc(quantize_t(y, q_out))], 1)


# --------------------------------------------------------------------------- softmax, LUT

SOFTMAX_Q = QParams(1.0 / 256.0, -128)


def softmax_case(name: str, *, shape: tuple[int, ...], logit_scale: float = 3.0,
                 seed: int = 0, x_override: Array | None = None, q_in: QParams | None = None) -> Case:
    gen = torch.Generator().manual_seed(seed)
    if x_override is None:
        x = _rand(gen, *shape, scale=logit_scale)
        q_in = q_in or QParams.of(x)
        xq = quantize_t(x, q_in)
    else:
        assert q_in is not None
        xq = torch.from_numpy(np.asarray(x_override, dtype=np.int8))
    y = torch.softmax(dequantize_t(xq, q_in), dim=-1)
    b = PayloadBuilder()
    x_t = b.input(DType.INT8, shape, q_in)
    out = b.output(DType.INT8, shape, SOFTMAX_Q)
    mult, shift, diff_min = softmax_params(q_in.scale)
    b.op(Opcode.SOFTMAX, [x_t], out, mult=mult, shift=shift, diff_min=diff_min)
    return _int8_case(name, b, [xq.numpy()], [quantize_t(y, SOFTMAX_Q).numpy()], 1)


ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "hardswish": F.hardswish,
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
    "silu": F.silu,
    "gelu": F.gelu,
    "relu6": lambda t: torch.clamp(t, 0.0, 6.0),
    "leaky_relu": lambda t: F.leaky_relu(t, 0.1),
}


def lut_table(fn: Callable[[torch.Tensor], torch.Tensor], q_in: QParams, q_out: QParams) -> Array:
    """The 256-entry table: quantize(fn(dequantize(i))) for every int8 i."""
    codes = torch.arange(-128, 128, dtype=torch.int32)
    return quantize_t(fn(dequantize_t(codes, q_in)), q_out).numpy()


def lut_case(name: str, act: str, *, shape: tuple[int, ...] = (1, 5, 6, 7), seed: int = 0) -> Case:
    fn = ACTIVATIONS[act]
    gen = torch.Generator().manual_seed(seed)
    _, q_in, xq = _quant_input(gen, shape, scale=3.0)
    codes = dequantize_t(torch.arange(-128, 128), q_in)
    q_out = QParams.of(fn(codes))
    b = PayloadBuilder()
    x_t = b.input(DType.INT8, shape, q_in)
    out = b.output(DType.INT8, shape, q_out)
    b.op(Opcode.LUT, [x_t, b.const(lut_table(fn, q_in, q_out))], out)
    expected = quantize_t(fn(dequantize_t(xq, q_in)), q_out).numpy()
    return _int8_case(name, b, [xq.numpy()], [expected], 0)


# --------------------------------------------------------------------------- quantize / dequantize


def torch_quantize(x: torch.Tensor, q: QParams) -> torch.Tensor:
    """ExecuTorch/PyTorch's decomposed quantize_per_tensor (float32 x * (1/scale))."""
    import torch.ao.quantization.fx._decomposed  # registers quantized_decomposed

    out: torch.Tensor = torch.ops.quantized_decomposed.quantize_per_tensor(
        x, q.scale, q.zero_point, -128, 127, torch.int8)
    return out


def torch_dequantize(x: torch.Tensor, q: QParams) -> torch.Tensor:
    import torch.ao.quantization.fx._decomposed

    out: torch.Tensor = torch.ops.quantized_decomposed.dequantize_per_tensor(
        x, q.scale, q.zero_point, -128, 127, torch.int8)
    return out


def quantize_case(name: str, *, shape: tuple[int, ...], perm: tuple[int, ...], seed: int = 0,
                  ties: bool = False) -> Case:
    """QUANTIZE float32 -> int8 with a permutation; ``ties`` puts values on .5 boundaries."""
    gen = torch.Generator().manual_seed(seed)
    if ties:  # a power-of-two scale makes x * (1/scale) exact, so ties stay ties
        q = QParams(0.25, 3)
        x = (torch.randint(-140, 140, shape, generator=gen).to(torch.float32) + 0.5) * 0.25
    else:
        x = _rand(gen, *shape, scale=2.0)
        q = QParams.of(x)
    expected = torch_quantize(x, q).permute(*perm).contiguous().numpy()
    b = PayloadBuilder()
    x_t = b.input(DType.FLOAT32, shape)
    out = b.output(DType.INT8, expected.shape, q)
    b.op(Opcode.QUANTIZE, [x_t], out, **_perm_params(perm))
    return _int8_case(name, b, [x.numpy()], [expected], 0)


def dequantize_case(name: str, *, shape: tuple[int, ...], perm: tuple[int, ...],
                    seed: int = 0) -> Case:
    gen = torch.Generator().manual_seed(seed)
    xq = torch.randint(-128, 128, shape, generator=gen).to(torch.int8)
    q = QParams(float(np.float32(0.0371)), -7)
    expected = torch_dequantize(xq, q).permute(*perm).contiguous().numpy()
    b = PayloadBuilder()
    x_t = b.input(DType.INT8, shape, q)
    out = b.output(DType.FLOAT32, expected.shape)
    b.op(Opcode.DEQUANTIZE, [x_t], out, **_perm_params(perm))
    return Case(name, b.build(), [xq.numpy()], [expected], 0, [q.scale])


# --------------------------------------------------------------------------- data movement


def _movement_case(name: str, x: Array, expected: Array, opcode: Opcode, params: dict[str, int],
                   extra_inputs: Sequence[Array] = (), q: QParams | None = None) -> Case:
    """One data-movement op from input 0 (plus constant/extra inputs) to one output."""
    dt = _NP_DTYPES[x.dtype]
    q = q or (QParams(0.05, 2) if dt == DType.INT8 else QParams(0.0, 0))
    b = PayloadBuilder()
    ins = [b.input(dt, x.shape, q)]
    inputs = [x]
    for e in extra_inputs:
        ins.append(b.input(dt, e.shape, q))
        inputs.append(e)
    out = b.output(dt, expected.shape, q)
    b.op(opcode, ins, out, **params)
    lsb = 1.0 if dt == DType.INT8 else 0.0
    return Case(name, b.build(), inputs, [expected], 0, [lsb])


def _i8(gen: torch.Generator, *shape: int) -> torch.Tensor:
    return torch.randint(-128, 128, shape, generator=gen).to(torch.int8)


def transpose_case(name: str, shape: tuple[int, ...], perm: tuple[int, ...],
                   dtype: torch.dtype = torch.int8, seed: int = 0) -> Case:
    gen = torch.Generator().manual_seed(seed)
    x = _i8(gen, *shape) if dtype == torch.int8 else torch.randn(*shape, generator=gen)
    return _movement_case(name, x.numpy(), x.permute(*perm).contiguous().numpy(),
                          Opcode.TRANSPOSE, _perm_params(perm))


def slice_case(name: str, shape: tuple[int, ...], starts: tuple[int, ...], stops: tuple[int, ...],
               steps: tuple[int, ...], seed: int = 0) -> Case:
    gen = torch.Generator().manual_seed(seed)
    x = _i8(gen, *shape)
    idx = tuple(slice(a, e, s) for a, e, s in zip(starts, stops, steps, strict=True))
    expected = x[idx].contiguous().numpy()
    params = {f"start{i}": (starts[i] if i < len(shape) else 0) for i in range(4)}
    params |= {f"step{i}": (steps[i] if i < len(shape) else 1) for i in range(4)}
    return _movement_case(name, x.numpy(), expected, Opcode.SLICE, params)


def concat_case(name: str, shapes: Sequence[tuple[int, ...]], axis: int, seed: int = 0) -> Case:
    gen = torch.Generator().manual_seed(seed)
    xs = [_i8(gen, *s) for s in shapes]
    expected = torch.cat(xs, dim=axis).numpy()
    return _movement_case(name, xs[0].numpy(), expected, Opcode.CONCAT, {"axis": axis},
                          [x.numpy() for x in xs[1:]])


def pad_case(name: str, shape: tuple[int, ...], before: tuple[int, ...], after: tuple[int, ...],
             real_value: float = 0.0, seed: int = 0) -> Case:
    """Constant PAD of an int8 tensor; the pad value is ``real_value`` quantized."""
    gen = torch.Generator().manual_seed(seed)
    x = _i8(gen, *shape)
    q = QParams(0.05, 2)
    value = int(quantize_t(torch.tensor([real_value]), q)[0])
    torch_pad: list[int] = []
    for i in reversed(range(len(shape))):
        torch_pad += [before[i], after[i]]
    x_dq = dequantize_t(x, q)
    y = F.pad(x_dq, torch_pad, value=float(dequantize_t(torch.tensor([value]), q)[0]))
    params = {f"before{i}": (before[i] if i < len(shape) else 0) for i in range(4)}
    params |= {f"after{i}": (after[i] if i < len(shape) else 0) for i in range(4)}
    return _movement_case(name, x.numpy(), quantize_t(y, q).numpy(), Opcode.PAD,
                          params | {"value": value}, q=q)


def nearest_map(n_in: int, n_out: int) -> Array:
    """PyTorch's own nearest index rule, read off F.interpolate on an index ramp."""
    ramp = torch.arange(n_in, dtype=torch.float32).reshape(1, 1, n_in)
    return F.interpolate(ramp, size=n_out, mode="nearest").reshape(-1).to(torch.int32).numpy()


def upsample_case(name: str, *, n: int = 1, c: int, h: int, w: int, size: tuple[int, int],
                  seed: int = 0) -> Case:
    gen = torch.Generator().manual_seed(seed)
    x = _i8(gen, n, c, h, w)
    q = QParams(0.05, 2)
    y = F.interpolate(dequantize_t(x, q), size=size, mode="nearest")
    b = PayloadBuilder()
    x_t = b.input(DType.INT8, (n, h, w, c), q)
    out = b.output(DType.INT8, (n, size[0], size[1], c), q)
    b.op(Opcode.UPSAMPLE_NEAREST,
         [x_t, b.const(nearest_map(h, size[0])), b.const(nearest_map(w, size[1]))], out)
    return _int8_case(name, b, [nhwc(x)], [nhwc(quantize_t(y, q))], 0)


# --------------------------------------------------------------------------- format 2.1 ops


def prelu_case(name: str, *, shape: tuple[int, ...], slopes: int, per_slope_scale: bool = False,
               seed: int = 0) -> Case:
    """PRELU on a logical NC... tensor (NHWC when 4-D), one slope or one per channel (dim 1);
    the slope int8 symmetric per tensor, as the quantizer makes it, or with a scale per slope
    (``per_slope_scale``: a multiplier of its own per channel)."""
    gen = torch.Generator().manual_seed(seed)
    _, q_in, xq = _quant_input(gen, shape, scale=1.2, shift=-0.3)
    alpha = torch.rand(slopes, generator=gen) * 0.6 - 0.1  # mostly positive, some negative
    amax = alpha.abs() if per_slope_scale else alpha.abs().max().expand(slopes)
    s_a = (amax.clamp(min=1e-6) / 127.0).to(torch.float32)
    aq = torch.clamp(torch.round(alpha / s_a), -127, 127).to(torch.int8)
    y = F.prelu(dequantize_t(xq, q_in), aq.to(torch.float32) * s_a)
    q_out = QParams.of(y)
    perm = (0, *range(2, len(shape)), 1)  # the channels last
    phys = tuple(shape[p] for p in perm)
    pos_m, pos_s = quantize_multiplier(q_in.scale / q_out.scale)
    neg_m, neg_s = _requant_consts([q_in.scale * float(sa) / q_out.scale for sa in s_a])
    b = PayloadBuilder()
    x_t = b.input(DType.INT8, phys, q_in)
    out = b.output(DType.INT8, phys, q_out)
    b.op(Opcode.PRELU, [x_t, b.const(aq.numpy()), b.const(neg_m), b.const(neg_s)], out,
         in_offset=-q_in.zero_point, alpha_offset=0, out_offset=q_out.zero_point,
         pos_mult=pos_m, pos_shift=pos_s)
    expected = quantize_t(y, q_out).permute(*perm).contiguous().numpy()
    return _int8_case(name, b, [xq.permute(*perm).contiguous().numpy()], [expected], 1)


def bilinear_table(n_in: int, n_out: int, align_corners: bool) -> tuple[Array, Array]:
    """PyTorch's bilinear source coordinates (``area_pixel_compute_source_index`` for an
    output size without scale factor), as (lower index, weight of the next in 2^-11 units)."""
    i = np.arange(n_out, dtype=np.float64)
    if align_corners:
        src = i * ((n_in - 1) / (n_out - 1) if n_out > 1 else 0.0)
    else:
        src = np.maximum((i + 0.5) * (n_in / n_out) - 0.5, 0.0)
    idx = np.minimum(np.floor(src), n_in - 1)
    frac = np.where(idx >= n_in - 1, 0, np.rint((src - idx) * BILINEAR_ONE))
    return idx.astype(np.int32), frac.astype(np.int32)


def bilinear_case(name: str, *, n: int = 1, c: int, h: int, w: int, size: tuple[int, int],
                  align_corners: bool, seed: int = 0) -> Case:
    gen = torch.Generator().manual_seed(seed)
    x = _i8(gen, n, c, h, w)
    q = QParams(0.04, -3)
    y = F.interpolate(dequantize_t(x, q), size=size, mode="bilinear", align_corners=align_corners)
    b = PayloadBuilder()
    x_t = b.input(DType.INT8, (n, h, w, c), q)
    out = b.output(DType.INT8, (n, size[0], size[1], c), q)
    yi, yf = bilinear_table(h, size[0], align_corners)
    xi, xf = bilinear_table(w, size[1], align_corners)
    b.op(Opcode.UPSAMPLE_BILINEAR, [x_t, b.const(yi), b.const(yf), b.const(xi), b.const(xf)], out)
    return _int8_case(name, b, [nhwc(x)], [nhwc(quantize_t(y, q))], 1)


def transpose_conv_case(
    name: str, *, n: int = 1, cin: int, h: int, w: int, cout: int, k: tuple[int, int],
    stride: tuple[int, int] = (1, 1), pad: tuple[int, int] = (0, 0), out_pad: tuple[int, int] = (0, 0),
    dilation: tuple[int, int] = (1, 1), groups: int = 1, bias: bool = True, act: str | None = None,
    seed: int = 0,
) -> Case:
    """TRANSPOSE_CONV2D against F.conv_transpose2d; weights per output channel."""
    gen = torch.Generator().manual_seed(seed)
    _, q_in, xq = _quant_input(gen, (n, cin, h, w), shift=0.2)
    cin_g, cout_g = cin // groups, cout // groups
    # quantize per output channel in the payload's [Cout, KH, KW, Cin/g] layout
    filt_f = _rand(gen, cout, k[0], k[1], cin_g, scale=0.5)
    fq, s_w = quantize_weights(filt_f)
    # PyTorch's [Cin, Cout/g, KH, KW]: input channel g*cin_g + i, column j <- filter[g*cout_g + j, :, :, i]
    w_dq = (fq.to(torch.float32) * s_w.reshape(-1, 1, 1, 1)).reshape(groups, cout_g, k[0], k[1], cin_g)
    w_dq = w_dq.permute(0, 4, 1, 2, 3).reshape(cin, cout_g, k[0], k[1])
    s_in = q_in.scale
    bq = torch.round(_rand(gen, cout, scale=0.3) / (s_in * s_w)).to(torch.int32) if bias else None
    b_dq = None if bq is None else bq.to(torch.float32) * (s_in * s_w)
    y = F.conv_transpose2d(dequantize_t(xq, q_in), w_dq, b_dq, stride, pad, out_pad, groups, dilation)
    y = _apply_act(y, act)
    q_out = QParams.of(y)
    lo, hi = act_range(q_out, act)
    b = PayloadBuilder()
    x_t = b.input(DType.INT8, (n, h, w, cin), q_in)
    out_t = b.output(DType.INT8, (n, y.shape[2], y.shape[3], cout), q_out)
    mult, shift = _requant_consts([s_in * float(s) / q_out.scale for s in s_w])
    b.op(Opcode.TRANSPOSE_CONV2D,
         [x_t, b.const(fq.numpy()), None if bq is None else b.const(bq.numpy()), b.const(mult), b.const(shift)],
         out_t, stride_h=stride[0], stride_w=stride[1], pad_top=pad[0], pad_left=pad[1],
         pad_bottom=pad[0], pad_right=pad[1], dilation_h=dilation[0], dilation_w=dilation[1],
         out_pad_h=out_pad[0], out_pad_w=out_pad[1], groups=groups, in_offset=-q_in.zero_point,
         out_offset=q_out.zero_point, act_min=lo, act_max=hi)
    return _int8_case(name, b, [nhwc(xq)], [nhwc(quantize_t(y, q_out, lo, hi))], 1)


# --------------------------------------------------------------------------- multi-op payloads


def inplace_add_case(name: str, seed: int = 0) -> Case:
    """RESHAPE input -> arena A; ADD(A, b) written over A's bytes; RESHAPE A' -> output."""
    gen = torch.Generator().manual_seed(seed)
    shape = (1, 4, 5, 6)
    _, q_a, aq = _quant_input(gen, shape)
    _, q_b, bq = _quant_input(gen, (1, 1, 1, 6), scale=0.5)
    y = dequantize_t(aq, q_a) + dequantize_t(bq, q_b)
    q_out = QParams.of(y)
    b = PayloadBuilder()
    ta = b.input(DType.INT8, shape, q_a)
    tb = b.input(DType.INT8, (1, 1, 1, 6), q_b)
    a_arena = b.arena(DType.INT8, shape, q_a)
    sum_arena = b.arena(DType.INT8, shape, q_out, offset=b.tensors[a_arena].offset)
    out = b.output(DType.INT8, shape, q_out)
    b.op(Opcode.RESHAPE, [ta], a_arena)
    b.op(Opcode.ADD, [a_arena, tb], sum_arena, **binary_params(Opcode.ADD, q_a, q_b, q_out))
    b.op(Opcode.RESHAPE, [sum_arena], out)
    return _int8_case(name, b, [aq.numpy(), bq.numpy()], [quantize_t(y, q_out).numpy()], 1)


def inplace_lut_reshape_fc_case(name: str, seed: int = 0) -> Case:
    """PAD input -> arena; LUT in place; RESHAPE in place to [1, K]; FULLY_CONNECTED -> output."""
    gen = torch.Generator().manual_seed(seed)
    _, q_in, xq = _quant_input(gen, (1, 3, 3, 4))  # NHWC
    fn = F.hardswish
    codes = dequantize_t(torch.arange(-128, 128), q_in)
    q_act = QParams.of(fn(codes))
    pad_value = q_in.zero_point
    b = PayloadBuilder()
    x_t = b.input(DType.INT8, (1, 3, 3, 4), q_in)
    padded = b.arena(DType.INT8, (1, 4, 3, 4), q_in)
    off = b.tensors[padded].offset
    act = b.arena(DType.INT8, (1, 4, 3, 4), q_act, offset=off)
    flat = b.arena(DType.INT8, (1, 48), q_act, offset=off)
    pad = {f"before{i}": 0 for i in range(4)} | {f"after{i}": 0 for i in range(4)}
    pad["before1"] = 1
    b.op(Opcode.PAD, [x_t], padded, value=pad_value, **pad)
    b.op(Opcode.LUT, [padded, b.const(lut_table(fn, q_in, q_act))], act)
    b.op(Opcode.RESHAPE, [act], flat)
    # torch: the same graph in float, quantizing where the int8 graph stores tensors
    x_dq = F.pad(dequantize_t(xq, q_in), (0, 0, 0, 0, 1, 0))
    a_q = quantize_t(fn(x_dq), q_act)
    wq, s_w = quantize_weights(_rand(gen, 10, 48, scale=0.2))
    bq = torch.round(_rand(gen, 10) / (q_act.scale * s_w)).to(torch.int32)
    y = F.linear(dequantize_t(a_q.reshape(1, 48), q_act), wq.to(torch.float32) * s_w[:, None],
                 bq.to(torch.float32) * (q_act.scale * s_w))
    q_out = QParams.of(y)
    out = b.output(DType.INT8, (1, 10), q_out)
    mult, shift = _requant_consts([q_act.scale * float(s) / q_out.scale for s in s_w])
    b.op(Opcode.FULLY_CONNECTED, [flat, b.const(wq.numpy()), b.const(bq.numpy()),
                                  b.const(mult), b.const(shift)], out,
         in_offset=-q_act.zero_point, out_offset=q_out.zero_point, act_min=-128, act_max=127)
    return _int8_case(name, b, [xq.numpy()], [quantize_t(y, q_out).numpy()], 1)


def float_conv_chain_case(name: str, seed: int = 0) -> Case:
    """float NCHW -> QUANTIZE(perm) -> CONV2D 3x3 s2 relu (scratch) -> DEQUANTIZE(perm) -> float NCHW."""
    gen = torch.Generator().manual_seed(seed)
    x = _rand(gen, 1, 3, 9, 11)
    q_in = QParams.of(x)
    xq = torch_quantize(x, q_in)
    wq, s_w = quantize_weights(_rand(gen, 8, 3, 3, 3, scale=0.4))
    bq = torch.round(_rand(gen, 8, scale=0.2) / (q_in.scale * s_w)).to(torch.int32)
    y = F.relu(F.conv2d(dequantize_t(xq, q_in), wq.to(torch.float32) * s_w.reshape(-1, 1, 1, 1),
                        bq.to(torch.float32) * (q_in.scale * s_w), 2, 1))
    q_out = QParams.of(y)
    lo, hi = act_range(q_out, "relu")
    expected = torch_dequantize(quantize_t(y, q_out, lo, hi), q_out).numpy()
    b = PayloadBuilder()
    x_t = b.input(DType.FLOAT32, (1, 3, 9, 11))
    xq_t = b.arena(DType.INT8, (1, 9, 11, 3), q_in)
    yq_t = b.arena(DType.INT8, (1, 5, 6, 8), q_out)
    out = b.output(DType.FLOAT32, (1, 8, 5, 6))
    b.op(Opcode.QUANTIZE, [x_t], xq_t, **_perm_params(NCHW_TO_NHWC))
    mult, shift = _requant_consts([q_in.scale * float(s) / q_out.scale for s in s_w])
    conv = b.op(Opcode.CONV2D, [xq_t, b.const(wq.numpy().transpose(0, 2, 3, 1)),
                                b.const(bq.numpy()), b.const(mult), b.const(shift)], yq_t,
         stride_h=2, stride_w=2, pad_top=1, pad_left=1, pad_bottom=1, pad_right=1,
         dilation_h=1, dilation_w=1, groups=1, in_offset=-q_in.zero_point,
         out_offset=q_out.zero_point, act_min=lo, act_max=hi)
    b.scratch(conv, 100)
    b.op(Opcode.DEQUANTIZE, [yq_t], out, **_perm_params(NHWC_TO_NCHW))
    return Case(name, b.build(), [x.numpy()], [expected], 1, [q_out.scale])


# --------------------------------------------------------------------------- layer norm, matmul


def layer_norm_case(name: str, *, shape: tuple[int, ...], affine: bool = True, eps: float = 1e-5,
                    x_override: Array | None = None, seed: int = 0) -> Case:
    """LAYER_NORM over the last dim; the constants are the lowering's (ops.norm), the expected
    values PyTorch's float layer norm of the dequantized input, quantized."""
    from executorch_espnn.graph.qdq import QParams as LibQParams
    from executorch_espnn.ops.norm import layer_norm_constants

    gen = torch.Generator().manual_seed(seed)
    d = shape[-1]
    if x_override is None:
        _, q_in, xq = _quant_input(gen, shape, scale=2.0, shift=0.3)
    else:
        xq = torch.from_numpy(np.asarray(x_override, dtype=np.int8))
        q_in = QParams(float(np.float32(0.05)), 3)
    w = _rand(gen, d, scale=0.5, shift=1.0) if affine else None
    bias = _rand(gen, d, scale=0.3) if affine else None
    # eps 0 on a constant row: PyTorch's 0/0 is NaN, the engine's 0 is the limit eps -> 0+
    y = F.layer_norm(dequantize_t(xq, q_in), (d,), w, bias, eps or 1e-30)
    q_out = QParams.of(y)
    g, bt, params = layer_norm_constants(
        None if w is None else w.double().numpy(), None if bias is None else bias.double().numpy(), eps, d,
        LibQParams(q_in.scale, q_in.zero_point), LibQParams(q_out.scale, q_out.zero_point))
    b = PayloadBuilder()
    x_t = b.input(DType.INT8, shape, q_in)
    out = b.output(DType.INT8, shape, q_out)
    b.op(Opcode.LAYER_NORM, [x_t, b.const(g), b.const(bt)], out, **params)
    return _int8_case(name, b, [xq.numpy()], [quantize_t(y, q_out).numpy()], 1)


def batch_matmul_case(name: str, *, a_shape: tuple[int, ...], b_shape: tuple[int, ...],
                      act: str | None = None, b_symmetric: bool = False, a_symmetric: bool = False,
                      seed: int = 0) -> Case:
    """BATCH_MATMUL of a [..., M, K] and b [..., K, N], b handed over transposed; with
    ``b_symmetric`` (``a_symmetric``) b's (a's) zero point is 0: ESP-NN's filter (input) offset."""
    gen = torch.Generator().manual_seed(seed)
    a_float, q_a, aq = _quant_input(gen, a_shape, scale=1.2, shift=0.3)
    b_float, q_b, bq = _quant_input(gen, b_shape, scale=0.8, shift=-0.2)
    if b_symmetric:
        q_b = QParams(float(np.float32(float(b_float.abs().max()) / 127.5)), 0)
        bq = quantize_t(b_float, q_b)
    if a_symmetric:
        q_a = QParams(float(np.float32(float(a_float.abs().max()) / 127.5)), 0)
        aq = quantize_t(a_float, q_a)
    y = _apply_act(torch.matmul(dequantize_t(aq, q_a), dequantize_t(bq, q_b)), act)
    q_out = QParams.of(y)
    lo, hi = act_range(q_out, act)
    bt = bq.transpose(-2, -1).contiguous()
    b = PayloadBuilder()
    ta = b.input(DType.INT8, a_shape, q_a)
    tb = b.input(DType.INT8, tuple(bt.shape), q_b)
    out = b.output(DType.INT8, tuple(y.shape), q_out)
    m, sh = quantize_multiplier(q_a.scale * q_b.scale / q_out.scale)
    b.op(Opcode.BATCH_MATMUL, [ta, tb], out, a_offset=-q_a.zero_point, b_offset=-q_b.zero_point,
         out_mult=m, out_shift=sh, out_offset=q_out.zero_point, act_min=lo, act_max=hi)
    return _int8_case(name, b, [aq.numpy(), bt.numpy()], [quantize_t(y, q_out, lo, hi).numpy()], 1)


# --------------------------------------------------------------------------- whole networks


@dataclass
class QTensor:
    """A tensor of a network under construction: its payload id, and the PyTorch chain's
    int8 value (NCHW when rank 4), computed independently of the reference."""

    tid: int
    value: torch.Tensor
    q: QParams


class QGraph:
    """Builds a payload and, alongside, the PyTorch reference of the same int8 network: each
    op runs in float32 on the dequantized inputs and is quantized where the payload stores
    its output.  Output qparams come from the observed float result (one-batch calibration).
    Arena tensors are placed by the project's planner from their lifetimes."""

    def __init__(self, seed: int = 0) -> None:
        self.b = PayloadBuilder()
        self.gen = torch.Generator().manual_seed(seed)
        self.inputs: list[Array] = []
        self.expected: list[Array] = []
        self.output_lsb: list[float] = []
        self.values: dict[int, QTensor] = {}  # tensor id -> the PyTorch chain's value

    def _keep(self, t: QTensor) -> QTensor:
        self.values[t.tid] = t
        return t

    def input_nchw(self, shape: tuple[int, int, int, int]) -> QTensor:
        """A float32 NCHW delegate input, quantized to NHWC int8 by the payload."""
        x = _rand(self.gen, *shape)
        q = QParams.of(x)
        xt = self.b.input(DType.FLOAT32, shape)
        n, c, h, w = shape
        tid = self.b.planned(DType.INT8, (n, h, w, c), q)
        self.b.op(Opcode.QUANTIZE, [xt], tid, **_perm_params(NCHW_TO_NHWC))
        self.inputs.append(x.numpy())
        return self._keep(QTensor(tid, torch_quantize(x, q), q))

    def _weights(self, shape: tuple[int, ...], fan_in: int) -> tuple[torch.Tensor, torch.Tensor]:
        return quantize_weights(_rand(self.gen, *shape, scale=math.sqrt(2.0 / fan_in)))

    def conv(self, x: QTensor, cout: int, k: int, stride: int = 1, *, depthwise: bool = False,
             act: str | None = "relu6") -> QTensor:
        n, cin = x.value.shape[:2]
        pad = k // 2
        groups = cin if depthwise else 1
        if depthwise:
            cout = cin
        wq, s_w = self._weights((cout, cin // groups, k, k), (cin // groups) * k * k)
        s_in = x.q.scale
        bq = torch.round(_rand(self.gen, cout, scale=0.1) / (s_in * s_w)).to(torch.int32)
        y = F.conv2d(dequantize_t(x.value, x.q), wq.to(torch.float32) * s_w.reshape(-1, 1, 1, 1),
                     bq.to(torch.float32) * (s_in * s_w), stride, pad, 1, groups)
        y = _apply_act(y, act)
        q = QParams.of(y)
        lo, hi = act_range(q, act)
        out = self.b.planned(DType.INT8, (n, y.shape[2], y.shape[3], cout), q)
        filt = wq.numpy().transpose(1, 2, 3, 0) if depthwise else wq.numpy().transpose(0, 2, 3, 1)
        mult, shift = _requant_consts([s_in * float(s) / q.scale for s in s_w])
        ins = [x.tid, self.b.const(filt), self.b.const(bq.numpy()), self.b.const(mult),
               self.b.const(shift)]
        common = dict(stride_h=stride, stride_w=stride, pad_top=pad, pad_left=pad,
                      pad_bottom=pad, pad_right=pad, dilation_h=1, dilation_w=1,
                      in_offset=-x.q.zero_point, out_offset=q.zero_point, act_min=lo, act_max=hi)
        if depthwise:
            self.b.op(Opcode.DEPTHWISE_CONV2D, ins, out, ch_mult=1, **common)
        else:
            self.b.op(Opcode.CONV2D, ins, out, groups=1, **common)
        return self._keep(QTensor(out, quantize_t(y, q, lo, hi), q))

    def add(self, a: QTensor, b: QTensor, *, in_place: bool = True) -> QTensor:
        y = dequantize_t(a.value, a.q) + dequantize_t(b.value, b.q)
        q = QParams.of(y)
        n, c, h, w = y.shape
        out = self.b.planned(DType.INT8, (n, h, w, c), q, inplace_of=a.tid if in_place else None)
        self.b.op(Opcode.ADD, [a.tid, b.tid], out, **binary_params(Opcode.ADD, a.q, b.q, q))
        return self._keep(QTensor(out, quantize_t(y, q), q))

    def mean_flatten(self, x: QTensor) -> QTensor:
        n, c, h, w = x.value.shape
        y = torch.mean(dequantize_t(x.value, x.q), dim=(2, 3))
        q = QParams.of(y)
        m = self.b.planned(DType.INT8, (n, 1, 1, c), q)
        mult, shift = quantize_multiplier(x.q.scale / (q.scale * h * w))
        self.b.op(Opcode.MEAN_HW, [x.tid], m, in_offset=-x.q.zero_point,
                  out_offset=q.zero_point, mult=mult, shift=shift)
        self._keep(QTensor(m, quantize_t(y.reshape(n, c, 1, 1), q), q))
        flat = self.b.planned(DType.INT8, (n, c), q, inplace_of=m)
        self.b.op(Opcode.RESHAPE, [m], flat)
        return self._keep(QTensor(flat, quantize_t(y, q), q))

    def fc(self, x: QTensor, n_out: int) -> QTensor:
        n, k = x.value.shape
        wq, s_w = self._weights((n_out, k), k)
        bq = torch.round(_rand(self.gen, n_out, scale=0.1) / (x.q.scale * s_w)).to(torch.int32)
        y = F.linear(dequantize_t(x.value, x.q), wq.to(torch.float32) * s_w[:, None],
                     bq.to(torch.float32) * (x.q.scale * s_w))
        q = QParams.of(y)
        out = self.b.planned(DType.INT8, (n, n_out), q)
        mult, shift = _requant_consts([x.q.scale * float(s) / q.scale for s in s_w])
        self.b.op(Opcode.FULLY_CONNECTED, [x.tid, self.b.const(wq.numpy()), self.b.const(bq.numpy()),
                                           self.b.const(mult), self.b.const(shift)], out,
                  in_offset=-x.q.zero_point, out_offset=q.zero_point, act_min=-128, act_max=127)
        return self._keep(QTensor(out, quantize_t(y, q), q))

    def output_float(self, x: QTensor) -> None:
        """DEQUANTIZE a rank-2 int8 tensor into a float32 delegate output."""
        out = self.b.output(DType.FLOAT32, tuple(x.value.shape))
        self.b.op(Opcode.DEQUANTIZE, [x.tid], out, perm0=0, perm1=1, perm2=2, perm3=3)
        self.expected.append(torch_dequantize(x.value, x.q).numpy())
        self.output_lsb.append(x.q.scale)

    def case(self, name: str) -> Case:
        return Case(name, self.b.build(), self.inputs, self.expected, 1, self.output_lsb)


def _make_divisible(v: float, divisor: int = 8) -> int:
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new_v + divisor if new_v < 0.9 * v else new_v


def mobilenet_v2_graph(width: float = 0.35, resolution: int = 96, classes: int = 1000,
                       seed: int = 0) -> QGraph:
    """MobileNetV2 (torchvision's layer structure, batch norm folded, random weights) as one
    int8 payload: QUANTIZE, 52 convolutions, 10 residual ADDs, mean, FC, DEQUANTIZE.

    ``graph.values`` holds the PyTorch chain's value of every int8 tensor, so each op can
    be checked on its own (1 LSB differences compound through a deep random network, so
    the final outputs of the two chains are not within 1 LSB of each other).
    """
    g = QGraph(seed)
    x = g.input_nchw((1, 3, resolution, resolution))
    x = g.conv(x, _make_divisible(32 * width), 3, 2)
    settings = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                (6, 160, 3, 2), (6, 320, 1, 1)]
    for t, c, n, s in settings:
        cout = _make_divisible(c * width)
        for i in range(n):
            stride = s if i == 0 else 1
            cin = x.value.shape[1]
            h = g.conv(x, cin * t, 1) if t != 1 else x
            h = g.conv(h, 0, 3, stride, depthwise=True)
            h = g.conv(h, cout, 1, act=None)
            x = g.add(x, h) if stride == 1 and cin == cout else h
    x = g.conv(x, _make_divisible(1280 * max(1.0, width)), 1)
    g.output_float(g.fc(g.mean_flatten(x), classes))
    return g


def mobilenet_v2_case(width: float = 0.35, resolution: int = 96, classes: int = 1000,
                      seed: int = 0) -> Case:
    return mobilenet_v2_graph(width, resolution, classes, seed).case(f"mobilenet_v2_{width}_{resolution}")


# --------------------------------------------------------------------------- catalogue


def all_cases(seed: int = 0) -> list[Case]:
    """Every single-op corner (and the small multi-op payloads), deterministic in ``seed``."""
    s = seed
    cases = [
        # convolution
        conv_case("conv_1x1", cin=16, h=6, w=7, cout=24, k=(1, 1), seed=s),
        conv_case("conv_3x3_s2_odd", cin=5, h=11, w=9, cout=12, k=(3, 3), stride=(2, 2),
                  pad=(1, 1, 1, 1), act="relu", seed=s + 1),
        conv_case("conv_asym_pad", cin=6, h=8, w=7, cout=10, k=(3, 2), pad=(0, 1, 2, 0), seed=s + 2),
        conv_case("conv_dilation2", cin=4, h=12, w=10, cout=6, k=(3, 3), dilation=(2, 2),
                  pad=(2, 2, 2, 2), seed=s + 3),
        conv_case("conv_groups4_16to16", cin=16, h=7, w=7, cout=16, k=(3, 3), groups=4,
                  pad=(1, 1, 1, 1), act="relu6", seed=s + 4),
        conv_case("conv_ch_not_mult8", cin=13, h=5, w=6, cout=7, k=(3, 3), stride=(1, 2),
                  pad=(1, 0, 1, 1), bias=False, seed=s + 5),
        conv_case("conv_batch2", n=2, cin=3, h=9, w=9, cout=5, k=(5, 5), stride=(2, 2),
                  pad=(2, 2, 2, 2), seed=s + 6),
        conv_case("dw_mult1", cin=24, h=9, w=9, k=(3, 3), depthwise_mult=1,
                  pad=(1, 1, 1, 1), act="relu6", seed=s + 7),
        conv_case("dw_mult2_s2", cin=6, h=10, w=11, k=(3, 3), stride=(2, 2),
                  depthwise_mult=2, pad=(0, 0, 1, 1), seed=s + 8),
        conv_case("dw_dilation2", cin=8, h=9, w=9, k=(3, 3), dilation=(2, 2),
                  depthwise_mult=1, pad=(2, 2, 2, 2), seed=s + 9),
        # the S3 geometries the engine can run in bands of output rows (docs/engine.md,
        # "Depthwise bands"): 3x3, multiplier 1, channels % 16, padding 1 or 0
        conv_case("dw_bands_pad1", n=2, cin=32, h=7, w=6, k=(3, 3), depthwise_mult=1,
                  pad=(1, 1, 1, 1), act="relu6", seed=s + 10),
        conv_case("dw_bands_s2_odd", cin=16, h=9, w=11, k=(3, 3), stride=(2, 2), depthwise_mult=1,
                  pad=(1, 1, 1, 1), seed=s + 11),
        conv_case("dw_bands_nopad_s2", cin=48, h=10, w=7, k=(3, 3), stride=(2, 2),
                  depthwise_mult=1, seed=s + 12),
        # fully connected
        fc_case("fc_2d", in_shape=(3, 40), n_out=10, seed=s),
        fc_case("fc_3d", in_shape=(2, 5, 17), n_out=9, act="relu", seed=s + 1),
        fc_case("fc_no_bias", in_shape=(1, 64), n_out=12, bias=False, seed=s + 2),
        # elementwise
        binary_case("add_same", Opcode.ADD, (1, 4, 5, 8), (1, 4, 5, 8), seed=s),
        binary_case("add_relu", Opcode.ADD, (1, 3, 3, 5), (1, 3, 3, 5), act="relu", seed=s + 1),
        binary_case("add_per_channel", Opcode.ADD, (1, 4, 5, 7), (1, 1, 1, 7), seed=s + 2),
        binary_case("add_scalar_like", Opcode.ADD, (1, 3, 4, 6), (1, 1, 1, 1), seed=s + 3),
        binary_case("add_row_broadcast", Opcode.ADD, (2, 3, 5), (2, 1, 5), seed=s + 4),
        binary_case("add_both_broadcast", Opcode.ADD, (1, 4, 1, 6), (1, 1, 5, 6), seed=s + 5),
        binary_case("mul_same", Opcode.MUL, (1, 4, 5, 8), (1, 4, 5, 8), seed=s),
        binary_case("mul_per_channel", Opcode.MUL, (1, 4, 5, 7), (1, 1, 1, 7), seed=s + 1),
        binary_case("mul_scalar_like", Opcode.MUL, (2, 9), (1, 1), seed=s + 2),
        binary_case("mul_row_broadcast", Opcode.MUL, (3, 4, 5), (3, 4, 1), seed=s + 3),
        # division by a non-negative tensor: linear attention's [.., N, d] / [.., N, 1]
        div_case("div_row_broadcast", (2, 3, 6, 5), (2, 3, 6, 1), zero_rows=2, seed=s),
        div_case("div_same_relu", (1, 4, 5, 8), (1, 4, 5, 8), act="relu", seed=s + 1),
        div_case("div_per_channel", (1, 4, 5, 7), (1, 1, 1, 7), seed=s + 2),
        # a divisor scale 1000x below the numerator's: multipliers >= 1 (left shifts), saturation
        div_case("div_left_shift_saturating", (3, 16), (3, 1), a_scale=2.0, b_scale=0.002, seed=s + 3),
        div_case("div_rank2_by_scalar_tensor", (4, 9), (1, 1), b_scale=3.0, seed=s + 4),
        div_case("div_signed_divisor", (2, 4, 6), (2, 4, 6), zero_rows=1, signed=True, seed=s + 5),
        # pooling
        pool_case("maxpool_3x3_s2_pad1", avg=False, c=5, h=9, w=10, k=(3, 3), stride=(2, 2),
                  pad=(1, 1), seed=s),
        pool_case("maxpool_ceil", avg=False, c=4, h=8, w=7, k=(3, 3), stride=(2, 2),
                  ceil_mode=True, seed=s + 1),
        pool_case("avgpool_valid_pad1", avg=True, c=6, h=7, w=9, k=(3, 3), stride=(2, 2),
                  pad=(1, 1), count_include_pad=False, seed=s),
        pool_case("avgpool_include_pad1", avg=True, c=6, h=7, w=9, k=(3, 3), stride=(2, 2),
                  pad=(1, 1), count_include_pad=True, seed=s + 1),
        pool_case("avgpool_ceil_valid", avg=True, c=3, h=8, w=8, k=(3, 3), stride=(2, 2),
                  pad=(1, 1), ceil_mode=True, count_include_pad=False, seed=s + 2),
        pool_case("avgpool_ceil_include_pad", avg=True, c=3, h=8, w=8, k=(3, 3), stride=(2, 2),
                  pad=(1, 1), ceil_mode=True, count_include_pad=True, seed=s + 3),
        pool_case("avgpool_ceil_no_pad", avg=True, c=4, h=7, w=6, k=(2, 2), stride=(2, 2),
                  ceil_mode=True, seed=s + 4),
        pool_case("avgpool_2x2", avg=True, n=2, c=8, h=6, w=6, k=(2, 2), stride=(2, 2), seed=s + 5),
        # PyTorch's float32 average pools, exactly
        float_pool_case("avgf_2x2", AVG_TORCH_POOL, n=2, c=8, h=6, w=8, k=(2, 2), stride=(2, 2),
                        seed=s),
        float_pool_case("avgf_3x3_valid_pad1_requant", AVG_TORCH_POOL, c=5, h=7, w=9, k=(3, 3),
                        stride=(2, 2), pad=(1, 1), count_include_pad=False, requantize=True,
                        seed=s + 1),
        float_pool_case("avgf_ceil_include_pad_relu", AVG_TORCH_POOL, c=3, h=8, w=8, k=(3, 3),
                        stride=(2, 2), pad=(1, 1), ceil_mode=True, act_min=-3, seed=s + 2),
        float_pool_case("avgf_adaptive_4x3", AVG_TORCH_ADAPTIVE, c=4, h=12, w=9, k=(4, 3),
                        seed=s + 3),
        float_pool_case("avgf_mean_2x3", AVG_TORCH_MEAN, c=6, h=2, w=3, seed=s + 4),
        float_pool_case("avgf_mean_7x9_requant", AVG_TORCH_MEAN, n=2, c=5, h=7, w=9,
                        requantize=True, seed=s + 5),
        float_pool_case("avgf_mean_24x24", AVG_TORCH_MEAN, c=3, h=24, w=24, seed=s + 6),
        # mean
        mean_case("mean_hw", c=10, h=6, w=5, seed=s),
        mean_case("mean_hw_batch2", n=2, c=3, h=7, w=7, seed=s + 1),
        # softmax
        softmax_case("softmax_rows", shape=(4, 10), seed=s),
        softmax_case("softmax_wide", shape=(2, 300), logit_scale=2.0, seed=s + 1),
        softmax_case("softmax_3d", shape=(2, 3, 7), logit_scale=6.0, seed=s + 2),
        # LUT
        *(lut_case(f"lut_{a}", a, seed=s + i) for i, a in enumerate(ACTIVATIONS)),
        # quantize / dequantize
        quantize_case("quantize_nchw_to_nhwc", shape=(1, 3, 5, 4), perm=NCHW_TO_NHWC, seed=s),
        quantize_case("quantize_ties", shape=(2, 64), perm=(0, 1), seed=s, ties=True),
        quantize_case("quantize_rank3_perm", shape=(3, 4, 5), perm=(2, 0, 1), seed=s),
        dequantize_case("dequantize_nhwc_to_nchw", shape=(1, 5, 4, 3), perm=NHWC_TO_NCHW, seed=s),
        dequantize_case("dequantize_flat", shape=(7, 9), perm=(0, 1), seed=s),
        # data movement
        transpose_case("transpose_4d", (2, 3, 4, 5), (3, 1, 0, 2), seed=s),
        transpose_case("transpose_2d", (6, 7), (1, 0), seed=s),
        transpose_case("transpose_f32", (3, 4, 5), (1, 2, 0), dtype=torch.float32, seed=s),
        slice_case("slice_steps", (2, 9, 10, 6), (0, 1, 0, 2), (2, 8, 10, 6), (1, 2, 3, 1), seed=s),
        slice_case("slice_rank2", (8, 12), (3, 1), (8, 12), (2, 5), seed=s),
        concat_case("concat_channels", [(1, 3, 4, 2), (1, 3, 4, 5), (1, 3, 4, 1)], axis=3, seed=s),
        concat_case("concat_axis1", [(2, 3, 4), (2, 1, 4)], axis=1, seed=s),
        pad_case("pad_hw", (1, 4, 5, 3), (0, 1, 2, 0), (0, 2, 0, 0), seed=s),
        pad_case("pad_value", (2, 3), (1, 0), (0, 3), real_value=0.5, seed=s),
        upsample_case("upsample_x2", c=3, h=4, w=5, size=(8, 10), seed=s),
        upsample_case("upsample_odd", c=2, h=5, w=3, size=(7, 8), seed=s),
        # format 2.1: subtraction (ADD, negated multiplier), PReLU, bilinear, transposed conv
        binary_case("sub_same", Opcode.ADD, (1, 4, 5, 8), (1, 4, 5, 8), subtract=True, seed=s + 6),
        binary_case("sub_broadcast_relu", Opcode.ADD, (2, 3, 5), (1, 3, 1), subtract=True, act="relu",
                    seed=s + 7),
        prelu_case("prelu_per_channel", shape=(2, 6, 5, 4), slopes=6, per_slope_scale=True, seed=s),
        prelu_case("prelu_single", shape=(1, 3, 7, 5), slopes=1, seed=s + 1),
        prelu_case("prelu_rank2", shape=(4, 17), slopes=17, seed=s + 2),
        prelu_case("prelu_rank3", shape=(2, 5, 9), slopes=5, per_slope_scale=True, seed=s + 3),
        bilinear_case("bilinear_x2", c=3, h=4, w=5, size=(8, 10), align_corners=False, seed=s),
        bilinear_case("bilinear_x2_corners", c=2, h=5, w=4, size=(10, 8), align_corners=True, seed=s + 1),
        bilinear_case("bilinear_odd", n=2, c=5, h=5, w=3, size=(7, 11), align_corners=False, seed=s + 2),
        bilinear_case("bilinear_down_corners", c=4, h=9, w=8, size=(4, 3), align_corners=True, seed=s + 3),
        transpose_conv_case("tconv_3x3", cin=3, h=6, w=5, cout=6, k=(3, 3), seed=s),
        transpose_conv_case("tconv_s2_p1_op1", cin=4, h=5, w=6, cout=5, k=(3, 3), stride=(2, 2), pad=(1, 1),
                            out_pad=(1, 1), act="relu", seed=s + 1),
        transpose_conv_case("tconv_dilated_groups", n=2, cin=6, h=4, w=5, cout=9, k=(3, 2), stride=(1, 2),
                            dilation=(2, 1), groups=3, out_pad=(1, 1), bias=False, seed=s + 2),
        transpose_conv_case("tconv_depthwise_s3", cin=4, h=3, w=4, cout=4, k=(4, 4), stride=(3, 3), pad=(2, 1),
                            groups=4, seed=s + 3),
        # layer norm
        layer_norm_case("layer_norm_rows", shape=(4, 32), seed=s),
        layer_norm_case("layer_norm_3d_no_affine", shape=(2, 5, 24), affine=False, seed=s + 1),
        layer_norm_case("layer_norm_long_row", shape=(2, 1000), eps=1e-3, seed=s + 2),
        layer_norm_case("layer_norm_constant_rows", shape=(3, 8), eps=1e-5,
                        x_override=np.array([[5] * 8, [-128] * 8, [1, 2, 3, 4, 5, 6, 7, 8]]), seed=s + 3),
        layer_norm_case("layer_norm_zero_eps", shape=(2, 6), eps=0.0,
                        x_override=np.array([[7] * 6, [-3, 9, 0, 0, 4, -1]]), seed=s + 4),
        # activation x activation matmul
        batch_matmul_case("matmul_3d", a_shape=(2, 5, 8), b_shape=(2, 8, 6), seed=s),
        batch_matmul_case("matmul_2d_relu", a_shape=(7, 16), b_shape=(16, 9), act="relu", seed=s + 1),
        batch_matmul_case("matmul_4d_heads", a_shape=(1, 3, 6, 4), b_shape=(1, 3, 4, 6), seed=s + 2),
        batch_matmul_case("matmul_broadcast_a", a_shape=(1, 4, 20), b_shape=(3, 20, 5), seed=s + 3),
        batch_matmul_case("matmul_broadcast_b", a_shape=(3, 4, 20), b_shape=(1, 20, 5), seed=s + 4),
        # b's zero point 0, K % 16 == 0: the S3 FC's s8 MAC path, with a's input offset and
        # (what the quantizer makes for K >= 64) without
        batch_matmul_case("matmul_b_symmetric", a_shape=(2, 6, 32), b_shape=(2, 32, 10),
                          b_symmetric=True, seed=s + 5),
        batch_matmul_case("matmul_symmetric_k64", a_shape=(1, 2, 5, 64), b_shape=(1, 2, 64, 12),
                          b_symmetric=True, a_symmetric=True, seed=s + 6),
        # the operands ESP-NN's ESP32-S3 kernels compute wrongly (docs/engine.md, "ESP32-S3
        # kernels"): the engine must route them to ESP-NN's ANSI kernels on the S3
        binary_case("mul_simd_and_tail", Opcode.MUL, (1, 3, 5, 9), (1, 3, 5, 9), seed=s + 7),
        conv_case("conv_3x3_right_pad_past_left", cin=16, h=6, w=6, cout=8, k=(3, 3),
                  pad=(1, 0, 1, 2), seed=s + 7),
        conv_case("dw_ch8_right_pad_past_left", cin=8, h=6, w=6, k=(3, 3), pad=(1, 0, 1, 2),
                  depthwise_mult=1, seed=s + 7),
        pool_case("avgpool_ch8_ceil_no_pad", avg=True, c=8, h=7, w=6, k=(2, 2), stride=(2, 2),
                  ceil_mode=True, seed=s + 7),
        pool_case("maxpool_ch8_ceil_no_pad", avg=False, c=8, h=7, w=6, k=(2, 2), stride=(2, 2),
                  ceil_mode=True, seed=s + 7),
        # multi-op payloads: in place, aliasing, float boundary
        inplace_add_case("inplace_add", seed=s),
        inplace_lut_reshape_fc_case("inplace_lut_reshape_fc", seed=s),
        float_conv_chain_case("float_conv_chain", seed=s),
    ]
    names = [c.name for c in cases]
    assert len(names) == len(set(names)), "case names must be unique"
    return cases


def case_by_name(name: str, seed: int = 0) -> Case:
    for c in all_cases(seed):
        if c.name == name:
            return c
    raise KeyError(name)


def homed(data: bytes) -> bytes:
    """``data`` re-planned with every delegate input and output homed in its arena (payload
    format 2.4's io homes, as ``lower(..., io_arena=True)`` makes them)."""
    from executorch_espnn.planner import plan_payload

    p = decode(data)
    plan_payload(p, set(p.inputs) | set(p.outputs))
    return encode(p)
