#!/usr/bin/env bash
# Set everything up (the Debian packages the tests need, then .venv), then run the whole test
# suite on two workers.  Extra arguments go to pytest (e.g. `-m "not slow"` for the quick unit
# tests only; `-n 0` for one process; ESPNN_TEST_WORKERS=4 for more workers).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$root/scripts/debian_packages.sh"
bash "$root/scripts/setup.sh"
cd "$root"
# --dist loadfile: a file's tests share one worker, so its module fixtures (the wheel's venv, a
# built example, a sanitizer build) are made once, not once per worker; --no-loadscope-reorder:
# files go out in collection order, which tests/conftest.py starts with the longest ones
workers=(-n "${ESPNN_TEST_WORKERS:-2}" --dist loadfile --no-loadscope-reorder)
for arg in "$@"; do
  case "$arg" in -n|-n*|--numprocesses|--numprocesses=*|no:xdist) workers=() ;; esac
done
# one intra-op thread per worker: two workers on two cores, each with torch's default of one
# thread per core, oversubscribe the machine (tests/test_partitioner.py: 7 % more CPU time)
if [ ${#workers[@]} -gt 0 ]; then export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}; fi
exec "$root/.venv/bin/python" -m pytest "${workers[@]}" "$@"
