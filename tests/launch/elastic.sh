#!/usr/bin/env bash
# Lose a node, keep the run: torchrun elastic (`--nnodes 1:2 --max-restarts 3`, c10d rendezvous)
# on 2 namespace nodes x 2 ranks trains the GPT at dp 2 x pp 2 with asynchronous checkpoints
# every 4 steps and `--resume auto`. Every process on n2 is SIGKILLed (a node that dies):
#   after   once step 8's checkpoint is complete
#   during  while step 8's checkpoint is being written (rank 2's shard writer stalled on n2,
#           TRIAX_STALL): that save never completes, and the survivors resume from step 4
# The heartbeat ends n1's ranks at once (job/heartbeat.h), torchrun's agent on n1 restarts them
# in a new rendezvous of the one node left, and they resume from the last complete checkpoint at
# dp 1 (same global batch) and finish the run. Checked: the run completes, at most one
# checkpoint interval is redone, every step's loss equals an uninterrupted run's (dp 2 with
# mpirun) within the resume-at-other-dp tolerance (1e-5 relative), and the time from the loss to
# the first step on the survivors is printed.
# usage: elastic.sh SOURCE_DIR TRIAX WORK CONFIG [--set ...]   (exit 77 without root/namespaces)
set -uo pipefail
SOURCE=$1 TRIAX=$2 WORK=$3 CONFIG=$4
shift 4
export TRIAX_CLUSTER=triax-elastic TRIAX_CLUSTER_NET=10.78.0
CLUSTER=$SOURCE/tools/cluster/ns-cluster.sh

STEPS=16 EVERY=4
"$CLUSTER" up 2 || exit $?
trap '"$CLUSTER" down >/dev/null' EXIT
rm -rf "$WORK"
mkdir -p "$WORK"
ARGS=(train "$CONFIG" "$@" --set parallel.tensor=1 --set parallel.pipeline=2
  --set train.steps=$STEPS --set checkpoint.every=$EVERY --set checkpoint.async=true
  --set checkpoint.keep=0 --set train.log_every=1 --set train.eval_every=0 --set sample.tokens=0)
mpiexec -n 4 "$TRIAX" "${ARGS[@]}" --set run.dir="$WORK/reference" >"$WORK/reference.log" 2>&1 ||
  { cat "$WORK/reference.log"; echo "FAIL: the reference run failed"; exit 1; }
failed=0
for when in after during; do
  RUN=$WORK/$when
  mkdir -p "$RUN"
  stall=""
  [ $when = during ] && stall=checkpoint-shard:120:2:8
  for node in 2 1; do
    "$CLUSTER" on "n$node" env TRIAX_STALL="$stall" torchrun --no_python -r 9:1 -t 9:1 \
      --nnodes 1:2 --nproc_per_node 2 --max_restarts 3 --rdzv_backend c10d \
      --rdzv_endpoint n1:29600 --rdzv_id "triax-elastic-$when" --rdzv_conf last_call_timeout=2 \
      --monitor_interval 0.5 "$TRIAX" "${ARGS[@]}" --set run.dir="$RUN" --resume auto \
      >"$RUN/node$node.log" 2>&1 &
    [ $node = 2 ] && sleep 1
  done
  # n1's torchrun is job %-: wait for the moment to kill n2.
  for _ in $(seq 1 1200); do
    if [ $when = after ]; then
      [ -f "$RUN/checkpoints/step_00000008/manifest.yaml" ] && break
    elif ! jobs %- >/dev/null 2>&1; then
      break
    else
      grep -q "stall point checkpoint-shard" "$RUN/node2.log" 2>/dev/null &&
        [ -f "$RUN/metrics.jsonl" ] && [ "$(wc -l <"$RUN/metrics.jsonl")" -ge 9 ] && break
    fi
    sleep 0.1
  done
  last=$(wc -l <"$RUN/metrics.jsonl" 2>/dev/null || echo 0)
  start=$(date +%s.%N)
  "$CLUSTER" kill n2 >/dev/null
  echo "$when: killed n2 after $last steps (latest: $(cat "$RUN/checkpoints/latest" 2>/dev/null))"
  # The first step after the resume.
  first=""
  for _ in $(seq 1 1800); do
    if grep -q "resumed from" "$RUN/node1.log" && [ -f "$RUN/metrics.jsonl" ]; then
      resumed=$(grep -o "resumed from [^ ]* after step [0-9]*" "$RUN/node1.log" | tail -1 | awk '{print $NF}')
      if [ "$(tail -1 "$RUN/metrics.jsonl" | /usr/bin/python3 -c 'import json,sys; print(json.loads(sys.stdin.read())["step"])' 2>/dev/null)" -gt "$resumed" ] 2>/dev/null; then
        first=$(date +%s.%N)
        break
      fi
    fi
    sleep 0.1
  done
  rc=0
  wait %- || rc=$?
  wait 2>/dev/null
  grep -E "heartbeat: ranks|resumed from|now dp|done:" "$RUN/node1.log" | cut -c1-200
  [ -n "$first" ] || { tail -30 "$RUN/node1.log"; echo "FAIL: $when: no step after the loss"; failed=1; continue; }
  gap=$(awk -v a="$start" -v b="$first" 'BEGIN { printf "%.1f", b - a }')
  want=$([ $when = after ] && echo 8 || echo 4)
  [ "$resumed" = "$want" ] || { echo "FAIL: $when: resumed from step $resumed, expected $want"; failed=1; }
  [ $rc -eq 0 ] || { echo "FAIL: $when: torchrun on n1 exited $rc"; failed=1; }
  grep -q "done: $STEPS steps" "$RUN/node1.log" || { echo "FAIL: $when: the run did not finish"; failed=1; }
  redone=$((last - resumed))
  # After a complete checkpoint at most one interval is redone; a save in flight is lost, so
  # during one, the steps since the previous checkpoint are.
  limit=$([ $when = after ] && echo $EVERY || echo $((2 * EVERY)))
  [ $redone -le $limit ] || { echo "FAIL: $when: $redone steps redone (limit $limit)"; failed=1; }
  /usr/bin/python3 "$(dirname "$0")/compare_losses.py" "$RUN" "$WORK/reference" 1e-5 || { echo "FAIL: $when: losses differ"; failed=1; }
  echo "$when: n2 lost after step $last; resumed from step $resumed at dp 1 ($redone step(s) redone, checkpoint interval $EVERY); first step on the survivors $gap s after the loss"
done
[ $failed -eq 0 ] && echo "PASS: torchrun elastic: a lost node's run finished on the survivors, losses equal to the uninterrupted run"
exit $failed
