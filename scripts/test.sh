#!/usr/bin/env bash
# Set everything up, then run the whole test suite.  Extra arguments go to pytest
# (e.g. `-m "not slow"` for the quick unit tests only).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$root/scripts/setup.sh"
cd "$root"
exec "$root/.venv/bin/python" -m pytest "$@"
