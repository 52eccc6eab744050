"""The on-board self-test: N program inputs with the outputs the firmware must produce.

``lower(..., selftest=N)`` takes the first N samples of the validation data (else the
calibration data, else seeded random inputs drawn like the example inputs), runs them
through :func:`executorch_espnn.reference.program.run_program` (ESP-NN delegates by the
Python reference, CPU operators by PyTorch: never the C engine under test) and keeps, per
program input and output, a :class:`SelfTestTensor`.  The build embeds them in
``model_pte.h``; ``EspnnModel::self_test()`` feeds the inputs, runs the program and compares.

How values are stored and compared (the C side in ``runtime/espnn_selftest.cpp`` mirrors it):

* a float input the program quantizes (a quantize node reads it) is stored as int8 with that
  quantization; the firmware and the reference both feed ``float32(q - zp) * float32(scale)``
  (one IEEE single multiply, so the same bits), which the program's own quantize maps back to
  ``q`` exactly.  A float input nothing quantizes is stored as float32; an int8 input as int8.
* a float output with an int8 side (the delegate or a CPU kernel dequantizes it) is compared
  on that int8 grid: ``q = clamp(rint(double(y) / double(float32(scale))) + zp)``, the
  delegate's int8 result before dequantization, in LSB.  An int8 output is compared as is.
  A float output with no quantization is compared bit for bit (the "LSB" is then a float32
  unit in the last place).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from .errors import LoweringError, OptionValueError
from .payload.format import DType

if TYPE_CHECKING:
    from torch.export import ExportedProgram

    from .report import TensorSpec

#: At most this many cases: self_test() keeps one latency per case on the stack for the median.
MAX_CASES = 64
SOURCES = ("validation", "calibration", "random")
_NPZ_META = "meta"


@dataclass(frozen=True)
class SelfTestTensor:
    """One program input (values to feed) or output (values expected), for every case."""

    name: str
    dtype: str  # "int8" or "float32": how the values are stored and compared
    values: npt.NDArray[Any]  # (n_cases, *program tensor shape), of ``dtype``
    scale: float = 0.0  # the int8 grid of a float program tensor; 0.0: the tensor's own values
    zero_point: int = 0

    @property
    def numel(self) -> int:
        return int(np.prod(self.values.shape[1:], dtype=np.int64))


@dataclass(frozen=True)
class SelfTest:
    source: str  # one of SOURCES
    inputs: tuple[SelfTestTensor, ...]
    expected: tuple[SelfTestTensor, ...]

    @property
    def n_cases(self) -> int:
        return int(self.inputs[0].values.shape[0]) if self.inputs else 0

    def program_inputs(self, case: int) -> list[npt.NDArray[Any]]:
        """What the firmware writes into the program's inputs for ``case``."""
        return [program_value(t, case) for t in self.inputs]

    def save(self, path: str | Path) -> Path:
        """An .npz: arrays input<i>/expected<i> plus a meta array of the rest."""
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        arrays: dict[str, npt.NDArray[Any]] = {}
        meta: list[str] = [self.source]
        for kind, tensors in (("input", self.inputs), ("expected", self.expected)):
            for i, t in enumerate(tensors):
                arrays[f"{kind}{i}"] = t.values
                meta.append(f"{kind}{i}\t{t.name}\t{t.dtype}\t{t.scale!r}\t{t.zero_point}")
        arrays[_NPZ_META] = np.array(meta)
        with p.open("wb") as fp:
            np.savez(fp, **arrays)  # type: ignore[arg-type]
        return p

    @classmethod
    def load(cls, path: str | Path) -> SelfTest:
        with np.load(Path(path), allow_pickle=False) as npz:
            meta = [str(m) for m in npz[_NPZ_META]]
            source, rows = meta[0], meta[1:]
            by_kind: dict[str, list[SelfTestTensor]] = {"input": [], "expected": []}
            for row in rows:
                key, name, dtype, scale, zp = row.split("\t")
                kind = "input" if key.startswith("input") else "expected"
                by_kind[kind].append(SelfTestTensor(name, dtype, npz[key], float(scale), int(zp)))
        return cls(source, tuple(by_kind["input"]), tuple(by_kind["expected"]))

    def to_context(self) -> dict[str, Any]:
        """The template context of the generated table (values flattened, dtype codes)."""
        def tensor(t: SelfTestTensor) -> dict[str, Any]:
            flat = t.values.reshape(-1)
            values: list[Any] = [int(v) for v in flat] if t.dtype == "int8" else [float(v) for v in flat]
            return {"name": t.name, "dtype": t.dtype, "dtype_code": int(DType.from_numpy_name(t.dtype)),
                    "numel": t.numel, "scale": t.scale, "zero_point": t.zero_point, "data": values}

        return {"n_cases": self.n_cases, "source": self.source,
                "inputs": [tensor(t) for t in self.inputs],
                "expected": [tensor(t) for t in self.expected]}


def check_count(value: object) -> int:
    """``selftest`` as an int in [0, MAX_CASES], or OptionValueError naming the fix."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise OptionValueError(
            "selftest", value, "not a number of samples",
            f"give a whole number from 0 (off) to {MAX_CASES}, e.g. 4",
        )
    n = int(value)
    if n < 0:
        raise OptionValueError("selftest", value, "a negative number of samples",
                               f"give a whole number from 0 (off) to {MAX_CASES}, e.g. 4")
    if n > MAX_CASES:
        raise OptionValueError("selftest", value, f"more than {MAX_CASES} samples",
                               f"give at most {MAX_CASES} (the firmware keeps one latency per sample)")
    return n


def select_samples(
    n: int,
    example_inputs: tuple[Any, ...],
    validation: Sequence[tuple[Any, ...]] | None,
    calibration: Sequence[tuple[Any, ...]] | None,
) -> tuple[list[tuple[Any, ...]], str]:
    """The first ``n`` samples of the validation data, else of the calibration data, else
    seeded random inputs like the example inputs; OptionValueError when the data is short."""
    for data, source in ((validation, "validation"), (calibration, "calibration")):
        if data is None:
            continue
        if len(data) < n:
            raise OptionValueError(
                "selftest", n, f"the {source} data has only {len(data)} sample(s)",
                f"ask for at most {len(data)}, or give more {source} samples",
            )
        return [tuple(b) for b in data[:n]], source
    from .quantizer.workflow import random_calibration

    return random_calibration(example_inputs, batches=n) if n else [], "random"


def input_quantization(quantized: ExportedProgram) -> list[tuple[float, int] | None]:
    """(scale, zero point) of the quantize node reading each user input of the quantized
    program, None when no quantize reads it (the program's own values are then stored)."""
    from .graph.names import QUANTIZE, node_op

    user_inputs = set(quantized.graph_signature.user_inputs)
    out: list[tuple[float, int] | None] = []
    for node in quantized.graph.nodes:
        if node.op != "placeholder" or node.name not in user_inputs:
            continue
        q = next((u for u in node.users if u.op == "call_function" and node_op(u) == QUANTIZE), None)
        out.append((float(q.args[1]), int(q.args[2])) if q is not None else None)
    return out


def program_value(t: SelfTestTensor, case: int) -> npt.NDArray[Any]:
    """The value the firmware writes into a program input from the stored one."""
    v = t.values[case]
    if t.scale:
        # float32 arithmetic, exactly as espnn_selftest.cpp: (float)(q - zp) * scale
        x: npt.NDArray[Any] = (v.astype(np.int32) - np.int32(t.zero_point)).astype(np.float32) * np.float32(t.scale)
        return x
    return np.array(v, copy=True)


def quantize_samples(
    samples: Sequence[tuple[Any, ...]], quantization: Sequence[tuple[float, int] | None]
) -> list[tuple[Any, ...]]:
    """The samples as an int8-I/O program takes them: each quantized input on its int8 grid,
    exactly as the program's quantize would (``_store_input``'s arithmetic)."""
    import torch

    def one(x: Any, quant: tuple[float, int] | None) -> Any:
        arr = x.detach().contiguous().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)
        if quant is None or arr.dtype != np.float32:
            return x
        inv = np.float32(1.0) / np.float32(quant[0])
        return torch.from_numpy(np.clip(np.rint(arr * inv) + int(quant[1]), -128, 127).astype(np.int8))

    return [tuple(one(x, quantization[i] if i < len(quantization) else None) for i, x in enumerate(b))
            for b in samples]


def _store_input(name: str, xs: list[npt.NDArray[Any]], quant: tuple[float, int] | None) -> SelfTestTensor:
    stack = np.stack(xs)
    if stack.dtype == np.float32 and quant is not None:
        scale, zp = float(np.float32(quant[0])), int(quant[1])
        inv = np.float32(1.0) / np.float32(scale)
        q = np.clip(np.rint(stack * inv) + zp, -128, 127).astype(np.int8)
        return SelfTestTensor(name, "int8", q, scale, zp)
    if stack.dtype in (np.float32, np.int8):
        return SelfTestTensor(name, str(stack.dtype), stack)
    raise LoweringError(
        f"selftest: program input {name} is {stack.dtype}; the self-test feeds float32 and int8 "
        "inputs only (set selftest=0 for this model)"
    )


def expected_int8(y: npt.NDArray[Any], scale: float, zero_point: int) -> npt.NDArray[np.int8]:
    """A float output on its int8 grid, as espnn_selftest.cpp maps the firmware's output."""
    s = float(np.float32(scale))
    v = np.rint(y.astype(np.float64) / s) + zero_point
    q: npt.NDArray[np.int8] = np.clip(v, -128, 127).astype(np.int8)
    return q


def _store_output(spec: TensorSpec, ys: list[npt.NDArray[Any]]) -> SelfTestTensor:
    stack = np.stack(ys)
    if not np.isfinite(stack.astype(np.float64)).all():
        raise LoweringError(
            f"selftest: the reference gives a non-finite value in output {spec.name}; "
            "the self-test compares finite outputs only (set selftest=0 for this model)"
        )
    if stack.dtype == np.float32 and spec.scale:
        scale = float(np.float32(spec.scale))
        return SelfTestTensor(spec.name, "int8", expected_int8(stack, scale, int(spec.zero_point or 0)),
                              scale, int(spec.zero_point or 0))
    if stack.dtype in (np.float32, np.int8):
        return SelfTestTensor(spec.name, str(stack.dtype), stack)
    raise LoweringError(
        f"selftest: program output {spec.name} is {stack.dtype}; the self-test compares float32 "
        "and int8 outputs only (set selftest=0 for this model)"
    )


def reference_outputs(
    edge_program: ExportedProgram,
    samples: Iterable[tuple[Any, ...]],
    quantization: Sequence[tuple[float, int] | None],
    names: Sequence[str],
) -> tuple[tuple[SelfTestTensor, ...], list[list[npt.NDArray[Any]]]]:
    """The stored inputs and, per case, the reference's program outputs on exactly the
    values the firmware will feed.  Run before ``to_executorch()``, which rewrites the edge
    program's graph in place."""
    import torch

    from .reference.program import ProgramRunner

    per_input: list[list[npt.NDArray[Any]]] = [[] for _ in names]
    for sample in samples:
        for i, x in enumerate(sample):
            per_input[i].append(x.detach().contiguous().numpy() if isinstance(x, torch.Tensor) else np.asarray(x))
    stored = tuple(_store_input(name, xs, quantization[i] if i < len(quantization) else None)
                   for i, (name, xs) in enumerate(zip(names, per_input, strict=True)))
    n = int(stored[0].values.shape[0]) if stored else 0
    run_program = ProgramRunner(edge_program)
    outputs = [run_program([program_value(t, case) for t in stored]) for case in range(n)]
    return stored, outputs


def build(
    source: str,
    inputs: tuple[SelfTestTensor, ...],
    outputs: Sequence[Sequence[npt.NDArray[Any]]],
    output_specs: Sequence[TensorSpec],
) -> SelfTest:
    """The self-test from the stored inputs and the reference outputs of every case."""
    per_output = [[case[k] for case in outputs] for k in range(len(output_specs))]
    expected = tuple(_store_output(spec, ys) for spec, ys in zip(output_specs, per_output, strict=True))
    return SelfTest(source, inputs, expected)
