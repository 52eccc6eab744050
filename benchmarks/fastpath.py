"""ESP32-S3 fast-path coverage, classified here from the decoded payloads and checked against
the lowering report's per-layer table.

The conditions (DESIGN.md, "ESP-NN, as the engine must call it"):

* fully connected: ``row_len >= 16`` and a 16-byte aligned input (every row: with more than
  one row, ``row_len % 16 == 0`` too);
* 1x1 convolution (stride 1, no padding): input channels % 8 == 0;
* other dense convolutions (groups 1, dilation 1): ESP-NN's SIMD kernels (im2col or the
  aligned-filter kernel) take every shape;
* depthwise: ``ch_mult == 1`` and channels % 8 == 0 (16 is best);
* grouped or dilated convolutions never reach ESP-NN: the engine's generic kernel, as do
  depthwise convolutions whose padded input spans more than 32767 rows or columns (ESP-NN
  indexes it with int16_t; espnn_component/engine/ops/depthwise_conv2d.c);
* PReLU, bilinear upsampling and transposed convolution have no ESP-NN kernel: the engine's
  own C kernels, never fast (transposed conv counts every input element times its group's
  filter taps; the other two count no MACs).

Delegate inputs and constants count as aligned (ExecuTorch plans buffers and the payload
places constants at multiples of 16); arena tensors by their planned offset.
"""

from __future__ import annotations

from dataclasses import dataclass

from executorch_espnn.payload import Opcode, Payload, Storage


@dataclass(frozen=True)
class Layer:
    partition: int
    op: int
    kind: str  # "conv", "depthwise", "fc", "tconv", "prelu", "bilinear"
    macs: int
    fast: bool


def classify(partition: int, p: Payload) -> list[Layer]:
    out: list[Layer] = []
    for i, op in enumerate(p.ops):
        if op.opcode in (Opcode.PRELU, Opcode.UPSAMPLE_BILINEAR):
            out.append(Layer(partition, i, "prelu" if op.opcode == Opcode.PRELU else "bilinear", 0, False))
            continue
        if op.opcode == Opcode.TRANSPOSE_CONV2D:
            x_id, w_id = op.inputs[0], op.inputs[1]
            assert x_id is not None and w_id is not None
            n, h, w_, cin = p.tensors[x_id].dims
            cout, kh, kw = p.tensors[w_id].dims[:3]
            out.append(Layer(partition, i, "tconv", n * h * w_ * cin * kh * kw * (cout // op.params["groups"]), False))
            continue
        if op.opcode not in (Opcode.CONV2D, Opcode.DEPTHWISE_CONV2D, Opcode.FULLY_CONNECTED):
            continue
        x_id, w_id = op.inputs[0], op.inputs[1]
        assert x_id is not None and w_id is not None
        x, w, y = p.tensors[x_id], p.tensors[w_id], p.tensors[op.output]
        pr = op.params
        if op.opcode == Opcode.FULLY_CONNECTED:
            n_out, k = w.dims[0], w.dims[1]
            rows = x.numel // k
            aligned = x.storage != Storage.ARENA or x.offset % 16 == 0
            fast = k >= 16 and aligned and (rows == 1 or k % 16 == 0)
            out.append(Layer(partition, i, "fc", rows * n_out * k, fast))
            continue
        n, oh, ow, cout = y.dims
        kh, kw = w.dims[1], w.dims[2]
        cin = x.dims[3]
        dilated = pr["dilation_h"] != 1 or pr["dilation_w"] != 1
        if op.opcode == Opcode.DEPTHWISE_CONV2D:
            macs = n * oh * ow * cout * kh * kw
            span_h = x.dims[1] + pr["pad_top"] + pr["pad_bottom"]
            span_w = x.dims[2] + pr["pad_left"] + pr["pad_right"]
            fast = (not dilated and pr["ch_mult"] == 1 and cin % 8 == 0
                    and max(span_h, span_w) <= 32767)
            out.append(Layer(partition, i, "depthwise", macs, fast))
            continue
        groups = pr["groups"]
        macs = n * oh * ow * cout * kh * kw * (cin // groups)
        pointwise = (kh == kw == 1 and pr["stride_h"] == pr["stride_w"] == 1
                     and not any(pr[k] for k in ("pad_top", "pad_left", "pad_bottom", "pad_right")))
        if groups > 1 or dilated:
            fast = False
        elif pointwise:
            fast = cin % 8 == 0
        else:
            fast = True
        out.append(Layer(partition, i, "conv", macs, fast))
    return out


def mac_share(layers: list[Layer]) -> float | None:
    total = sum(layer.macs for layer in layers)
    return None if total == 0 else sum(layer.macs for layer in layers if layer.fast) / total
