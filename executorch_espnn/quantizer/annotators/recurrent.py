"""One set of quantization parameters per recurrent state: ``h`` (and the LSTM's ``c``) of every
step of a layer the recurrent rewrite unrolled (``rewrites.recurrent`` tags every quantity of a
step with its role) share the observer of the first step's; the other quantities keep one
observer per step (fidelity, see ``TIED_ROLES``).

Each step's operators are annotated by their own annotators (linear, add, mul, the lookup
tables); only the states are tied afterwards.  The recurrence then reads one scale at every
step (the state projection's weights are the same constants at every step) and the stack of the
steps' outputs is a plain copy, with no requantisation.
"""

from __future__ import annotations

from torch.fx import GraphModule, Node
from torchao.quantization.pt2e.quantizer import SharedQuantizationSpec
from torchao.quantization.pt2e.quantizer.quantizer import Q_ANNOTATION_KEY

from ..context import output_is_quantized
from ..rewrites import ROLE_META

#: the roles tied across steps: the states.  Tying every role (projections, gates, ...) too made
#: the steps share their constants (the LSTM digits model's 23.9 KB of weights became 9.4 KB) but
#: cost fidelity: 99.78 % of its logits within 1 LSB of convert_pt2e, worst 5 LSB, against 100 %
#: exact with per-step observers (docs/operators.md, "Recurrent layers")
TIED_ROLES = frozenset({"h", "c"})


def tie_recurrent_steps(model: GraphModule) -> None:
    first: dict[tuple[str, str], Node] = {}
    for node in model.graph.nodes:
        key = node.meta.get(ROLE_META)
        if key is None or not output_is_quantized(node):
            continue
        layer, role, _step = key
        if role not in TIED_ROLES:
            continue
        owner = first.setdefault((layer, role), node)
        if owner is not node:
            node.meta[Q_ANNOTATION_KEY].output_qspec = SharedQuantizationSpec(owner)
