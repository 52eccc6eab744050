"""What the per-layer profiler costs: host instructions per inference with profiling off and on,
counted by callgrind (deterministic), for zoo models.

    python -m benchmarks.profile_cost [--models ds_cnn_kws mobilenet_v2_0.35_96] [--work DIR]

Two standalone runners (espnn_component/runtime/host_runner.cpp, EspnnModel over ExecuTorch's
runtime) are built per model from the same generated header: one without the profiler, one with
CONFIG_ESPNN_ET_PROFILE=1 in the Kconfig header the host and Arduino builds put on the include
path (what custom_executorch_profile = yes does).  The profiling runner's header carries the
layer table (lower(..., profile=True)); the program bytes are the same.  Only
EspnnModel::invoke is counted, one inference being (two invocations) - (one), as in
benchmarks/callgrind.py.  The profiling build reads the host's clock (clock_gettime, a vDSO call)
twice per op plus a few times per delegate call; a chip's cycle counter is one instruction, so
the host figure is an upper bound of the on-chip cost.  "Off" costs nothing by construction (no
counting code is compiled: tests/test_profile.py checks the engine object's symbols).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
from pathlib import Path

from benchmarks import callgrind as cg

ROOT = Path(__file__).resolve().parents[1]
COMPONENT = ROOT / "espnn_component"
DEFAULT_MODELS = ("ds_cnn_kws",)


def build_runner(build_dir: Path, model_dir: Path, kconfig_dir: Path | None, log: Path) -> Path:
    from executorch_espnn import host

    tc = host.find_toolchain()
    env = dict(os.environ, CXX=str(tc.cxx))
    if tc.cc is not None:
        env["CC"] = str(tc.cc)
    flags = "-g" + (f" -I{kconfig_dir}" if kconfig_dir is not None else "")
    configure = [str(tc.cmake), "-S", str(COMPONENT), "-B", str(build_dir), "-G", tc.generator,
                 "-DCMAKE_BUILD_TYPE=Release", f"-DCMAKE_C_FLAGS={flags}", f"-DCMAKE_CXX_FLAGS={flags}",
                 f"-DCMAKE_PREFIX_PATH={host.executorch_dir()}", f"-DESPNN_MODEL_DIR={model_dir}"]
    build = [str(tc.cmake), "--build", str(build_dir), "--target", "espnn_runner", "--parallel", "2"]
    for cmd in (configure, build):
        with log.open("a") as out:
            proc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, check=False)
        if proc.returncode != 0:
            raise SystemExit(f"building the runner failed: see {log}")
    return build_dir / "espnn_runner"


def measure_model(key: str, work: Path) -> tuple[int, int, int, int]:
    """(instructions off, instructions on, delegated ops, delegate calls)."""
    import executorch_espnn as ee
    from devkit.model_files import render_model
    from devkit.zoo import ZOO

    z = ZOO[key]
    lm = ee.lower(z.model(), z.example_inputs(), z.calibration_data(8), profile=True)
    assert lm.profile is not None
    kc = work / key / "kconfig"
    kc.mkdir(parents=True, exist_ok=True)
    (kc / "espnn_sdkconfig.h").write_text("#define CONFIG_ESPNN_ET_PROFILE 1\n")
    log = work / key / "build.log"
    off = build_runner(work / key / "build-off", render_model(lm.pte, work / key / "off"), None, log)
    on = build_runner(work / key / "build-on",
                      render_model(lm.pte, work / key / "on", profile=lm.profile.to_dict()), kc, log)
    c_off = cg.measure(off, work / key / "cg-off")
    c_on = cg.measure(on, work / key / "cg-on")
    return c_off.instructions, c_on.instructions, len(lm.profile.layers), lm.profile.n_partitions


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", nargs="+", default=list(DEFAULT_MODELS), help="devkit.zoo keys")
    ap.add_argument("--work", type=Path, default=None, help="build folder (default: a temporary one)")
    args = ap.parse_args(argv)
    if cg.valgrind_version() is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    work = args.work or Path(tempfile.mkdtemp(prefix="profile_cost-"))
    print(f"{'model':28} {'ops':>4} {'calls':>5} {'instr off':>12} {'instr on':>12} {'added':>9} {'per op':>7} {'ratio':>7}")
    for key in args.models:
        off, on, ops, calls = measure_model(key, work)
        added = on - off
        print(f"{key:28} {ops:4} {calls:5} {off:12,} {on:12,} {added:9,} {added / ops:7.1f} {on / off:7.4f}",
              flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
