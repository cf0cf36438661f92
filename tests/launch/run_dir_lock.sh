#!/usr/bin/env bash
# One run.dir, one running job (job/run_dir_lock.h): while a job trains, a second job on the same
# run.dir is refused on every rank before it writes anything — the first job's metrics.jsonl
# stays one run's parsable records — and once the first job has ended the folder is free again.
# usage: run_dir_lock.sh WORK EXPECT_ERROR MPIEXEC TRIAX CONFIG [--set ...]
set -euo pipefail
WORK=$1 EXPECT=$2 MPIEXEC=$3 TRIAX=$4 CONFIG=$5
shift 5
RUN=$WORK/shared
rm -rf "$WORK" && mkdir -p "$WORK"
ONE=(--set parallel.tensor=1 --set parallel.pipeline=1 --set run.dir="$RUN" --set sample.tokens=0)
"$MPIEXEC" -n 2 "$TRIAX" train "$CONFIG" "$@" "${ONE[@]}" --set train.steps=100000 \
  --set train.log_every=1 >"$WORK/first.txt" 2>&1 &
first=$!
trap 'kill -TERM "$first" 2>/dev/null || true' EXIT
for _ in $(seq 1 300); do  # up to 30 s for the first job's first step
  [ -s "$RUN/metrics.jsonl" ] && break
  sleep 0.1
done
[ -s "$RUN/metrics.jsonl" ] || { cat "$WORK/first.txt"; echo "FAIL: the first job never trained"; exit 1; }
snapshot=$(find "$RUN" -path "$RUN/metrics.jsonl" -prune -o -path "$RUN/flight" -prune -o -type f -printf '%p %T@\n' | sort)
"$EXPECT" 2 "is in use by a running job (pid" "$MPIEXEC" -n 2 "$TRIAX" train "$CONFIG" "$@" \
  "${ONE[@]}" --set train.steps=2
# Nothing the second job could have written changed (the first job writes only metrics and
# its flight records while it trains).
after=$(find "$RUN" -path "$RUN/metrics.jsonl" -prune -o -path "$RUN/flight" -prune -o -type f -printf '%p %T@\n' | sort)
[ "$snapshot" = "$after" ] || { diff <(echo "$snapshot") <(echo "$after"); echo "FAIL: the refused job wrote"; exit 1; }
kill -TERM "$first"
wait "$first" || true
trap - EXIT
/usr/bin/python3 - "$RUN/metrics.jsonl" <<'PY'
import json, sys
steps = [json.loads(line)["step"] for line in open(sys.argv[1]) if line.strip() and '"step"' in line]
assert steps == sorted(steps) and len(steps) == len(set(steps)), steps
print(f"metrics.jsonl: {len(steps)} records of one run, all parsable")
PY
"$MPIEXEC" -n 2 "$TRIAX" train "$CONFIG" "$@" "${ONE[@]}" --set train.steps=2 \
  --set run.dir="$RUN" 2>&1 | grep -E "done:"
echo "PASS: the second job was refused while the first ran; the folder was free after"
