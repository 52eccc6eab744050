"""Symmetric (zero point 0) operands for an activation x activation matmul, where ESP-NN's S3
s8 MAC path then runs faster and the symmetric range is sound.

Why: BATCH_MATMUL makes one ``esp_nn_fully_connected_s8`` call per row of ``a``, with ``b`` as
the filter, minus b's zero point as the filter offset and minus a's as the input offset.
ESP-NN 1.2.3's S3 kernel takes its s8 MAC path only with a filter offset of 0, K >= 16 and
16-byte aligned rows, else its s16 kernel.  But its s8 path sums the whole filter in scalar C
at every call when the input offset is not 0 (``corrections``), which BATCH_MATMUL pays once per
row.  Measured on the emulated S3 (guest instructions, 2 batches; benchmarks/s3_kernels.py and
docs/operators.md): ``[64, 32] @ [32, 64]`` 825 k affine (s16), 2,479 k with b's zero point 0
alone, 873 k with both 0; ``[16, 64] @ [64, 64]`` 289 k / 1,029 k / 235 k; ``[8, 128] @ [128, 32]``
114 k / 463 k / 68 k.  So a symmetric ``b`` alone makes the matmul 3-4x slower; both operands
symmetric pay from K = 64 on (1.2x there, 1.7x at 128) and lose below (0.95x at 32).  Hence both
operands or neither, and only for K >= 64 with aligned rows.

Where it is unsound, neither: the symmetric range of a value covers ``max(|min|, |max|)`` on
both sides, so a roughly zero-centred one (attention's q and k: projections of layer-normed
tokens) loses almost nothing, but one known to be non-negative (a ReLU/ReLU6/clamp at 0,
sigmoid, softmax, and data movement or averaging of one) would lose a whole bit, and fixed
(softmax's ``p`` of ``p @ v``) or derived qparams cannot change.  In practice that is ``q @ k^T``
with a head dim >= 64; ``p @ v`` and EfficientViT's ReLU linear attention keep the s16 path.

How: PT2E shares one observer among every edge and output linked by ``SharedQuantizationSpec``
(an operand's reshape/transpose/split pieces and their producer: q, k and v of one projection),
so an operand's quantization is its class's: its one concrete spec (its *root*: the producer's
output spec, or an input edge's when the producer is not quantized) becomes the symmetric
variant of itself (same observer, ``per_tensor_symmetric``), and every reader of the class
reads the symmetric parameters, on PT2E's side and the delegate's alike (fidelity holds by
construction).  That is done only where every operator reading the class's values is a matmul
that reads it as ``a`` or is made symmetric itself (attention's q and k: signed projections); a
class a ReLU, a convolution or a residual add reads keeps its affine parameters, and so does one
a matmul with an affine ``a`` reads as ``b`` (v of a packed q/k/v projection, read by ``p @ v``:
symmetric, it would put ``p @ v`` on the slower s8 path with an input offset).
The alternative, a second, symmetric observer on the matmul's own input edge, costs a
requantisation (a LUT pass over the operand and its buffer) and, measured, made torch's
GroupBasedPartitioner leave q/k-from-one-projection graphs in two delegates: not done.
"""

from __future__ import annotations

import dataclasses

import torch
from torch.fx import GraphModule, Node
from torchao.quantization.pt2e.quantizer import (
    QuantizationAnnotation,
    QuantizationSpec,
    QuantizationSpecBase,
    SharedQuantizationSpec,
)
from torchao.quantization.pt2e.quantizer.quantizer import Q_ANNOTATION_KEY

from .patterns import CLAMP_TARGETS, aten, clamp_bounds
from .shared import SharedInputAnnotator, SplitAnnotator

EdgeOrNode = Node | tuple[Node, Node]

MATMUL_TARGETS = frozenset({aten.matmul.default, aten.bmm.default, aten.mm.default})
#: outputs that are never negative whatever their input
_NON_NEGATIVE = frozenset({
    aten.sigmoid.default, aten.sigmoid_.default,
    aten.hardsigmoid.default, aten.hardsigmoid_.default,
    aten.softmax.int, aten._softmax.default,
    aten.abs.default,
})
#: outputs that are non-negative when their first input is: copies, pools and means of it
_KEEPS_SIGN = SharedInputAnnotator.targets | frozenset({aten.mean.dim, aten.mean.default})


def _spec(e: EdgeOrNode) -> QuantizationSpecBase | None:
    if isinstance(e, Node):
        ann = e.meta.get(Q_ANNOTATION_KEY)
        return ann.output_qspec if isinstance(ann, QuantizationAnnotation) else None
    x, user = e
    ann = user.meta.get(Q_ANNOTATION_KEY)
    return ann.input_qspec_map.get(x) if isinstance(ann, QuantizationAnnotation) else None


def class_root(e: EdgeOrNode) -> tuple[EdgeOrNode, QuantizationSpecBase | None]:
    """The edge or node whose spec the class of ``e`` observes with, and that spec."""
    seen: set[int] = set()
    spec = _spec(e)
    while isinstance(spec, SharedQuantizationSpec) and id(spec) not in seen:
        seen.add(id(spec))
        e = spec.edge_or_node
        spec = _spec(e)
    return e, spec


def is_non_negative(node: Node, depth: int = 0) -> bool:
    """Whether ``node``'s value is known to be >= 0 from the operators that make it."""
    if node.op != "call_function" or depth > 64:
        return False
    if node.target in _NON_NEGATIVE:
        return True
    if node.target in CLAMP_TARGETS:
        lo, _ = clamp_bounds(node)
        if lo is not None and lo >= 0:
            return True
    if node.target in _KEEPS_SIGN and node.args and isinstance(node.args[0], Node):
        return is_non_negative(node.args[0], depth + 1)
    return False


#: ESP-NN 1.2.3's S3 fully-connected kernel takes its s8 MAC path for rows of at least 16 bytes,
#: each 16-byte aligned, with filter offset 0 (esp_nn_fully_connected_s8_esp32s3); measured on
#: the emulated S3 with input offset 0 too, it beats the s16 path from 64-byte rows on (the
#: module's docstring)
S8_FASTER_ROW = 64
S8_ROW_ALIGN = 16


def s8_path_pays(a: Node, matmul: Node) -> bool:
    """Whether ``matmul``'s rows (one FC call per row of ``a``) would run faster on the S3 s8
    path than on the s16 one: the reduction is at least S8_FASTER_ROW long and every row starts
    16-byte aligned (a's rows are contiguous)."""
    a_val, out_val = a.meta.get("val"), matmul.meta.get("val")
    if not isinstance(a_val, torch.Tensor) or not isinstance(out_val, torch.Tensor) or a_val.dim() < 2:
        return False
    try:
        k, n, rows = int(a_val.shape[-1]), int(out_val.shape[-1]), int(out_val.numel())
    except (TypeError, ValueError):  # symbolic sizes: unknown, keep the affine spec
        return False
    rows //= max(n, 1)
    return k >= S8_FASTER_ROW and (k % S8_ROW_ALIGN == 0 or rows == 1)


def _set_spec(e: EdgeOrNode, spec: QuantizationSpec) -> None:
    if isinstance(e, Node):
        e.meta[Q_ANNOTATION_KEY].output_qspec = spec
    else:
        x, user = e
        user.meta[Q_ANNOTATION_KEY].input_qspec_map[x] = spec


def _symmetric(spec: QuantizationSpecBase | None, producer: Node) -> QuantizationSpec | None:
    """The symmetric variant of a class's spec, None where it is not sound."""
    if not isinstance(spec, QuantizationSpec) or spec.dtype != torch.int8:
        return None  # fixed (softmax) or derived qparams, or nothing observed
    if spec.qscheme != torch.per_tensor_affine and spec.qscheme != torch.per_tensor_symmetric:
        return None
    if is_non_negative(producer):
        return None  # symmetric would leave half the codes unused: keep the bit
    return dataclasses.replace(spec, qscheme=torch.per_tensor_symmetric)


def _operand_edges(model: GraphModule) -> list[list[tuple[Node, Node]]]:
    """[(a, matmul), (b, matmul)] of each annotated matmul whose rows the s8 path would make
    faster."""
    out = []
    for node in model.graph.nodes:
        if node.op != "call_function" or node.target not in MATMUL_TARGETS or len(node.args) < 2:
            continue
        a, b = node.args[0], node.args[1]
        if isinstance(a, Node) and isinstance(b, Node) and _spec((a, node)) is not None \
                and _spec((b, node)) is not None and s8_path_pays(a, node):
            out.append([(a, node), (b, node)])
    return out


def _value_readers(model: GraphModule) -> dict[EdgeOrNode, list[tuple[Node, Node]]]:
    """Per class root, the input edges that read the class's values: every annotated input edge
    in the class except those of ops whose output is in the class too (copies of it)."""
    readers: dict[EdgeOrNode, list[tuple[Node, Node]]] = {}
    for user in model.graph.nodes:
        ann = user.meta.get(Q_ANNOTATION_KEY)
        if not isinstance(ann, QuantizationAnnotation):
            continue
        if user.target in SplitAnnotator.targets:
            continue  # its pieces (getitems) carry its input's class: copies of it
        out_root = class_root(user)[0] if ann.output_qspec is not None else None
        for x in ann.input_qspec_map:
            root = class_root((x, user))[0]
            if root != out_root:
                readers.setdefault(root, []).append((x, user))
    return readers


def symmetric_matmul_operands(model: GraphModule) -> None:
    """After annotation: quantize both operands of each matmul the s8 path makes faster
    symmetrically (see the module's docstring), each operand's whole class, where both can be
    and every other reader of either class is a matmul that reads it as ``a`` (its input
    offset) or is itself made symmetric: a class read as ``b`` by a matmul whose ``a`` keeps
    its zero point would move that matmul onto the slower s8 path with an input offset."""
    readers = _value_readers(model)
    plans: dict[Node, list[tuple[EdgeOrNode, QuantizationSpec]]] = {}
    for edges in _operand_edges(model):
        todo = []
        for edge in edges:
            root, spec = class_root(edge)
            sym = _symmetric(spec, root if isinstance(root, Node) else root[0])
            if sym is None:
                break
            todo.append((root, sym))
        else:
            plans[edges[0][1]] = todo
    changed = True
    while changed:  # drop plans whose classes have a reader that forbids them, to a fixed point
        changed = False
        for mm, todo in list(plans.items()):
            if not all(_reader_allows(x, user, plans) for root, _ in todo for x, user in readers.get(root, [])):
                del plans[mm]
                changed = True
    for todo in plans.values():
        for root, sym in todo:
            _set_spec(root, sym)


def _reader_allows(x: Node, user: Node, plans: dict[Node, list[tuple[EdgeOrNode, QuantizationSpec]]]) -> bool:
    if user.target not in MATMUL_TARGETS:
        return False  # a ReLU, a convolution, a residual add: keep the affine range for it
    return user in plans or len(user.args) < 2 or user.args[1] is not x
