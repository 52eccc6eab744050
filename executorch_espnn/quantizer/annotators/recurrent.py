"""One set of quantization parameters per recurrent state: the ``h`` (and the LSTM's ``c``) of
every time step of a layer the recurrent rewrite unrolled (``rewrites.recurrent``) share the
observer of the first step's.

Each step's operators are annotated by their own annotators (linear, add, mul, the lookup
tables); only the states are tied afterwards.  The recurrence then reads one scale at every
step (the state projection's weights and biases are the same constants at every step) and the
stack of the steps' outputs is a plain copy, with no requantisation.
"""

from __future__ import annotations

from torch.fx import GraphModule, Node
from torchao.quantization.pt2e.quantizer import SharedQuantizationSpec
from torchao.quantization.pt2e.quantizer.quantizer import Q_ANNOTATION_KEY

from ..context import output_is_quantized
from ..rewrites import STATE_META


def tie_recurrent_states(model: GraphModule) -> None:
    first: dict[tuple[str, str], Node] = {}
    for node in model.graph.nodes:
        key = node.meta.get(STATE_META)
        if key is None or not output_is_quantized(node):
            continue
        layer, what, _step = key
        owner = first.setdefault((layer, what), node)
        if owner is not node:
            node.meta[Q_ANNOTATION_KEY].output_qspec = SharedQuantizationSpec(owner)
