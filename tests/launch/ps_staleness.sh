#!/usr/bin/env bash
# Asynchronous parameter servers (parameter_server.staleness, docs/parameter_server.md): 2 workers
# and 1 dedicated server, world rank 1 (worker 1) held 0.3 s before every step (TRIAX_STALL).
#  1. The fast worker runs ahead of the slow one, but never by more than S steps: the server,
#     which answers a worker only within the bound, reports the furthest lead it allowed, which
#     must be S exactly (reached, not exceeded) at S = 1 and 2 with each push applied alone
#     (apply: auto = push, with the look-ahead), and at S = 1 with one update per step (apply:
#     step, without the look-ahead); the workers meet
#     at every logged step (their loss there is the global batch's), and the run ends with its
#     checkpoint.
#  2. apply: step makes the synchronous update: with the workers meeting at every step (each
#     logged) nothing is stale, and 12 steps under layout-invariant numerics are bit-identical to
#     synchronous servers (every loss, the held-out loss, the checkpoint).
# usage: ps_staleness.sh WORK MPIEXEC TRIAX CONFIG [--set ...]
set -euo pipefail
WORK=$1 MPIEXEC=$2 TRIAX=$3 CONFIG=$4
shift 4
. "$(dirname "$0")/ps_checks.sh"
rm -rf "$WORK"
mkdir -p "$WORK"
common=(--set parallel.tensor=1 --set parallel.pipeline=1 --set train.steps=24
  --set train.micro_batch=4 --set train.log_every=12 --set train.eval_every=24
  --set train.eval_batches=2 --set sample.tokens=0 --set comm.timeout_s=120
  --set ddp.mode=parameter_server)
for case in 1:auto:true 2:auto:true 1:step:false; do
  IFS=: read -r s apply look <<<"$case"
  TRIAX_STALL=step:0.3:1 timeout 300 "$MPIEXEC" -n 3 "$TRIAX" train "$CONFIG" "$@" "${common[@]}" \
    --set parameter_server.staleness="$s" --set parameter_server.apply="$apply" \
    --set parameter_server.look_ahead="$look" \
    --set run.dir="$WORK/s${s}_$apply" >"$WORK/s${s}_$apply.log" 2>&1 ||
    { tail -30 "$WORK/s${s}_$apply.log"; echo "FAIL: staleness $s"; exit 1; }
  log=$WORK/s${s}_$apply.log
  grep -h "asynchronous" "$log" | head -1
  lead=$(sed -nE 's/.*the furthest a worker ran ahead of the slowest: ([0-9]+) step.*/\1/p' \
    "$log")
  [ "$lead" = "$s" ] ||
    { grep -E "furthest|done:" "$log"; echo "FAIL: furthest lead '$lead', staleness $s"; exit 1; }
  grep -q "done: 24 steps" "$log" || { echo "FAIL: staleness $s did not finish"; exit 1; }
  [ -f "$WORK/s${s}_$apply/checkpoints/step_00000024/manifest.yaml" ] ||
    { echo "FAIL: no checkpoint of step 24"; exit 1; }
  echo "ok: staleness $s, apply $apply: the fast worker ran $lead step(s) ahead of the slow one, no further"
done

# 2. apply: step with a meeting at every step = synchronous servers, bit for bit.
same=(--set train.steps=12 --set train.log_every=1 --set train.eval_every=12 --set checkpoint.every=12
  --set train.numerics=layout_invariant)
for s in 0 1; do
  TRIAX_STALL=step:0.1:1 timeout 300 "$MPIEXEC" -n 3 "$TRIAX" train "$CONFIG" "$@" "${common[@]}" \
    "${same[@]}" --set parameter_server.staleness="$s" --set parameter_server.apply=step \
    --set run.dir="$WORK/same$s" >"$WORK/same$s.log" 2>&1 ||
    { tail -30 "$WORK/same$s.log"; echo "FAIL: apply step, staleness $s"; exit 1; }
done
/usr/bin/python3 "$(dirname "$0")/compare_losses.py" "$WORK/same1" "$WORK/same0" 0
same_val same1 same0
same_checkpoint same1 same0 12
echo "ok: apply step, meeting every step: bit-identical to synchronous servers"
echo "PASS: ps_staleness"
