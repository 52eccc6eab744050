"""Read and describe a serialized ExecuTorch program (.pte), with ExecuTorch's own deserializer.

The one reader of programs: what a method declares (I/O tensors, delegates and their payloads,
CPU kernel calls, constants, planned buffers) for the report, the host runtime's input and
backend checks, the selective build's validity check, the model-file loader, the backend-suite
tester and the builder's model header (``executorch_espnn/firmware/pte_meta.py``, which maps this
description to the header's fields).  Every problem is a :class:`PteError` naming it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .errors import PteError

BACKEND_ID = "EspNNDelegateBackend"
# the compile specs our delegates carry in the program (executorch_espnn.backend writes them)
SPEC_TARGET = "target"
SPEC_OPTIONS = "options"

_HINT = "pass a .pte written by ExecuTorch's to_executorch()"
_QUANTIZE = "quantized_decomposed::quantize_per_tensor"
_DEQUANTIZE = "quantized_decomposed::dequantize_per_tensor"


@dataclass(frozen=True)
class ScalarType:
    name: str  # the numpy (and torch) name
    size: int  # bytes per element


#: ExecuTorch ScalarType codes (exir/scalar_type.py) this package names
SCALAR_TYPES: dict[int, ScalarType] = {
    0: ScalarType("uint8", 1),
    1: ScalarType("int8", 1),
    2: ScalarType("int16", 2),
    3: ScalarType("int32", 4),
    4: ScalarType("int64", 8),
    5: ScalarType("float16", 2),
    6: ScalarType("float32", 4),
    7: ScalarType("float64", 8),
    11: ScalarType("bool", 1),
    15: ScalarType("bfloat16", 2),
}


class UnreadableProgramError(PteError):
    """The bytes are not a program ExecuTorch's deserializer reads; ``reason`` says why."""

    def __init__(self, size: int, reason: str) -> None:
        self.reason = reason
        super().__init__(f"not a readable ExecuTorch program ({size} bytes: {reason}); {_HINT}")


@dataclass(frozen=True)
class TensorDecl:
    """A tensor value of the program: its dtype (numpy name), sizes and dim order."""

    dtype: str
    sizes: tuple[int, ...]
    dim_order: tuple[int, ...]
    scalar_type: int = -1  # the ExecuTorch ScalarType code

    @property
    def numel(self) -> int:
        n = 1
        for s in self.sizes:
            n *= s
        return n

    @property
    def nbytes(self) -> int:
        st = SCALAR_TYPES.get(self.scalar_type)
        return self.numel * (st.size if st is not None else 1)


@dataclass(frozen=True)
class KernelCallInfo:
    """A CPU operator call: its name ("quantized_decomposed::quantize_per_tensor.out"), the
    value indices of its arguments and, when the program kept it, its source location."""

    op: str
    args: tuple[int, ...]
    location: str | None = None  # "model.py:42 in forward"


@dataclass(frozen=True)
class DelegateCallInfo:
    delegate_index: int
    backend_id: str
    args: tuple[int, ...]  # value indices: the delegate's inputs, then its outputs


@dataclass(frozen=True)
class QuantCall:
    """A CPU quantize_per_tensor (float -> int) or dequantize_per_tensor (int -> float) call
    whose scale and zero point are constants of the program."""

    quantize: bool
    input: int  # value index read
    output: int  # value index written
    scale: float
    zero_point: int


@dataclass(frozen=True)
class ProgramInfo:
    method: str
    methods: tuple[str, ...]
    input_values: tuple[int, ...]
    output_values: tuple[int, ...]
    inputs: tuple[TensorDecl | None, ...]  # None: not a tensor
    outputs: tuple[TensorDecl | None, ...]
    backends: tuple[str, ...]  # backend id of every delegate, in delegate order
    payloads: tuple[bytes, ...]  # processed bytes of every delegate, in delegate order
    calls: tuple[DelegateCallInfo | KernelCallInfo, ...]  # in execution order
    operators: tuple[str, ...]  # the CPU operator table ("aten::abs.out"), by op index
    scalars: dict[int, float | int]  # value index -> Int/Double constant
    constant_tensor_bytes: int  # tensors stored in the program (CPU-side weights)
    planned_buffers: tuple[int, ...]  # bytes of each memory-planned buffer (mem id 1, 2, ...)
    # value index -> bytes of each memory-planned tensor (the program's inputs and outputs, the
    # CPU operators' tensors, the delegates' arguments)
    planned_values: dict[int, int] = field(default_factory=dict)
    # program inputs a channels-last lowering takes as [N, H, W, C] (lower(...,
    # input_layout="nhwc")), as its delegates' options record them
    nhwc_inputs: tuple[int, ...] = ()

    @property
    def used_backends(self) -> tuple[str, ...]:
        return tuple(sorted(set(self.backends)))

    @property
    def delegate_calls(self) -> tuple[DelegateCallInfo, ...]:
        return tuple(c for c in self.calls if isinstance(c, DelegateCallInfo))

    @property
    def kernel_calls(self) -> tuple[KernelCallInfo, ...]:
        return tuple(c for c in self.calls if isinstance(c, KernelCallInfo))

    @property
    def quant_calls(self) -> tuple[QuantCall, ...]:
        out = []
        for k in self.kernel_calls:
            is_q, is_dq = k.op.startswith(_QUANTIZE), k.op.startswith(_DEQUANTIZE)
            if not (is_q or is_dq) or len(k.args) < 3:
                continue
            scale, zp = self.scalars.get(k.args[1]), self.scalars.get(k.args[2])
            if scale is None or zp is None:
                continue
            out.append(QuantCall(is_q, k.args[0], k.args[-1], float(scale), int(zp)))
        return tuple(out)


def load(pte: bytes) -> Any:
    """The deserialized program (``executorch.exir.schema.Program``); raises
    :class:`UnreadableProgramError` for bytes that are not one."""
    data = bytes(pte)
    # a program is a flatbuffer whose file identifier (bytes 4..8) is "ET" + two digits
    if len(data) < 8 or data[4:6] != b"ET" or not data[6:8].isdigit():
        raise UnreadableProgramError(len(data), "it lacks the ETxx file identifier at byte 4")
    from executorch.exir._serialize._program import deserialize_pte_binary

    try:
        program = deserialize_pte_binary(data).program
        plans = list(program.execution_plan)
    except Exception as exc:  # the flatbuffer parser raises many types
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        raise UnreadableProgramError(
            len(data), f"{type(exc).__name__}: {first}; is it truncated or corrupt?"
        ) from exc
    if not plans:
        raise UnreadableProgramError(len(data), "it contains no methods; is it truncated or corrupt?")
    return program


def _payload(program: Any, plan: Any, delegate: Any) -> bytes:
    from executorch.exir import schema

    ref = delegate.processed
    # deserialize_pte_binary inlines segment data: anything else is a program it could not restore
    if ref.location != schema.DataLocation.INLINE or not 0 <= ref.index < len(program.backend_delegate_data):
        raise PteError(
            f"delegate {delegate.id!r} of {plan.name} has no readable payload (location {ref.location})"
        )
    return bytes(program.backend_delegate_data[ref.index].data)


def backend_ids(pte: bytes) -> list[str]:
    """The backend id of every delegate of every method, in program order."""
    program = load(pte)
    return [d.id for plan in program.execution_plan for d in plan.delegates or []]


def delegate_payloads(pte: bytes) -> list[bytes]:
    """The payload of every ``EspNNDelegateBackend`` delegate of every method, in program order."""
    program = load(pte)
    out = [
        _payload(program, plan, d)
        for plan in program.execution_plan
        for d in plan.delegates or []
        if d.id == BACKEND_ID
    ]
    if not out:
        ids = sorted({d.id for plan in program.execution_plan for d in plan.delegates or []})
        found = f"its delegates are {ids}" if ids else "it has no delegates at all"
        raise PteError(
            f"the .pte contains no {BACKEND_ID} delegate ({found}); lower the model with "
            "EspNNPartitioner (executorch_espnn.lower) to get one"
        )
    return out


def _tensor_decl(val: object) -> TensorDecl | None:
    from executorch.exir import schema

    if not isinstance(val, schema.Tensor):
        return None
    code = int(val.scalar_type)
    st = SCALAR_TYPES.get(code)
    return TensorDecl(
        st.name if st is not None else f"ScalarType {code}",
        tuple(int(s) for s in val.sizes),
        tuple(int(d) for d in val.dim_order),
        code,
    )


def _checked_index(index: int, size: int, what: str, method: str) -> int:
    """``index`` if it lies in a table of ``size`` entries, else the PteError of a corrupt
    program: the flatbuffer verifier checks offsets, not the indices one table holds into
    another, so a damaged file can name a value, delegate or operator that does not exist."""
    if not 0 <= index < size:
        raise PteError(
            f"{what} in method {method!r} is entry {index} of a table with {size} entries; the .pte is "
            "truncated or corrupt: export it again (executorch_espnn.lower or the build's lowering)")
    return index


def _location(frames: Any) -> str | None:
    if frames is None or not frames.items:
        return None
    f = frames.items[-1]
    return f"{f.filename}:{f.lineno} in {f.name}"


def read_program(pte: bytes, method: str | None = "forward") -> ProgramInfo:
    """Describe ``method`` of the program ``pte`` (``None``: "forward", else the first method).
    Raises :class:`PteError` naming the problem when it is not a readable program."""
    from executorch.exir import schema

    program = load(pte)
    plan_list = list(program.execution_plan)
    names = tuple(p.name for p in plan_list)
    wanted = method if method is not None else ("forward" if "forward" in names else names[0])
    plans = [p for p in plan_list if p.name == wanted]
    if not plans:
        raise PteError(f"the program has no method {wanted!r}; it has {list(names)}")
    plan = plans[0]

    backends = tuple(d.id for d in plan.delegates)
    payloads = tuple(_payload(program, plan, d) for d in plan.delegates)
    operators = tuple(f"{op.name}.{op.overload}" if op.overload else str(op.name) for op in plan.operators)

    calls: list[DelegateCallInfo | KernelCallInfo] = []
    for chain in plan.chains:
        stack = list(chain.stacktrace or [])
        for j, instr in enumerate(chain.instructions):
            args = instr.instr_args
            if isinstance(args, schema.DelegateCall):
                idx = _checked_index(int(args.delegate_index), len(backends), "a delegate call's delegate", wanted)
                calls.append(DelegateCallInfo(idx, backends[idx], tuple(args.args)))
            elif isinstance(args, schema.KernelCall):
                frames = stack[j] if j < len(stack) else None
                op = _checked_index(int(args.op_index), len(operators), "a kernel call's operator", wanted)
                calls.append(KernelCallInfo(operators[op], tuple(args.args), _location(frames)))

    scalars: dict[int, float | int] = {}
    constant_bytes = 0
    planned_values: dict[int, int] = {}
    for i, v in enumerate(plan.values):
        if isinstance(v.val, schema.Tensor) and v.val.allocation_info is not None:
            decl_i = _tensor_decl(v.val)
            planned_values[i] = decl_i.nbytes if decl_i is not None else 0
        if isinstance(v.val, schema.Int):
            scalars[i] = int(v.val.int_val)
        elif isinstance(v.val, schema.Double):
            scalars[i] = float(v.val.double_val)
        elif isinstance(v.val, schema.Tensor) and v.val.data_buffer_idx > 0 and v.val.allocation_info is None:
            const = _tensor_decl(v.val)
            assert const is not None
            constant_bytes += const.nbytes

    def decl(index: int) -> TensorDecl | None:
        return _tensor_decl(plan.values[_checked_index(index, len(plan.values), "a program input or output", wanted)].val)

    inputs = tuple(decl(i) for i in plan.inputs)

    return ProgramInfo(
        method=wanted,
        methods=names,
        input_values=tuple(plan.inputs),
        output_values=tuple(plan.outputs),
        inputs=inputs,
        outputs=tuple(decl(i) for i in plan.outputs),
        backends=backends,
        payloads=payloads,
        calls=tuple(calls),
        operators=operators,
        scalars=scalars,
        constant_tensor_bytes=constant_bytes,
        # entry 0 is reserved by ExecuTorch; the rest are the planned buffers
        planned_buffers=tuple(int(b) for b in plan.non_const_buffer_sizes[1:]),
        planned_values=planned_values,
        nhwc_inputs=_nhwc_inputs(plan, inputs, wanted),
    )


def _nhwc_inputs(plan: Any, inputs: tuple[TensorDecl | None, ...], method: str) -> tuple[int, ...]:
    """The channels-last program inputs our delegates' ``options`` spec names (one list, the
    same in every delegate of a lowering); () for a program lowered NCHW, with no delegate of
    ours, or from a release before the list was recorded (their 4-D inputs then read NCHW).
    A list that is not JSON, differs between delegates or names an input that is not 4-D is
    a PteError: the bytes are not what lower() writes."""
    seen: set[tuple[int, ...]] = set()
    for d in plan.delegates or []:
        if d.id != BACKEND_ID:
            continue
        for spec in d.compile_specs or []:
            if spec.key != SPEC_OPTIONS:
                continue
            try:
                options = json.loads(bytes(spec.value).decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise PteError(f"{method}: delegate {d.id!r}'s options compile spec is not JSON ({exc}); {_HINT}") from None
            listed = options.get("nhwc_inputs", []) if isinstance(options, dict) else None
            if not isinstance(listed, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in listed):
                raise PteError(f"{method}: delegate {d.id!r}'s nhwc_inputs option {listed!r} is not a list of "
                               f"input indices; {_HINT}")
            seen.add(tuple(listed))
    if len(seen) > 1:
        raise PteError(f"{method}: its delegates name different channels-last inputs {sorted(seen)}; {_HINT}")
    found = next(iter(seen), ())
    for i in found:
        named = inputs[i] if 0 <= i < len(inputs) else None
        if named is None or len(named.sizes) != 4:
            raise PteError(f"{method}: its delegates name input {i} channels-last, but it has no 4-D input {i}; "
                           f"{_HINT}")
    return found
