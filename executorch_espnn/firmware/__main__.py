"""`python -m executorch_espnn.firmware --job job.json`: the model-artifact step's child process.

The builder writes the job (job.py) and runs this with PlatformIO's Python, so that torch is
imported here, never in SCons (builder/espnn_pio/checkout.py runs it with a checkout's package).

Exit codes: 0 ok; 2 the job, the model or the lowering failed (stderr's last line says why);
3 a Python package is missing from PlatformIO's Python (the line gives the pip command).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .artifact import MissingPackages, StepFailure, build_artifacts
from .job import ArtifactJob, JobError

EXIT_FAILED = 2
EXIT_MISSING = 3


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m executorch_espnn.firmware",
                                description=(__doc__ or "").splitlines()[0])
    p.add_argument("--job", type=Path, required=True, help="the job file the builder wrote")
    args = p.parse_args(argv)
    try:
        job = ArtifactJob.read(args.job)
        build_artifacts(job)
    except MissingPackages as exc:
        sys.stderr.write(f"Error: {exc}\n")
        return EXIT_MISSING
    except (JobError, StepFailure) as exc:
        sys.stderr.write(f"Error: {exc}\n")
        return EXIT_FAILED
    return 0


if __name__ == "__main__":
    sys.exit(main())
