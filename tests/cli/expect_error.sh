#!/bin/bash
# expect_error.sh COUNT MESSAGE COMMAND...
# Passes when COMMAND exits non-zero within 30 s, without a crash, and exactly COUNT "error:"
# lines (one per rank) contain MESSAGE. Exits 77 (CTest: skipped) when COMMAND's program is
# not installed.
set -u
count_expected=$1 message=$2
shift 2
if ! command -v "$1" >/dev/null 2>&1; then
  echo "SKIPPED: $1 is not installed"
  exit 77
fi
output=$(timeout 30 "$@" 2>&1)
code=$?
echo "$output"
if [ "$code" -eq 0 ]; then
  echo "FAIL: exit code 0, expected non-zero" >&2
  exit 1
fi
if [ "$code" -eq 124 ]; then
  echo "FAIL: still running after 30 s (a hang)" >&2
  exit 1
fi
count=$(grep -F -- "error:" <<<"$output" | grep -cF -- "$message")
if [ "$count" -ne "$count_expected" ]; then
  echo "FAIL: $count of $count_expected ranks printed an error with: $message" >&2
  exit 1
fi
if grep -qE 'terminate called|Segmentation fault|core dumped|BAD TERMINATION' <<<"$output"; then
  echo "FAIL: a crash instead of a clean error" >&2
  exit 1
fi
echo "PASS: exit code $code, $count rank(s) reported: $message"
