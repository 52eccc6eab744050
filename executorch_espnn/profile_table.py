"""The layer table of a profiling build (``lower(..., profile=True)``): one row per delegated op
in execution order (partition, op index, op family, the report's layer name and source location)
and, per stretch between delegate calls, the CPU operators ExecuTorch runs there.

The firmware's ``EspnnModel::profile()`` prints its measured times against these rows (the
generated model header carries the table only in a profiling build), and
``executorch-espnn profile LOG --report ...`` checks a saved log against the same rows, which
report.json keeps under ``profile``.

A payload carries no node names, so each partition's payload is rebuilt from its lowered module
(``backend.build_partition``, the code ``preprocess`` ran; the bytes are checked equal) for the
graph value each op writes, as the accuracy report names its layers.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torch.export import ExportedProgram
    from torch.fx import Node

    from .decisions import OpDecision

# the line format EspnnModel::profile() prints (docs/runtime.md); bumped when it changes
LINE_FORMAT = 1


def ascii_text(text: str) -> str:
    """What a profile line may carry: printable ASCII without quotes (names and locations are
    printed inside double quotes, and a log line must stay valid UTF-8 on every console)."""
    return "".join(c if " " <= c <= "~" and c not in "\"\\" else "?" for c in text)


@dataclass(frozen=True)
class ProfileLayer:
    index: int  # in execution order over all partitions
    partition: int
    op: int  # op index inside the partition's payload
    family: str  # payload opcode, "CONV2D"
    name: str  # the graph value the op writes (the report's layer name), "" when it has none
    location: str  # "model.py:42 in forward", "" when unknown


@dataclass(frozen=True)
class ProfileTable:
    layers: tuple[ProfileLayer, ...]
    # the CPU operators of each stretch: before partition 0, between partitions k-1 and k, and
    # after the last partition (n_partitions + 1 entries, each a tuple of edge operator names)
    cpu_stretches: tuple[tuple[str, ...], ...]

    @property
    def n_partitions(self) -> int:
        return len(self.cpu_stretches) - 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "line_format": LINE_FORMAT,
            "layers": [{"index": ly.index, "partition": ly.partition, "op": ly.op, "family": ly.family,
                        "name": ly.name, "location": ly.location} for ly in self.layers],
            "cpu_stretches": [list(s) for s in self.cpu_stretches],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ProfileTable:
        layers = tuple(ProfileLayer(int(x["index"]), int(x["partition"]), int(x["op"]), str(x["family"]),
                                    str(x["name"]), str(x["location"])) for x in d["layers"])
        return cls(layers, tuple(tuple(str(o) for o in s) for s in d["cpu_stretches"]))


def cpu_stretches(decisions: Sequence[OpDecision], n_partitions: int) -> tuple[tuple[str, ...], ...]:
    """The CPU operators in graph order, grouped by the delegate call they precede (the last
    group: after the last delegate).  ExecuTorch runs the instructions in graph order."""
    groups: list[list[str]] = [[] for _ in range(n_partitions + 1)]
    seen: set[int] = set()
    for d in decisions:
        if d.delegated and d.partition is not None:
            seen.add(d.partition)
        elif not d.delegated:
            groups[min(len(seen), n_partitions)].append(ascii_text(d.op))
    return tuple(tuple(g) for g in groups)


def _producer(node: Node) -> Node:
    """The operator whose value ``node`` carries: past the quantize/dequantize nodes and the
    getitem of a multi-output operator (max_pool2d_with_indices), which the report does not list."""
    import operator

    from torch.fx import Node as FxNode

    from .graph.names import is_qdq

    while node.op == "call_function" and (is_qdq(node) or node.target is operator.getitem):
        arg = node.args[0] if node.args else None
        if not isinstance(arg, FxNode):
            break
        node = arg
    return node


def build_table(edge_program: ExportedProgram, decisions: Iterable[OpDecision]) -> ProfileTable:
    """The table of an edge program with its ESP-NN delegates (before to_executorch(), whose
    passes rewrite the graph in place)."""
    from .accuracy.layers import lowered_modules
    from .backend import build_partition
    from .errors import LoweringError

    ds = list(decisions)
    where = {d.node: d.location or "" for d in ds}
    layers: list[ProfileLayer] = []
    modules = lowered_modules(edge_program)
    for part, mod in enumerate(modules):
        built = build_partition(mod.original_module, list(mod.compile_specs))
        if built.data != bytes(mod.processed_bytes):
            raise LoweringError(f"profile: partition {part}'s payload could not be rebuilt identically, so its "
                                "layers cannot be named; lower without profile=True and report this model")
        nodes = {n.name: n for n in mod.original_module.graph.nodes}
        for i, op in enumerate(built.payload.ops):
            value = built.tensor_values.get(op.output)
            name = _producer(nodes[value[0]]).name if value is not None and value[0] in nodes else ""
            layers.append(ProfileLayer(len(layers), part, i, op.opcode.name, ascii_text(name),
                                       ascii_text(where.get(name, ""))))
    return ProfileTable(tuple(layers), cpu_stretches(ds, len(modules)))
