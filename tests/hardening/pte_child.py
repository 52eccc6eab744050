"""Child process for test_pte_level.py: load and run many (corrupted) .pte files in one
process and report each outcome as one JSON line, flushed before the next case starts, so a
crash is detected by the parent and pinned to the case that caused it.

    python pte_child.py CASES.json        (ROOT is appended to sys.path by the parent)

CASES.json: [{"name": ..., "pte": path, "input": path of a .npy, "mode": "run"|"load"}]
- "run":  executorch_espnn.host.run(pte, [input])
- "load": ExecuTorch's own loader only (Runtime.load_program + load_method), skipping
          host.run's Python-side parse of the program, so the C++ loader and our init() see
          the corrupted bytes directly.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np


def _one(case: dict[str, Any]) -> dict[str, Any]:
    from executorch_espnn import host
    from executorch_espnn.errors import EspNNError

    pte = Path(case["pte"]).read_bytes()
    x = np.load(case["input"])
    result: dict[str, Any] = {"name": case["name"]}
    try:
        if case["mode"] == "run":
            outs = host.run(pte, [x])
            result["shapes"] = [list(o.shape) for o in outs]
            result["first"] = np.asarray(outs[0]).reshape(-1)[:8].astype(float).tolist()
        else:
            from executorch.runtime import Runtime

            host.load_library()
            program = Runtime.get().load_program(pte)
            program.load_method("forward")
        result["outcome"] = "ok"
    except (EspNNError, RuntimeError, ValueError) as exc:
        result["outcome"] = "error"
        result["type"] = type(exc).__name__
        result["message"] = str(exc)
    return result


def main() -> int:
    cases = json.loads(Path(sys.argv[1]).read_text())
    for case in cases:
        print(json.dumps(_one(case)), flush=True)
    print(json.dumps({"name": "__done__", "outcome": "done"}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
