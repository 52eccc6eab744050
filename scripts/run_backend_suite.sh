#!/usr/bin/env bash
# Run ExecuTorch's backend operator test suite (shipped in the executorch wheel, unmodified)
# against the espnn flow and, for comparison, XNNPACK's static int8 per-channel flow; print
# the summary and write the results (one JSON-lines file per flow, results.md, summary.json).
#
#   scripts/run_backend_suite.sh                    # every operator file, both flows (~1 h on 2 cores)
#   scripts/run_backend_suite.sh -f espnn test_conv2d.py test_add.py
#   scripts/run_backend_suite.sh -o /tmp/suite -k depthwise
#
# Options: -o DIR (default build/backend-suite), -f "FLOW ..." (default
# "espnn xnnpack_static_int8_per_channel"), -k EXPR (pytest -k), -s SEED (input seed, default 0).
# Positional arguments: operator test files (default: all operators/test_*.py).
# Exit status: 0 when every espnn test passed, fell back with a reason and matched, or is a
# listed known failure; 1 otherwise (a failure, a crash, an unverified pass).
# Environment: PYTHON (default: .venv/bin/python of the checkout, else python3),
# ESPNN_CACHE_DIR (where the host delegate library is built).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out="$root/build/backend-suite"
flows="espnn xnnpack_static_int8_per_channel"
kexpr=""
seed=0
while getopts "o:f:k:s:h" opt; do
  case $opt in
    o) out=$OPTARG ;;
    f) flows=$OPTARG ;;
    k) kexpr=$OPTARG ;;
    s) seed=$OPTARG ;;
    h) sed -n '2,18p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) exit 2 ;;
  esac
done
shift $((OPTIND - 1))

python=${PYTHON:-}
if [ -z "$python" ]; then
  if [ -x "$root/.venv/bin/python" ]; then python="$root/.venv/bin/python"; else python=python3; fi
fi
suite=$("$python" -P -c 'import os, executorch.backends.test.suite as s; print(os.path.dirname(s.__file__))')
files=()
if [ $# -eq 0 ]; then
  files=("$suite"/operators/test_*.py)
else
  for f in "$@"; do
    case $f in
      /*) files+=("$f") ;;
      *) files+=("$suite/operators/$(basename "$f")") ;;
    esac
  done
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"

results=()
for flow in $flows; do
  jsonl="$out/$flow.jsonl"
  args=(-P -m pytest -p executorch_espnn.testing.suite_plugin -p no:cacheprovider
        --rootdir "$root" --basetemp "$out/tmp-$flow" -q -o console_output_style=classic
        -m "flow_$flow" --espnn-suite-json "$jsonl" --espnn-seed "$seed")
  [ -n "$kexpr" ] && args+=(-k "$kexpr")
  echo "== $flow: ${#files[@]} operator files -> $jsonl" >&2
  start=$(date +%s)
  # a native crash ends pytest; the JSON-lines file still names the test that was running
  "$python" "${args[@]}" "${files[@]}" > "$out/$flow.log" 2>&1 || true
  echo "== $flow: $(( $(date +%s) - start )) s; log: $out/$flow.log" >&2
  tail -n 3 "$out/$flow.log" >&2
  results+=("$jsonl")
done

"$python" -P -m executorch_espnn.testing.report "${results[@]}" \
  --markdown "$out/results.md" --json "$out/summary.json" --check espnn
