"""The kernel step's subprocess: the CPU kernels a firmware with ExecuTorch's runtime from sources
needs for one model.

Run by the builder (kernels.py) as `$PYTHONEXE -m executorch_espnn.firmware.kernel_driver --pte
model.pte [--pte ...] --list <espnn_component>/cmake/executorch_runtime.cmake --out
$BUILD_DIR/executorch/kernels` (through builder/espnn_pio/checkout.py, so a platform checkout's
package), so that ExecuTorch's codegen runs in a child process.  Writes only into --out:

    selected_operators.yaml, RegisterCodegenUnboxedKernels.cpp, RegisterKernels.h,
    NativeFunctions.h, Functions.h   executorch_espnn.selective.generate (the registration)
    kernels.json                      operators, registered kernel count, kernel sources (SCons)
    kernels.cmake                     the same as CMake variables (the ESP-IDF `executorch`
                                      component includes it)

The kernel sources are those of the one runtime source list (runtime_sources.kernel_sources);
they are relative to an ExecuTorch tree, which this step does not need.

Exit codes: 0 ok; 2 the registration or the kernel lookup failed (stderr's last line says why).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

CMAKE_TEMPLATE = "executorch_kernels.cmake.j2"
JSON_NAME = "kernels.json"
CMAKE_NAME = "kernels.cmake"
EXIT_FAILED = 2


def write(ptes: Path | list[Path], list_file: Path, out: Path) -> dict[str, object]:
    """Generate everything of the module doc into `out`; returns what kernels.json holds.
    Several programs (several models in one firmware) get ONE registration: the union of
    their CPU operators, so MAX_KERNEL_NUM is the merged count."""
    from .. import rendering, runtime_sources, selective

    ptes = ptes if isinstance(ptes, list) else [ptes]
    if len(ptes) == 1:
        files = selective.generate(ptes[0], out)
    else:
        merged = out / "merged_operators.yaml"
        selective.merge_selections(ptes, merged)
        files = selective.generate(merged, out)
    operators = selective.selected_operators(files[0])
    registered = len(selective.registered_kernels(files[1]))
    lists = runtime_sources.load(list_file)
    info: dict[str, object] = {
        "operators": operators,
        "registered_kernels": registered,
        "kernel_sources": list(lists.kernel_sources(operators)),
        "registration": files[1].name,
    }
    rendering.write_if_changed(out / CMAKE_NAME, rendering.render(CMAKE_TEMPLATE, **info))
    (out / JSON_NAME).write_text(json.dumps(info, indent=1), encoding="utf8")
    return info


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pte", type=Path, action="append", required=True,
                   help="a model's .pte (repeat for several models in one firmware)")
    p.add_argument("--list", type=Path, required=True, help="executorch_runtime.cmake")
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    from ..errors import EspNNError

    args.out.mkdir(parents=True, exist_ok=True)
    try:
        info = write(args.pte, args.list, args.out)
    except EspNNError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        sys.stderr.write(f"Error: {first}\n")
        return EXIT_FAILED
    ops = info["operators"]
    assert isinstance(ops, list)
    print(f"executorch: {len(ops)} CPU operator(s) registered for the firmware"
          + (f" ({', '.join(ops)})" if ops else ""), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
