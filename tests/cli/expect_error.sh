#!/bin/bash
# expect_error.sh RANKS MESSAGE MPIEXEC|- TRIAX ARGS...
# Passes when the command exits non-zero within the time limit and every one of RANKS ranks
# printed an "error:" line containing MESSAGE. RANKS=0 runs TRIAX directly (one process).
set -u
ranks=$1 message=$2
shift 2
if [ "$ranks" -gt 0 ]; then
  mpiexec=$1
  shift
  cmd=("$mpiexec" -n "$ranks" "$@")
else
  cmd=("$@")
fi
output=$(timeout 30 "${cmd[@]}" 2>&1)
code=$?
echo "$output"
expected=$((ranks > 0 ? ranks : 1))
if [ "$code" -eq 0 ]; then
  echo "FAIL: exit code 0, expected non-zero" >&2
  exit 1
fi
if [ "$code" -eq 124 ]; then
  echo "FAIL: still running after 30 s (a hang)" >&2
  exit 1
fi
count=$(grep -F -- "error:" <<<"$output" | grep -cF -- "$message")
if [ "$count" -ne "$expected" ]; then
  echo "FAIL: $count of $expected ranks printed an error with: $message" >&2
  exit 1
fi
if grep -qE 'terminate called|Segmentation|Aborted|core dumped' <<<"$output"; then
  echo "FAIL: a crash instead of a clean error" >&2
  exit 1
fi
echo "PASS: exit code $code, $count rank(s) reported: $message"
