"""What a serialized ExecuTorch program (.pte) declares: I/O tensors, delegates, their payloads
and how they connect.  Used by the host runtime (input checks, registered-backend checks) and
by the generated model header (I/O quantization)."""

from __future__ import annotations

from dataclasses import dataclass

from .errors import PteError

#: ExecuTorch ScalarType codes we can hand to numpy, with their numpy names
_SCALAR_TYPES: dict[int, str] = {
    0: "uint8",
    1: "int8",
    2: "int16",
    3: "int32",
    4: "int64",
    5: "float16",
    6: "float32",
    7: "float64",
    11: "bool",
}

BACKEND_ID = "EspNNDelegateBackend"


@dataclass(frozen=True)
class TensorDecl:
    """A tensor value of the program: its dtype (numpy name), sizes and dim order."""

    dtype: str
    sizes: tuple[int, ...]
    dim_order: tuple[int, ...]

    @property
    def numel(self) -> int:
        n = 1
        for s in self.sizes:
            n *= s
        return n

    @property
    def is_default_order(self) -> bool:
        return self.dim_order == tuple(range(len(self.sizes)))


@dataclass(frozen=True)
class KernelCallInfo:
    """A CPU operator call: its name ("quantized_decomposed::quantize_per_tensor.out") and
    the value indices of its arguments."""

    op: str
    args: tuple[int, ...]


@dataclass(frozen=True)
class DelegateCallInfo:
    delegate_index: int
    backend_id: str
    args: tuple[int, ...]  # value indices: the delegate's inputs, then its outputs


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
    delegate_calls: tuple[DelegateCallInfo, ...]
    kernel_calls: tuple[KernelCallInfo, ...]
    scalars: dict[int, float | int]  # value index -> Int/Double constant
    planned_buffers: tuple[int, ...]  # bytes of each memory-planned buffer (mem id 1, 2, ...)

    @property
    def used_backends(self) -> tuple[str, ...]:
        return tuple(sorted(set(self.backends)))


def _tensor_decl(val: object) -> TensorDecl | None:
    from executorch.exir import schema

    if not isinstance(val, schema.Tensor):
        return None
    dtype = _SCALAR_TYPES.get(int(val.scalar_type), f"ScalarType {int(val.scalar_type)}")
    return TensorDecl(dtype, tuple(int(s) for s in val.sizes), tuple(int(d) for d in val.dim_order))


def read_program(pte: bytes, method: str = "forward") -> ProgramInfo:
    """Parse ``pte`` (raises :class:`PteError` naming the problem when it is not a program)."""
    from executorch.exir import schema
    from executorch.exir._serialize._program import deserialize_pte_binary

    hint = "pass the bytes of a .pte file written by to_executorch()"
    data = bytes(pte)
    # a program is a flatbuffer whose file identifier (bytes 4..8) is "ET" + two digits
    if len(data) < 8 or data[4:6] != b"ET" or not data[6:8].isdigit():
        raise PteError(f"not a readable ExecuTorch program ({len(data)} bytes, no ET file identifier); {hint}")
    try:
        program = deserialize_pte_binary(data).program
        plan_list = list(program.execution_plan)
    except Exception as exc:  # the flatbuffer parser raises many types
        raise PteError(
            f"not a readable ExecuTorch program ({len(data)} bytes): {type(exc).__name__}: {exc}; {hint}"
        ) from exc
    names = tuple(p.name for p in plan_list)
    plans = [p for p in plan_list if p.name == method]
    if not plans:
        raise PteError(f"the program has no method {method!r}; it has {list(names)}")
    plan = plans[0]

    backends = tuple(d.id for d in plan.delegates)
    payloads: list[bytes] = []
    for d in plan.delegates:
        ref = d.processed
        if ref.location != schema.DataLocation.INLINE or ref.index >= len(program.backend_delegate_data):
            raise PteError(f"delegate {d.id!r} has no readable payload (location {ref.location})")
        payloads.append(bytes(program.backend_delegate_data[ref.index].data))

    delegate_calls: list[DelegateCallInfo] = []
    kernel_calls: list[KernelCallInfo] = []
    for chain in plan.chains:
        for instr in chain.instructions:
            args = instr.instr_args
            if isinstance(args, schema.DelegateCall):
                idx = int(args.delegate_index)
                delegate_calls.append(DelegateCallInfo(idx, backends[idx], tuple(args.args)))
            elif isinstance(args, schema.KernelCall):
                op = plan.operators[args.op_index]
                name = f"{op.name}.{op.overload}" if op.overload else op.name
                kernel_calls.append(KernelCallInfo(name, tuple(args.args)))

    scalars: dict[int, float | int] = {}
    for i, v in enumerate(plan.values):
        if isinstance(v.val, schema.Int):
            scalars[i] = int(v.val.int_val)
        elif isinstance(v.val, schema.Double):
            scalars[i] = float(v.val.double_val)

    def decl(index: int) -> TensorDecl | None:
        return _tensor_decl(plan.values[index].val)

    return ProgramInfo(
        method=method,
        methods=names,
        input_values=tuple(plan.inputs),
        output_values=tuple(plan.outputs),
        inputs=tuple(decl(i) for i in plan.inputs),
        outputs=tuple(decl(i) for i in plan.outputs),
        backends=backends,
        payloads=tuple(payloads),
        delegate_calls=tuple(delegate_calls),
        kernel_calls=tuple(kernel_calls),
        scalars=scalars,
        # entry 0 is reserved by ExecuTorch; the rest are the planned buffers
        planned_buffers=tuple(int(b) for b in plan.non_const_buffer_sizes[1:]),
    )
