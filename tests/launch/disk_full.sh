#!/usr/bin/env bash
# A full disk during a run: run.dir on a 16 KiB tmpfs (in a mount namespace of this test, gone
# with it) fills while metrics.jsonl grows. The run must stop non-zero, naming the file and the
# OS's reason, instead of exiting 0 with the metrics silently cut short.
# usage: disk_full.sh WORK MPIEXEC TRIAX CONFIG [--set ...]   (needs root: skipped otherwise)
set -uo pipefail
WORK=$1 MPIEXEC=$2 TRIAX=$3 CONFIG=$4
shift 4
if [ "$(id -u)" -ne 0 ]; then echo "SKIPPED: mounting a small tmpfs needs root"; exit 77; fi
rm -rf "$WORK"
mkdir -p "$WORK"
unshare -m sh -c 'mount -t tmpfs -o size=16k tmpfs "$0" && exec "$@"' "$WORK" \
  "$MPIEXEC" -n 4 "$TRIAX" train "$CONFIG" "$@" --set train.steps=200 --set train.log_every=0 \
  --set train.eval_every=0 --set sample.tokens=0 --set checkpoint.at_end=false \
  --set run.dir="$WORK/run" >"$WORK.log" 2>&1
rc=$?
grep -E "error" "$WORK.log" | head -3
[ "$rc" -ne 0 ] || { echo "FAIL: exit 0 on a full disk"; exit 1; }
grep -q "metrics.jsonl: cannot write the metrics (run.dir): No space left on device" "$WORK.log" ||
  { echo "FAIL: the message does not name the file and the reason"; exit 1; }
echo "PASS: a full disk stopped the run (exit $rc), naming metrics.jsonl and ENOSPC"
