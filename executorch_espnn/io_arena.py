"""The program's inputs and outputs in the delegate arena (``lower(..., io_arena=True)``).

By default ExecuTorch plans memory for a program's inputs and outputs apart from everything a
delegate uses, so an int8 camera frame stays allocated for the whole run although the first
convolution consumes it, and the output map sits next to an arena that was free when the last
op wrote it.  TFLite Micro keeps input, output and activations in one arena; this does the same
for the common program shape:

- every program input is read only by the FIRST delegate call (nothing runs on the CPU with it,
  and no earlier delegate can overwrite its bytes in the shared arena before it is read), and
- every program output is written by the LAST delegate call (no later delegate reuses its bytes).

For each direction that qualifies, the delegate payloads get io homes (payload format 2.4): the
delegate input/output tensor is planned in the arena like an activation, live from the start to
its last reader (an input) or from its writer to the end (an output), and ExecuTorch is told not
to plan memory for it (``MemoryPlanningPass(alloc_graph_input=False, alloc_graph_output=False)``).
The runtime binds the tensors there (``EspnnModel``: ``input()``/``output()`` are the arena
regions); a caller that binds its own buffers (``host.run``, ``Method::set_input``) still gets
the same results, the homes then unused.  Any other program keeps ExecuTorch's layout.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .payload.format import NO_HOME
from .payload.model import Payload
from .payload.reader import decode
from .payload.writer import encode
from .planner import plan_payload
from .pte import BACKEND_ID, ProgramInfo

if TYPE_CHECKING:
    from executorch.exir import EdgeProgramManager
    from torch.fx import GraphModule, Node

CALL_DELEGATE = "executorch_call_delegate"


@dataclass(frozen=True)
class IoArena:
    """What ``place`` did: whether the inputs and the outputs live in the arena."""

    inputs: bool
    outputs: bool

    def memory_planning(self) -> Any:
        """ExecuTorch's memory-planning pass that leaves the homed I/O unplanned."""
        from executorch.exir.passes import MemoryPlanningPass

        return MemoryPlanningPass(alloc_graph_input=not self.inputs, alloc_graph_output=not self.outputs)


def _delegate_calls(gm: GraphModule) -> list[Node]:
    return [n for n in gm.graph.nodes if n.op == "call_function" and getattr(n.target, "__name__", "") == CALL_DELEGATE]


def _output_source(n: object) -> tuple[Node, int] | None:
    """(delegate call, output index) when ``n`` is one output of a delegate call."""
    import operator

    node = n
    if getattr(node, "op", None) != "call_function" or getattr(node, "target", None) is not operator.getitem:
        return None
    call, idx = node.args[0], node.args[1]  # type: ignore[attr-defined]
    if getattr(call.target, "__name__", "") != CALL_DELEGATE or not isinstance(idx, int):
        return None
    return call, idx


def _rehome(gm: GraphModule, call: Node, inputs: set[int], outputs: set[int]) -> None:
    """Re-plan the payload of delegate ``call`` with homes for its ``inputs``/``outputs``
    (argument positions)."""
    lowered = getattr(gm, call.args[0].target)  # type: ignore[union-attr,arg-type]
    p = decode(lowered.processed_bytes)
    homed = {p.inputs[k] for k in inputs} | {p.outputs[k] for k in outputs}
    plan_payload(p, homed)
    lowered._processed_bytes = encode(p)


def place(edge: EdgeProgramManager) -> IoArena:
    """Give the delegate payloads io homes for the program inputs and outputs that qualify (see
    the module doc) and return which directions did, for ``IoArena.memory_planning``."""
    ep = edge.exported_program()
    gm = ep.graph_module
    calls = _delegate_calls(gm)
    if not calls:
        return IoArena(False, False)
    first, last = calls[0], calls[-1]
    user_inputs = set(ep.graph_signature.user_inputs)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder" and n.name in user_inputs]
    in_args: set[int] = set()
    inputs_ok = bool(placeholders)
    for ph in placeholders:
        positions = [k for k, a in enumerate(first.args[1:]) if a is ph]
        inputs_ok = inputs_ok and len(ph.users) == 1 and first in ph.users and len(positions) == 1
        in_args.update(positions)
    out_node = next(n for n in gm.graph.nodes if n.op == "output")
    results = list(out_node.args[0]) if isinstance(out_node.args[0], (list, tuple)) else [out_node.args[0]]
    out_args: set[int] = set()
    outputs_ok = bool(results) and len(set(map(id, results))) == len(results)
    for r in results:
        src = _output_source(r)
        outputs_ok = outputs_ok and src is not None and src[0] is last and len(r.users) == 1
        if src is not None:
            out_args.add(src[1])
    io = IoArena(inputs_ok, outputs_ok)
    # (call -> its homed input and output positions: one re-plan per call, also when the first
    # call is the last)
    homes: dict[Node, tuple[set[int], set[int]]] = {}
    if io.inputs:
        homes.setdefault(first, (set(), set()))[0].update(in_args)
    if io.outputs:
        homes.setdefault(last, (set(), set()))[1].update(out_args)
    for call, (ins, outs) in homes.items():
        _rehome(gm, call, ins, outs)
    return io


def program_homes(info: ProgramInfo) -> tuple[list[int | None], list[int | None]]:
    """Where each program input and output lives in the delegate arena (its payload's io home,
    an offset from the arena's base, which every delegate of the program shares), or None for
    a tensor ExecuTorch plans (or that no delegate argument homes): what the generated header
    tells ``EspnnModel``."""
    decoded: dict[int, Payload] = {}

    def home_of(value: int, output: bool) -> int | None:
        if value in info.planned_values:
            return None
        for call in info.delegate_calls:
            if call.backend_id != BACKEND_ID:
                continue
            if call.delegate_index not in decoded:
                decoded[call.delegate_index] = decode(info.payloads[call.delegate_index])
            p = decoded[call.delegate_index]
            n_in = len(p.inputs)
            args = call.args[n_in:] if output else call.args[:n_in]
            if value in args and p.io_homes is not None:
                home = p.io_homes[(n_in if output else 0) + args.index(value)]
                return None if home == NO_HOME else home
        return None

    return ([home_of(v, False) for v in info.input_values], [home_of(v, True) for v in info.output_values])
