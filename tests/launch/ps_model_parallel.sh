#!/usr/bin/env bash
# Parameter servers at tp 2 x pp 2 (docs/parameter_server.md, "With tensor and pipeline
# parallelism"): one server group per model position, the servers summing what model
# parallelism sums after the average (sequence-parallel gradients over the tp positions' servers,
# the tied embedding over the first and last stages' servers) and taking the norm over all of
# them. The main job's GPT (tied embeddings), 8 steps under layout-invariant numerics, against
# all-reduce DDP at dp 2 with the same layout:
#  1. without sequence parallelism, 2 workers + 1 dedicated server per position (12 ranks);
#  2. with it: dedicated (12 ranks), colocated with 2 servers per position (8 ranks), and
#     asynchronous with one update per step (apply: step) meeting every step (12 ranks);
# every loss, the held-out loss and the checkpoints of steps 4 and 8 (every position's file)
# bit-identical to DDP's; 3. asynchronous with one replica held back and meetings at steps 4 and 8
# only: finishes, every position's servers letting the fast replica run exactly 1 step ahead;
# 4. DDP resumes the servers' step-4 checkpoint and continues bit for bit.
# usage: ps_model_parallel.sh WORK MPIEXEC TRIAX CONFIG [--set ...]
set -euo pipefail
WORK=$1 MPIEXEC=$2 TRIAX=$3 CONFIG=$4
shift 4
extra=("$@")
here=$(dirname "$0")
rm -rf "$WORK"
mkdir -p "$WORK"
common=(--set parallel.tensor=2 --set parallel.pipeline=2 --set train.steps=8
  --set train.micro_batch=4 --set train.log_every=4 --set train.eval_every=8
  --set train.eval_batches=2 --set sample.tokens=0 --set checkpoint.every=4
  --set checkpoint.keep=0 --set train.numerics=layout_invariant --set comm.timeout_s=120)
ps=(--set ddp.mode=parameter_server)
sp=(--set parallel.sequence=true)
. "$(dirname "$0")/ps_checks.sh"
# NAME REFERENCE: NAME's losses, held-out loss and checkpoints of steps 4 and 8 (all four
# positions' files) are REFERENCE's.
same_run() {
  /usr/bin/python3 "$here/compare_losses.py" "$WORK/$1" "$WORK/$2" 0
  same_val "$1" "$2"
  same_checkpoint "$1" "$2" 4
  same_checkpoint "$1" "$2" 8
  [ "$(ls "$WORK/$1/checkpoints/step_00000008"/*.safetensors | wc -l)" = 4 ] ||
    { echo "FAIL: $1 does not have 4 positions' checkpoint files"; exit 1; }
}

run ddp 8 "${common[@]}"
run dedicated 12 "${common[@]}" "${ps[@]}"
grep -h "parameter servers:" "$WORK/dedicated.log" | head -1
same_run dedicated ddp
echo "ok: tp 2 x pp 2, dedicated: bit-identical to all-reduce DDP"

run sp_ddp 8 "${common[@]}" "${sp[@]}"
run sp_dedicated 12 "${common[@]}" "${sp[@]}" "${ps[@]}"
same_run sp_dedicated sp_ddp
echo "ok: sequence parallel, dedicated: bit-identical to all-reduce DDP"
run sp_colocated 8 "${common[@]}" "${sp[@]}" "${ps[@]}" --set parameter_server.placement=colocated \
  --set parameter_server.servers=2
same_run sp_colocated sp_ddp
echo "ok: sequence parallel, colocated with 2 servers per position: bit-identical to all-reduce DDP"
TRIAX_STALL=step:0.1:1 run sp_step 12 "${common[@]}" "${sp[@]}" "${ps[@]}" \
  --set parameter_server.staleness=1 --set parameter_server.apply=step --set train.log_every=1
same_run sp_step sp_ddp
echo "ok: sequence parallel, asynchronous with apply step meeting every step: bit-identical"

# Asynchronous at tp x pp for real: one replica held back (world rank 1, 0.3 s a step), meetings
# only at steps 4 and 8; apply: auto is step here, and every position's server lets the fast
# replica run exactly 1 step ahead.
TRIAX_STALL=step:0.3:1 run stale 12 "${common[@]}" "${sp[@]}" "${ps[@]}" \
  --set parameter_server.staleness=1
grep -q "asynchronous (staleness 1, apply step)" "$WORK/stale.log" ||
  { grep -h "parameter servers" "$WORK/stale.log" | head -1; echo "FAIL: auto is not step"; exit 1; }
grep -q "done: 8 steps" "$WORK/stale.log" || { echo "FAIL: the asynchronous run did not finish"; exit 1; }
leads=$(sed -nE 's/.*the furthest a worker ran ahead of the slowest: ([0-9]+) step.*/\1/p' \
  "$WORK/stale.log" | sort -u | tr '\n' ' ')
[ "$leads" = "1 " ] || { echo "FAIL: furthest leads '$leads', staleness 1"; exit 1; }
echo "ok: asynchronous at tp 2 x pp 2 (apply auto = step): every position's fast replica ran 1 step ahead, no further"

run ddp_from_ps 8 "${common[@]}" "${sp[@]}" --resume "$WORK/sp_dedicated/checkpoints/step_00000004"
grep -h "resumed from" "$WORK/ddp_from_ps.log" | head -1
/usr/bin/python3 "$here/compare_losses.py" "$WORK/ddp_from_ps" "$WORK/sp_ddp" 0
echo "ok: the servers' checkpoint resumed by all-reduce DDP continues bit for bit"
echo "PASS: ps_model_parallel"
