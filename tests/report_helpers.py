"""Hand-built delegate payloads for report tests: a small NHWC network written with the
payload writer and planned with the arena planner, whose figures the tests recompute."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from executorch_espnn.payload import (
    ConstantPool,
    DType,
    Opcode,
    OpRec,
    Payload,
    Storage,
    TensorRec,
    encode,
)
from executorch_espnn.payload.format import TENSOR_FLAG_NHWC, Target
from executorch_espnn.planner import PlanBuffer, plan_arena


@dataclass
class NetBuilder:
    """Appends ops to a payload; arena offsets are assigned by ``plan_arena`` in ``build``."""

    pool: ConstantPool = field(default_factory=ConstantPool)
    tensors: list[TensorRec] = field(default_factory=list)
    ops: list[OpRec] = field(default_factory=list)
    inputs: list[int] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)
    scratch: dict[int, int] = field(default_factory=dict)  # op index -> bytes
    macs: list[int] = field(default_factory=list)  # independently counted, per conv/fc op

    def tensor(self, t: TensorRec) -> int:
        self.tensors.append(t)
        return len(self.tensors) - 1

    def const(self, arr: np.ndarray, dtype: DType) -> int:
        off = self.pool.add(np.ascontiguousarray(arr).tobytes())
        return self.tensor(TensorRec(dtype, tuple(arr.shape), Storage.CONST, off))

    def act(self, dims: tuple[int, ...], nhwc: bool = True) -> int:
        return self.tensor(TensorRec(DType.INT8, dims, Storage.ARENA, 0, 0.05, -3,
                                     TENSOR_FLAG_NHWC if nhwc and len(dims) == 4 else 0))

    def quantize_input(self, nchw: tuple[int, int, int, int]) -> int:
        x = self.tensor(TensorRec(DType.FLOAT32, nchw, Storage.INPUT, len(self.inputs)))
        self.inputs.append(x)
        n, c, h, w = nchw
        y = self.act((n, h, w, c))
        self.ops.append(OpRec(Opcode.QUANTIZE, (x,), y, {"perm0": 0, "perm1": 2, "perm2": 3, "perm3": 1}))
        return y

    def _requant(self, cout: int) -> tuple[int, int]:
        mult = self.const(np.full(cout, 1 << 30, np.int32), DType.INT32)
        shift = self.const(np.full(cout, -8, np.int32), DType.INT32)
        return mult, shift

    def conv(self, x: int, cout: int, k: int, stride: int = 1, pad: int = 0, groups: int = 1,
             depthwise: bool = False, dilation: int = 1, scratch: int = 0) -> int:
        n, h, w, cin = self.tensors[x].dims
        span = dilation * (k - 1) + 1
        oh = (h + 2 * pad - span) // stride + 1
        ow = (w + 2 * pad - span) // stride + 1
        if depthwise:
            filt = self.const(np.ones((1, k, k, cout), np.int8), DType.INT8)
            self.macs.append(n * oh * ow * cout * k * k)
        else:
            filt = self.const(np.ones((cout, k, k, cin // groups), np.int8), DType.INT8)
            self.macs.append(n * oh * ow * cout * k * k * (cin // groups))
        bias = self.const(np.zeros(cout, np.int32), DType.INT32)
        mult, shift = self._requant(cout)
        y = self.act((n, oh, ow, cout))
        params = {
            "stride_h": stride, "stride_w": stride, "pad_top": pad, "pad_left": pad,
            "pad_bottom": pad, "pad_right": pad, "dilation_h": dilation, "dilation_w": dilation,
            "in_offset": 3, "out_offset": -3, "act_min": -128, "act_max": 127,
        }
        if depthwise:
            params["ch_mult"] = cout // cin
        else:
            params["groups"] = groups
        code = Opcode.DEPTHWISE_CONV2D if depthwise else Opcode.CONV2D
        if scratch:
            self.scratch[len(self.ops)] = scratch
        self.ops.append(OpRec(code, (x, filt, bias, mult, shift), y, params))
        return y

    def fc(self, x: int, out: int) -> int:
        k = self.tensors[x].dims[-1]
        rows = self.tensors[x].numel // k
        filt = self.const(np.ones((out, k), np.int8), DType.INT8)
        mult, shift = self._requant(out)
        y = self.act((*self.tensors[x].dims[:-1], out), nhwc=False)
        self.macs.append(rows * out * k)
        self.ops.append(OpRec(Opcode.FULLY_CONNECTED, (x, filt, None, mult, shift), y,
                              {"in_offset": 3, "out_offset": -3, "act_min": -128, "act_max": 127}))
        return y

    def reshape(self, x: int, dims: tuple[int, ...]) -> int:
        y = self.act(dims, nhwc=False)
        self.ops.append(OpRec(Opcode.RESHAPE, (x,), y))
        return y

    def add(self, a: int, b: int) -> int:
        y = self.act(self.tensors[a].dims)
        self.ops.append(OpRec(Opcode.ADD, (a, b), y, {
            "a_offset": 3, "b_offset": 3, "a_mult": 1 << 30, "a_shift": -1, "b_mult": 1 << 30,
            "b_shift": -1, "left_shift": 20, "out_mult": 1 << 30, "out_shift": -19,
            "out_offset": -3, "act_min": -128, "act_max": 127}))
        return y

    def dequantize_output(self, x: int) -> int:
        t = self.tensors[x]
        y = self.tensor(TensorRec(DType.FLOAT32, t.dims, Storage.OUTPUT, len(self.outputs)))
        self.outputs.append(y)
        self.ops.append(OpRec(Opcode.DEQUANTIZE, (x,), y, {"perm0": 0, "perm1": 1, "perm2": 2, "perm3": 3}))
        return y

    def buffers(self, inplace: bool = True) -> list[PlanBuffer]:
        first: dict[int, int] = {}
        last: dict[int, int] = {}
        inplace_of: dict[int, int] = {}
        for i, op in enumerate(self.ops):
            for t in op.inputs:
                if t is not None and self.tensors[t].storage == Storage.ARENA:
                    last[t] = i
            first[op.output] = i
            last.setdefault(op.output, i)
        for i, op in enumerate(self.ops):
            if inplace and op.opcode == Opcode.RESHAPE and op.inputs[0] is not None and last[op.inputs[0]] == i:
                inplace_of[op.output] = op.inputs[0]
        bufs = [PlanBuffer(t, self.tensors[t].nbytes, f, last[t], inplace_of.get(t))
                for t, f in first.items() if self.tensors[t].storage == Storage.ARENA]
        bufs += [PlanBuffer(-1 - i, n, i, i) for i, n in self.scratch.items()]
        return bufs

    def build(self, target: Target = Target.ESP32S3) -> tuple[bytes, int]:
        """The encoded payload and the lower bound of its arena."""
        plan = plan_arena(self.buffers())
        for tid, off in plan.offsets.items():
            if tid >= 0:
                self.tensors[tid].offset = off
        for i, op in enumerate(self.ops):
            if i in self.scratch:
                op.scratch_offset = plan.offsets[-1 - i]
                op.scratch_size = self.scratch[i]
        p = Payload(self.tensors, self.ops, self.inputs, self.outputs, self.pool.bytes(),
                    plan.size, target, (0, 1, 0))
        return encode(p), plan.lower_bound


def small_net() -> NetBuilder:
    """quantize -> conv 3x3 (3->16, s2) -> conv 1x1 (16->8) -> depthwise 3x3 (8, pad 1)
    -> conv 1x1 (8->12) -> depthwise (12) -> add -> reshape -> fc (k=12*4*4) -> dequantize"""
    b = NetBuilder()
    x = b.quantize_input((1, 3, 10, 10))
    x = b.conv(x, 16, 3, stride=2, scratch=200)  # 4x4x16
    x = b.conv(x, 8, 1)  # 1x1, cin 16
    x = b.conv(x, 8, 3, pad=1, depthwise=True, scratch=96)  # cin 8: fast
    y = b.conv(x, 12, 1)  # 1x1, cin 8: fast
    y = b.conv(y, 12, 3, pad=1, depthwise=True)  # 12 channels: not fast
    y = b.add(y, y)
    z = b.reshape(y, (1, 4 * 4 * 12))
    z = b.fc(z, 10)
    b.dequantize_output(z)
    return b
