#!/usr/bin/env bash
# Shared by the parameter-server tests (parameter_server.sh, ps_model_parallel.sh,
# ps_staleness.sh), sourced after they set WORK, MPIEXEC, TRIAX, CONFIG and extra (their
# trailing --set arguments); RUN_CONFIG, when set, replaces CONFIG for one run.
# NAME RANKS [--set ...]: one run into $WORK/NAME.
run() {
  local name=$1 ranks=$2
  shift 2
  timeout 300 "$MPIEXEC" -n "$ranks" "$TRIAX" train "${RUN_CONFIG:-$CONFIG}" "${extra[@]}" "$@" \
    --set run.dir="$WORK/$name" \
    >"$WORK/$name.log" 2>&1 || { tail -30 "$WORK/$name.log"; echo "FAIL: $name"; exit 1; }
}
# NAME REFERENCE STEP: NAME's checkpoint of STEP is REFERENCE's, byte for byte.
same_checkpoint() {
  local dir
  dir=checkpoints/$(printf 'step_%08d' "$3")
  local files=0
  for f in "$WORK/$2/$dir"/*.safetensors; do
    files=$((files + 1))
    cmp -s "$f" "$WORK/$1/$dir/$(basename "$f")" ||
      { echo "FAIL: $1's $(basename "$f") of step $3 differs from $2's"; exit 1; }
  done
  [ "$files" -gt 0 ] || { echo "FAIL: $2 has no checkpoint of step $3"; exit 1; }
}
same_val() {
  /usr/bin/python3 - "$WORK/$1/metrics.jsonl" "$WORK/$2/metrics.jsonl" <<'PY'
import json, sys
val = [[r["val_loss"] for r in map(json.loads, filter(str.strip, open(p))) if "val_loss" in r]
       for p in sys.argv[1:]]
assert val[0] and val[0] == val[1], f"held-out loss {val[0]} vs {val[1]}"
PY
}
