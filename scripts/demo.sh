#!/usr/bin/env bash
# The README's main command: set up everything, then lower, build and run the keyword-spotting
# example on the host board (this computer): lowering progress, the build report (operators on
# ESP-NN vs the CPU, arena/planned/weights bytes, RAM) and what the sketch prints.
#
#   bash scripts/demo.sh                 # = cd examples/keyword_spotting && pio run -e host -t exec
#   bash scripts/demo.sh -e esp32dev     # extra arguments go to `pio run` (a board needs espressif32)
#
# Works offline once the Python packages are installed: PlatformIO's SCons package is seeded from
# the pip one (scripts/seed_platformio.sh) and the host board needs no PlatformIO package.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$root/scripts/setup.sh"
PYTHON="$root/.venv/bin/python" bash "$root/scripts/seed_platformio.sh"
cd "$root/examples/keyword_spotting"
if [ "$#" -eq 0 ]; then
  set -- -e host -t exec
fi
exec "$root/.venv/bin/pio" run "$@"
