#!/bin/bash
# refused_writes_nothing.sh COMMAND...: COMMAND, given a fresh run.dir and checkpoint.dir, must be
# refused (exit 2) within 30 s and leave neither folder behind: a run refused at start-up writes
# nothing (job/job_start.h: outputs are claimed only once everything else is accepted).
set -u
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
timeout 30 "$@" --set run.dir="$d/run" --set checkpoint.dir="$d/ckpt"
code=$?
if [ "$code" -ne 2 ]; then
  echo "FAIL: exit code $code, expected 2 (refused at start-up)" >&2
  exit 1
fi
if [ -e "$d/run" ] || [ -e "$d/ckpt" ]; then
  echo "FAIL: the refused run left behind: $(cd "$d" && find . -mindepth 1 | tr '\n' ' ')" >&2
  exit 1
fi
echo "refused with exit 2; nothing written"
