"""``EspNNDelegateBackend``: ExecuTorch's ahead-of-time half of the ESP-NN delegate.

``preprocess`` receives one partition (an edge ``ExportedProgram`` whose user inputs
are the delegate's arguments) and returns the payload described in
``docs/payload-format.md``.  The compile specs carry the target chip and the options
the partitioner was given; nothing is read from the environment.

The class name is the backend id stored in the ``.pte``.  Upstream ExecuTorch has an
in-tree prototype called ``EspNNBackend``; ExecuTorch looks backends up by class name
among ``BackendDetails`` subclasses, so the two can live in one process.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from typing import Any

from executorch.exir.backend.backend_details import BackendDetails, PreprocessResult
from executorch.exir.backend.compile_spec_schema import CompileSpec
from torch.export import ExportedProgram
from torch.fx import Node

from .errors import LoweringError, UnsupportedTargetError
from .graph.constants import GraphContext
from .kernel_choice import check_optimize
from .ops import build_registry
from .payload import PayloadError, Target
from .payload.format import MAX_IO, MAX_OPS, MAX_TENSORS
from .payload_builder import BuildResult, Limits
from .pte import SPEC_OPTIONS, SPEC_TARGET
from .units import build_payload
from .unsupported import Unsupported

TARGET_ALIASES = {"host": Target.GENERIC, "generic": Target.GENERIC}


def parse_target(name: str | Target) -> Target:
    """A target chip by name ("esp32s3", "esp32", "generic"/"host", …)."""
    if isinstance(name, Target):
        return name
    if not isinstance(name, str):
        raise UnsupportedTargetError(f"target must be a string such as 'esp32s3', got {name!r}")
    key = name.strip().lower()
    if key in TARGET_ALIASES:
        return TARGET_ALIASES[key]
    try:
        return Target.parse(key)
    except ValueError:
        known = ", ".join([*TARGET_ALIASES, *(t.name.lower() for t in Target if t != Target.GENERIC)])
        raise UnsupportedTargetError(f"unknown target {name!r}; choose one of: {known}") from None


def target_name(target: Target) -> str:
    return target.name.lower()


@dataclass(frozen=True)
class LoweringOptions:
    """Options of ``EspNNPartitioner(**options)``, passed to preprocess as a compile spec.

    The limits default to the engine's; smaller values make the partitioner split
    partitions earlier (useful to test splitting, or to bound a delegate's size).
    """

    max_tensors: int = MAX_TENSORS
    max_ops: int = MAX_OPS
    max_io: int = MAX_IO
    # "speed" or "ram": RAM-first kernels where a fast kernel's scratch sets the arena's peak
    # (executorch_espnn.kernel_choice)
    optimize: str = "speed"
    # the program inputs lower(..., input_layout="nhwc") takes channels-last: preprocess reads
    # nothing of it; it rides in the .pte's compile spec so a reader of a ready .pte
    # (executorch_espnn.pte.ProgramInfo.nhwc_inputs: its report, model_pte.h) knows the layout
    nhwc_inputs: tuple[int, ...] = ()

    @classmethod
    def from_dict(cls, options: dict[str, Any]) -> LoweringOptions:
        known = {f.name: f for f in fields(cls)}
        unknown = sorted(set(options) - set(known))
        if unknown:
            raise LoweringError(
                f"unknown EspNNPartitioner option(s) {unknown}; known options: {sorted(known)}"
            )
        bounds = {"max_tensors": MAX_TENSORS, "max_ops": MAX_OPS, "max_io": MAX_IO}
        values = dict(options)  # (JSON gives nhwc_inputs as a list: the field is a tuple)
        for k, v in options.items():
            if k == "optimize":
                check_optimize(v)
                continue
            if k == "nhwc_inputs":
                if not isinstance(v, (list, tuple)) or not all(
                        isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in v):
                    raise LoweringError(f"option nhwc_inputs={v!r} must be a list of program input indices (ints >= 0)")
                values[k] = tuple(v)
                continue
            if not isinstance(v, int) or isinstance(v, bool) or not 1 <= v <= bounds[k]:
                raise LoweringError(f"option {k}={v!r} must be an integer in 1..{bounds[k]}")
        return cls(**values)

    @property
    def limits(self) -> Limits:
        return Limits(self.max_tensors, self.max_ops, self.max_io)


def compile_specs(target: Target, options: LoweringOptions) -> list[CompileSpec]:
    return [
        CompileSpec(SPEC_TARGET, target_name(target).encode("ascii")),
        CompileSpec(SPEC_OPTIONS, json.dumps(asdict(options), sort_keys=True).encode("utf-8")),
    ]


def parse_compile_specs(specs: list[CompileSpec]) -> tuple[Target, LoweringOptions]:
    target = Target.GENERIC
    options = LoweringOptions()
    for spec in specs:
        value = bytes(spec.value)
        if spec.key == SPEC_TARGET:
            target = parse_target(value.decode("ascii", errors="replace"))
        elif spec.key == SPEC_OPTIONS:
            try:
                raw = json.loads(value.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as e:
                raise LoweringError(f"compile spec 'options' is not JSON: {e}") from None
            if not isinstance(raw, dict):
                raise LoweringError("compile spec 'options' must be a JSON object")
            options = LoweringOptions.from_dict(raw)
        else:
            raise LoweringError(
                f"unknown compile spec {spec.key!r} for EspNNDelegateBackend; known: {SPEC_TARGET}, {SPEC_OPTIONS}"
            )
    return target, options


def partition_io(ep: ExportedProgram) -> tuple[list[Node], list[Node], list[Node]]:
    """(call_function nodes in order, user-input placeholders in call order, outputs)."""
    placeholders = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
    inputs = [placeholders[name] for name in ep.graph_signature.user_inputs]
    out_node = next(n for n in ep.graph.nodes if n.op == "output")
    outs = out_node.args[0]
    outputs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    if not all(isinstance(o, Node) for o in outputs):
        raise LoweringError("a partition output is not a tensor")
    nodes = [n for n in ep.graph.nodes if n.op == "call_function"]
    return nodes, inputs, outputs


def build_partition(edge_program: ExportedProgram, compile_specs: list[CompileSpec]) -> BuildResult:
    """The payload of one partition with the graph value each tensor holds: what ``preprocess``
    returns, and what the accuracy report rebuilds from a lowered module's ``original_module``
    to name the layers of a payload (the bytes do not carry node names)."""
    target, options = parse_compile_specs(compile_specs)
    ctx = GraphContext(edge_program)
    nodes, inputs, outputs = partition_io(edge_program)
    try:
        return build_payload(nodes, inputs, outputs, ctx, build_registry(), target, options.limits,
                             ram_first=options.optimize == "ram")
    except Unsupported as e:
        raise LoweringError(
            f"EspNNDelegateBackend cannot lower this partition: {e.reason}. Partitions made by "
            "EspNNPartitioner never hit this; if they did, please report it with the model."
        ) from None
    except PayloadError as e:
        raise LoweringError(f"EspNNDelegateBackend produced an invalid payload: {e}") from None


class EspNNDelegateBackend(BackendDetails):  # type: ignore[misc]  # executorch is untyped
    @staticmethod
    def preprocess(edge_program: ExportedProgram, compile_specs: list[CompileSpec]) -> PreprocessResult:
        return PreprocessResult(processed_bytes=build_partition(edge_program, compile_specs).data)
