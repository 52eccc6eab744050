"""One set of quantization parameters per quantity of a recurrent step: each role of a step
of a layer the recurrent rewrite unrolled (``rewrites.recurrent``: a gate's projections,
pre-activation and activation, ``c``, ``h``, ...) shares the observer of its first step's.

Each step's operators are annotated by their own annotators (linear, add, mul, the lookup
tables); only the steps are tied afterwards.  The recurrence then reads one scale at every step,
every step uses the same constants (weights, biases, requantisation multipliers, tables: one
copy in the payload) and the stack of the steps' outputs is a plain copy, with no requantisation.
"""

from __future__ import annotations

from torch.fx import GraphModule, Node
from torchao.quantization.pt2e.quantizer import SharedQuantizationSpec
from torchao.quantization.pt2e.quantizer.quantizer import Q_ANNOTATION_KEY

from ..context import output_is_quantized
from ..rewrites import ROLE_META


def tie_recurrent_steps(model: GraphModule) -> None:
    first: dict[tuple[str, str], Node] = {}
    for node in model.graph.nodes:
        key = node.meta.get(ROLE_META)
        if key is None or not output_is_quantized(node):
            continue
        layer, role, _step = key
        owner = first.setdefault((layer, role), node)
        if owner is not node:
            node.meta[Q_ANNOTATION_KEY].output_qspec = SharedQuantizationSpec(owner)
