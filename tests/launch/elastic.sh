#!/usr/bin/env bash
# Lose a node, keep the run: torchrun elastic (`--nnodes 1:2 --max-restarts 3`, c10d rendezvous)
# on 2 namespace nodes x 2 ranks trains the GPT at dp 2 x pp 2 with asynchronous checkpoints
# every 4 steps and `--resume auto`. Every process on n2 is SIGKILLed (a node that dies):
#   after   once step 8's checkpoint is complete
#   during  while step 8's checkpoint is being written (rank 2's shard writer stalled on n2,
#           TRIAX_STALL): that save never completes, and the survivors resume from step 4
#   grow    as `after`; then, once the survivors train, n2 comes back (its torchrun is started
#           again) while rank 0 is held before step 11 (TRIAX_STALL=step): torchrun's agent on n1
#           sees a node waiting and restarts its workers (SIGTERM: they save step 11 and exit 0),
#           and the job goes on at dp 2 on both nodes from that checkpoint
# The heartbeat ends n1's ranks at once (job/heartbeat.h), torchrun's agent on n1 restarts them
# in a new rendezvous of the one node left, and they resume from the last complete checkpoint at
# dp 1 (same global batch) and finish the run. Checked: the run completes, at most one
# checkpoint interval is redone, every step's loss equals an uninterrupted run's (dp 2 with
# mpirun) within the resume-at-other-dp tolerance (1e-5 relative), and the time from the loss to
# the first step on the survivors (and from n2's return to the first step at dp 2) is printed.
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
  --set train.steps="$STEPS" --set checkpoint.every="$EVERY" --set checkpoint.async=true
  --set checkpoint.keep=0 --set train.log_every=1 --set train.eval_every=0 --set sample.tokens=0)
mpiexec -n 4 "$TRIAX" "${ARGS[@]}" --set run.dir="$WORK/reference" >"$WORK/reference.log" 2>&1 ||
  { cat "$WORK/reference.log"; echo "FAIL: the reference run failed"; exit 1; }
# agent NODE RUN LOG STALL: torchrun's agent on NODE, in the background.
agent() {
  "$CLUSTER" on "n$1" env TRIAX_STALL="$4" torchrun --no_python -r 9:1 -t 9:1 \
    --nnodes 1:2 --nproc_per_node 2 --max_restarts 3 --rdzv_backend c10d \
    --rdzv_endpoint n1:29600 --rdzv_id "triax-elastic-$(basename "$2")" \
    --rdzv_conf last_call_timeout=2 --monitor_interval 0.5 "$TRIAX" "${ARGS[@]}" \
    --set run.dir="$2" --resume auto >"$3" 2>&1 &
  agent_pid=$!
}
# shellcheck source=tests/launch/node_loss_checks.sh
. "$(dirname "$0")/node_loss_checks.sh"

failed=0
for when in after during grow; do
  RUN=$WORK/$when
  mkdir -p "$RUN"
  stall=""
  [ $when = during ] && stall=checkpoint-shard:120:2:8
  agent 2 "$RUN" "$RUN/node2.log" "$stall"
  n2_agent=$agent_pid
  sleep 1
  [ $when = grow ] && stall=step:120:0:11  # world rank 0 (on n1) waits before step 11
  agent 1 "$RUN" "$RUN/node1.log" "$stall"
  n1_agent=$agent_pid
  # Wait for the moment to kill n2.
  for _ in $(seq 1 1200); do
    if [ $when != during ]; then
      [ -f "$RUN/checkpoints/step_00000008/manifest.yaml" ] && break
    elif ! kill -0 "$n1_agent" 2>/dev/null; then
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
  wait "$n2_agent" 2>/dev/null  # killed
  echo "$when: killed n2 after $last steps (latest: $(cat "$RUN/checkpoints/latest" 2>/dev/null))"
  first_step "$RUN/node1.log" "$RUN" 1
  [ -n "$first" ] || { tail -30 "$RUN/node1.log"; echo "FAIL: $when: no step after the loss"; failed=1; continue; }
  gap=$(since "$start" "$first")
  shrunk_from=$resumed
  grew=""
  if [ $when = grow ]; then
    back=$(date +%s.%N)
    agent 2 "$RUN" "$RUN/node2-back.log" ""
    first_step "$RUN/node1.log" "$RUN" 2
    if [ -n "$first" ] && grep -q "now dp 2" "$RUN/node1.log"; then
      grew="; n2 came back after step $((resumed)): the job restarted at dp 2 from step $resumed's checkpoint, first step $(since "$back" "$first") s after n2's torchrun started"
    else
      tail -20 "$RUN/node1.log"
      echo "FAIL: grow: the job did not grow back to dp 2"
      failed=1
    fi
  fi
  rc=0
  wait "$n1_agent" || rc=$?
  wait 2>/dev/null
  grep -E "heartbeat: ranks|resumed from|now dp|done:|stall point|new nodes" "$RUN/node1.log" | cut -c1-200
  if survivor_named_lost "$RUN/node1.log"; then
    echo "FAIL: $when: the heartbeat named a rank on n1, a survivor, as lost"
    failed=1
  fi
  want=$([ $when = during ] && echo 4 || echo 8)
  [ "$shrunk_from" = "$want" ] || { echo "FAIL: $when: resumed from step $shrunk_from, expected $want"; failed=1; }
  [ $rc -eq 0 ] || { echo "FAIL: $when: torchrun on n1 exited $rc"; failed=1; }
  grep -q "done: $STEPS steps" "$RUN/node1.log" || { echo "FAIL: $when: the run did not finish"; failed=1; }
  redone=$((last - shrunk_from))
  # After a complete checkpoint at most one interval is redone; a save in flight is lost, so
  # during one, the steps since the previous checkpoint are.
  limit=$([ $when = during ] && echo $((2 * EVERY)) || echo $EVERY)
  [ $redone -le $limit ] || { echo "FAIL: $when: $redone steps redone (limit $limit)"; failed=1; }
  /usr/bin/python3 "$(dirname "$0")/compare_losses.py" "$RUN" "$WORK/reference" 1e-5 || { echo "FAIL: $when: losses differ"; failed=1; }
  echo "$when: n2 lost after step $last; resumed from step $shrunk_from at dp 1 ($redone step(s) redone, checkpoint interval $EVERY); first step on the survivors $gap s after the loss$grew"
done
[ $failed -eq 0 ] && echo "PASS: torchrun elastic: a lost node's run finished on the survivors (and grew back when it returned), losses equal to the uninterrupted run"
exit $failed
