"""Selective kernel registration (executorch_espnn.selective): the generated operator list is the
.pte's CPU operators, read independently from the program's flatbuffer, and the generated
registration compiles against the wheel's headers and references only those kernels."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import executorch.version
import pytest
import yaml

from executorch_espnn import selective
from executorch_espnn.errors import SelectiveBuildError
from tests.component_helpers import CXXFLAGS

ET_INCLUDE = Path(executorch.version.__file__).parent / "include"


def build_programs(out: Path) -> dict[str, Path]:
    import executorch.kernels.quantized  # noqa: F401  out variants of quantize/dequantize
    import torch
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import EdgeCompileConfig, to_edge, to_edge_transform_and_lower
    from torch.export import export

    class Float(torch.nn.Module):
        def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            return torch.relu(x + y) * y

    class Quant(torch.nn.Module):
        def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            qd = torch.ops.quantized_decomposed
            q = qd.quantize_per_tensor.default(x, 0.05, 3, -128, 127, torch.int8)
            d = qd.dequantize_per_tensor.default(q, 0.05, 3, -128, 127, torch.int8)
            return torch.relu(d + y)

    class Delegated(torch.nn.Module):  # the linear goes to a delegate, cumsum stays on the CPU
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(8, 8)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.cumsum(self.fc(x), dim=1)

    xy = (torch.randn(2, 3), torch.randn(2, 3))
    no_check = EdgeCompileConfig(_check_ir_validity=False)
    programs = {
        "float": to_edge(export(Float(), xy)).to_executorch(),
        "quant": to_edge(export(Quant(), xy), compile_config=no_check).to_executorch(),
        "delegated": to_edge_transform_and_lower(
            export(Delegated(), (torch.randn(2, 8),)), partitioner=[XnnpackPartitioner()]
        ).to_executorch(),
    }
    paths = {}
    for name, prog in programs.items():
        paths[name] = out / f"{name}.pte"
        paths[name].write_bytes(prog.buffer)
    return paths


@pytest.fixture(scope="module")
def ptes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return build_programs(tmp_path_factory.mktemp("ptes"))


def cpu_operators(pte: Path) -> set[str]:
    """The kernel calls of the program, straight from its flatbuffer (not via gen_oplist)."""
    from executorch.exir._serialize._program import deserialize_pte_binary

    prog = deserialize_pte_binary(pte.read_bytes())
    prog = getattr(prog, "program", prog)
    return {
        f"{op.name}.{op.overload}" if op.overload else op.name
        for plan in prog.execution_plan
        for op in plan.operators
    }


def registered(cpp: Path) -> set[str]:
    return set(re.findall(r'Kernel\(\s*"([^"]+)"', cpp.read_text()))


def compile_registration(files: list[Path], tmp: Path) -> Path:
    obj = tmp / "registration.o"
    subprocess.run(
        [
            "g++", *CXXFLAGS, "-DC10_USING_CUSTOM_GENERATED_MACROS", f"-I{ET_INCLUDE}",
            f"-I{ET_INCLUDE / 'executorch/runtime/core/portable_type/c10'}",
            f"-I{files[1].parent}", "-c", str(files[1]), "-o", str(obj),
        ],
        check=True,
        capture_output=True,
        text=True,
    )  # fmt: skip
    return obj


def undefined_kernels(obj: Path) -> set[str]:
    nm = subprocess.run(["nm", "-uC", str(obj)], capture_output=True, text=True, check=True)
    return set(re.findall(r"torch::executor::native::(\w+)\(", nm.stdout))


@pytest.mark.slow  # exports programs with torch and runs ExecuTorch's codegen
@pytest.mark.parametrize(
    ("name", "expected", "functions"),
    [
        (
            "float",
            {"aten::add.out", "aten::relu.out", "aten::mul.out"},
            {"add_out", "relu_out", "mul_out"},
        ),
        (
            "quant",
            {
                "aten::add.out",
                "aten::relu.out",
                "quantized_decomposed::quantize_per_tensor.out",
                "quantized_decomposed::dequantize_per_tensor.out",
            },
            {"add_out", "relu_out", "quantize_per_tensor_out", "dequantize_per_tensor_out"},
        ),
        ("delegated", {"aten::cumsum.out"}, {"cumsum_out"}),
    ],
)
def test_registration_is_exactly_the_cpu_operators(
    ptes: dict[str, Path], tmp_path: Path, name: str, expected: set[str], functions: set[str]
) -> None:
    pte = ptes[name]
    assert cpu_operators(pte) == expected  # the independent reading agrees with the model
    files = selective.generate(pte, tmp_path / "gen")
    assert [f.name for f in files] == list(selective.OUTPUTS)
    assert all(f.is_file() for f in files)
    assert set(selective.selected_operators(files[0])) == expected
    assert registered(files[1]) == expected
    obj = compile_registration(files, tmp_path)
    # the object pulls in exactly the selected kernels, so the firmware links nothing else
    assert undefined_kernels(obj) == functions


@pytest.mark.slow
def test_yaml_from_the_cli_gives_the_same_registration(
    ptes: dict[str, Path], tmp_path: Path
) -> None:
    from_pte = selective.generate(ptes["quant"], tmp_path / "a")
    from_yaml = selective.generate(from_pte[0], tmp_path / "b")
    assert from_yaml[1].read_text() == from_pte[1].read_text()


@pytest.mark.slow
def test_all_delegated_program_registers_nothing_and_still_compiles(tmp_path: Path) -> None:
    sel = tmp_path / "selected_operators.yaml"
    sel.write_text(yaml.safe_dump({"operators": {}, "include_all_operators": False}))
    files = selective.generate(sel, tmp_path / "gen")
    assert registered(files[1]) == set()
    assert undefined_kernels(compile_registration(files, tmp_path)) == set()


def test_operator_without_a_kernel_is_named(tmp_path: Path) -> None:
    sel = tmp_path / "selected_operators.yaml"
    sel.write_text(
        yaml.safe_dump(
            {"operators": {"aten::add.out": {}, "aten::frobnicate.out": {}, "my_ns::op.out": {}}}
        )
    )
    with pytest.raises(
        SelectiveBuildError,
        match=r"no ExecuTorch portable or quantized kernel exists for aten::frobnicate\.out, "
        r"my_ns::op\.out: the device cannot run these operators on its CPU",
    ):
        selective.generate(sel, tmp_path / "gen")


def test_bad_inputs(tmp_path: Path) -> None:
    with pytest.raises(SelectiveBuildError, match=r"nope\.pte does not exist"):
        selective.generate(tmp_path / "nope.pte", tmp_path / "gen")
    junk = tmp_path / "junk.pte"
    junk.write_bytes(b"\x00" * 64)
    with pytest.raises(
        SelectiveBuildError,
        match="junk.pte cannot be read as an ExecuTorch program "
        r"\(.pte\): it lacks the ETxx file identifier",
    ):
        selective.generate(junk, tmp_path / "gen")


@pytest.mark.slow
def test_corrupt_program_is_an_error_not_a_crash(ptes: dict[str, Path], tmp_path: Path) -> None:
    good = ptes["float"].read_bytes()
    corrupt = tmp_path / "corrupt.pte"
    corrupt.write_bytes(good[:8] + b"\xff" * (len(good) - 8))  # identifier intact, body garbage
    with pytest.raises(
        SelectiveBuildError, match=r"corrupt\.pte cannot be read as an ExecuTorch program"
    ):
        selective.generate(corrupt, tmp_path / "gen")
    truncated = tmp_path / "truncated.pte"
    truncated.write_bytes(good[: len(good) // 3])
    with pytest.raises(SelectiveBuildError, match=r"truncated\.pte cannot be read"):
        selective.generate(truncated, tmp_path / "gen")
    plain = tmp_path / "ops.yaml"
    plain.write_text("- aten::add.out\n")
    with pytest.raises(SelectiveBuildError, match="has no 'operators' mapping"):
        selective.generate(plain, tmp_path / "gen")
    everything = tmp_path / "all.yaml"
    everything.write_text(yaml.safe_dump({"operators": {}, "include_all_operators": True}))
    with pytest.raises(SelectiveBuildError, match="selects all operators"):
        selective.generate(everything, tmp_path / "gen")
    broken = tmp_path / "broken.yaml"
    broken.write_text("operators: [unclosed\n")
    with pytest.raises(SelectiveBuildError, match="is not valid YAML"):
        selective.generate(broken, tmp_path / "gen")


@pytest.mark.slow  # runs ExecuTorch's codegen on the module's programs
def test_several_programs_get_one_registration_of_their_union(
    ptes: dict[str, Path], tmp_path: Path
) -> None:
    """Several models in one firmware: ONE registration, the union of every program's CPU
    operators (each read independently from its flatbuffer), each kernel once; the kernel
    driver's count (the runtime's MAX_KERNEL_NUM) is the merged one."""
    from executorch_espnn.firmware import kernel_driver
    from executorch_espnn.runtime_sources import default_list_file

    chosen = [ptes["float"], ptes["quant"], ptes["delegated"]]
    union = set().union(*(cpu_operators(p) for p in chosen))
    assert len(union) < sum(len(cpu_operators(p)) for p in chosen)  # add/relu are shared
    info = kernel_driver.write(chosen, default_list_file(), tmp_path / "k")
    assert set(info["operators"]) == union  # type: ignore[arg-type]
    assert info["registered_kernels"] == len(union)
    reg = tmp_path / "k" / selective.REGISTRATION
    found = re.findall(r'Kernel\(\s*"([^"]+)"', reg.read_text())
    assert sorted(found) == sorted(union)  # each kernel once
    files = [tmp_path / "k" / n for n in selective.OUTPUTS]
    obj = compile_registration(files, tmp_path)
    assert undefined_kernels(obj) == {"add_out", "relu_out", "mul_out", "quantize_per_tensor_out",
                                      "dequantize_per_tensor_out", "cumsum_out"}
