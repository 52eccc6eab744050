#!/usr/bin/env bash
# Create .venv in the repository root and install the project into it (editable).
# Idempotent: a stamp of the inputs' hash makes a second run return at once.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv="$root/.venv"
py=${PYTHON:-python3.11}
command -v "$py" >/dev/null || py=python3
stamp="$venv/.setup-stamp"
want=$(cat "$root/pyproject.toml" "$root/scripts/setup.sh" | sha256sum | cut -c1-16)
if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
echo "setup: creating $venv" >&2
"$py" -m venv "$venv"
pip=("$venv/bin/python" -m pip --disable-pip-version-check -q)
findlinks=()
[ -d /opt/wheels ] && findlinks=(--find-links /opt/wheels)
# torch first and pinned, so nothing later can resolve it to a CUDA build.
"${pip[@]}" install "${findlinks[@]}" "torch==2.13.0"
"$venv/bin/python" - <<'PY'
import sys, torch
if torch.version.cuda is not None:
    sys.exit(f"setup: got a CUDA torch ({torch.__version__}); install the CPU wheel torch==2.13.0")
PY
"${pip[@]}" install "${findlinks[@]}" -e "$root[dev]"
echo "$want" > "$stamp"
echo "setup: done" >&2
