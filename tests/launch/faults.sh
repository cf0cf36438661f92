#!/usr/bin/env bash
# Injected faults under mpirun (Note [Fault injection]): a stopped rank (SIGSTOP), a killed rank
# (SIGKILL), a dropped pipeline send and a skipped collective must each end the whole job
# non-zero within comm.timeout_s + 10 s of the fault (the faulting rank prints the Unix time it
# struck; the launch's start-up, seconds of Python under torchrun, is reported, not judged), and
# `triax flight` must name the culprit rank; an error raised on one rank must be printed by that
# rank every time (4 runs, one per rank).
# With LAUNCHER=torchrun the same runs go through a real torchrun (tcp backend, Gloo's deadline).
# usage: faults.sh WORK MPIEXEC|torchrun TRIAX CONFIG [--set ...]
set -uo pipefail
WORK=$1 LAUNCHER=$2 TRIAX=$3 CONFIG=$4
shift 4
if [ "$(basename "$LAUNCHER")" = torchrun ]; then
  # Python 3.11's torchrun needs -r/-t (ENVIRONMENT.md); --standalone: a store on 127.0.0.1.
  LAUNCH=(torchrun --no_python -r 9:1 -t 9:1 --standalone --nproc_per_node=4)
else
  LAUNCH=("$LAUNCHER" -n 4)
fi
TIMEOUT=10
rm -rf "$WORK"
mkdir -p "$WORK"
failed=0
fail() { echo "FAIL: $*"; failed=1; }

# run NAME FAULT -> sets rc, seconds (launch to end), after_fault (fault to end, "" when the log
# has no fault line); output in $WORK/NAME.log
run() {
  local start end struck name=$1 fault=$2
  shift 2
  start=$(date +%s.%N)
  TRIAX_FAULT=$fault "${LAUNCH[@]}" "$TRIAX" train "$CONFIG" "$@" --set comm.timeout_s=$TIMEOUT \
    --set run.dir="$WORK/$name" --set sample.tokens=0 >"$WORK/$name.log" 2>&1
  rc=$?
  end=$(date +%s.%N)
  seconds=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }')
  struck=$(sed -n 's/.*fault injection: .*, at \([0-9.]*\) (Unix time).*/\1/p' "$WORK/$name.log" | head -1)
  after_fault=""
  [ -n "$struck" ] && after_fault=$(awk -v a="$struck" -v b="$end" 'BEGIN { printf "%.2f", b - a }')
}

printf '%-16s %-6s %-8s %-8s %s\n' fault exit launch+ fault+ verdict
for case in "stop:3:3 3" "kill:2:3 2" "skip-send:0:3 0" "skip-collective:3:3 3"; do
  read -r fault culprit <<<"$case"
  name=${fault%%:*}
  # The stopped rank with the heartbeat off (comm.heartbeat_s: 0): comm.timeout_s alone ends it.
  extra=()
  [ "$name" = stop ] && extra=(--set comm.heartbeat_s=0)
  run "$name" "$fault" "$@" "${extra[@]}"
  sleep 3  # the death watchers (job/death_watch.h) give each other 2 s
  "$TRIAX" flight "$WORK/$name" >"$WORK/$name.flight" 2>&1
  verdict=$(grep -m1 '^verdict' "$WORK/$name.flight")
  printf '%-16s %-6s %-8.1f %-8s %s\n' "$name" "$rc" "$seconds" "${after_fault:--}" "$verdict"
  [ "$rc" -ne 0 ] || fail "$name: exit 0"
  if [ -z "$after_fault" ]; then
    fail "$name: rank $culprit printed no fault injection line"
  else
    awk -v s="$after_fault" -v t="$TIMEOUT" 'BEGIN { exit !(s <= t + 10) }' ||
      fail "$name: the job ended ${after_fault}s after the fault"
  fi
  grep -q "^verdict: rank $culprit " "$WORK/$name.flight" || {
    fail "$name: triax flight does not name rank $culprit"
    cat "$WORK/$name.flight"
  }
done
grep -q "error: waited .* s .*for recv from rank 3" "$WORK/stop.log" ||
  fail "stop: no survivor named the rank it waited for"
grep -q "rank 3: NO FLIGHT RECORD" "$WORK/stop.log" || fail "stop: rank 0's summary lacks rank 3"
if grep -q "heartbeat:" "$WORK/stop.log"; then fail "stop: a heartbeat ran with comm.heartbeat_s: 0"; fi
grep -q "the send was dropped" "$WORK/skip-send.flight" || fail "skip-send: pair not named"
grep -q "it skipped the collective" "$WORK/skip-collective.flight" ||
  fail "skip-collective: not named"

# One run per rank raising (i % 4: ranks 1, 2, 3, 0).
RUNS=4
printed=0
for i in $(seq 1 $RUNS); do
  r=$((i % 4))
  run error "error:$r:2" "$@" --set train.steps=3
  [ "$rc" -ne 0 ] || fail "error on rank $r: exit 0"
  grep -q "^\[rank $r [^]]*\] error: injected error on rank $r" "$WORK/error.log" &&
    printed=$((printed + 1))
done
echo "error raised on one rank: its message printed in $printed of $RUNS runs"
[ "$printed" -eq $RUNS ] || fail "an error message was lost"
[ "$failed" -eq 0 ] &&
  echo "PASS ($(basename "$LAUNCHER")): every fault ended the job within comm.timeout_s + 10 s of it and was named"
exit "$failed"
