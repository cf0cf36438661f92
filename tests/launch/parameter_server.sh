#!/usr/bin/env bash
# Parameter servers, synchronous (ddp.mode: parameter_server, docs/parameter_server.md), from YAML
# as a user runs them: the main job's GPT at tp 1 x pp 1 for 50 steps under layout-invariant
# numerics, against all-reduce DDP at dp 2:
#  1. dedicated servers (2 workers + 1 server; 4 workers + 2 servers) and colocated ones (2
#     workers, both serving; 4 workers, one serving): every loss, the held-out loss and the
#     checkpoints of steps 25 and 50 (parameters and AdamW state) bit-identical to DDP's;
#  2. checkpoints cross modes: the servers' step-25 checkpoint resumed by all-reduce DDP, and
#     DDP's resumed by 2 workers + 2 dedicated servers, continue the run bit for bit;
#  3. the Llama with full recompute, and the GPT computing in bf16, 8 steps each: bit-identical too;
#  4. under the default numerics (the servers add in a tree, MPI in its own order) the losses
#     agree within 1e-5.
# usage: parameter_server.sh WORK MPIEXEC TRIAX CONFIG [--set ...]
set -euo pipefail
WORK=$1 MPIEXEC=$2 TRIAX=$3 CONFIG=$4
shift 4
extra=("$@")
here=$(dirname "$0")
rm -rf "$WORK"
mkdir -p "$WORK"
common=(--set parallel.tensor=1 --set parallel.pipeline=1 --set train.steps=50
  --set train.micro_batch=4 --set train.log_every=10 --set train.eval_every=50
  --set train.eval_batches=2 --set sample.tokens=0 --set checkpoint.every=25
  --set checkpoint.keep=0 --set train.numerics=layout_invariant --set comm.timeout_s=120)
ps=(--set ddp.mode=parameter_server)
. "$(dirname "$0")/ps_checks.sh"

run ddp 2 "${common[@]}"
for case in "dedicated_w2_k1 3 dedicated 1" "colocated_w2_k2 2 colocated 2" \
  "dedicated_w4_k2 6 dedicated 2" "colocated_w4_k1 4 colocated 1"; do
  read -r name ranks placement servers <<<"$case"
  run "$name" "$ranks" "${common[@]}" "${ps[@]}" --set parameter_server.placement="$placement" \
    --set parameter_server.servers="$servers"
  grep -h "parameter servers:" "$WORK/$name.log" | head -1
  /usr/bin/python3 "$here/compare_losses.py" "$WORK/$name" "$WORK/ddp" 0
  same_val "$name" ddp
  same_checkpoint "$name" ddp 25
  same_checkpoint "$name" ddp 50
  echo "ok: $name: losses, held-out loss and checkpoints bit-identical to all-reduce DDP"
done

run ddp_from_ps 2 "${common[@]}" --resume "$WORK/dedicated_w2_k1/checkpoints/step_00000025"
grep -h "resumed from" "$WORK/ddp_from_ps.log" | head -1
/usr/bin/python3 "$here/compare_losses.py" "$WORK/ddp_from_ps" "$WORK/ddp" 0
same_checkpoint ddp_from_ps ddp 50
run ps_from_ddp 4 "${common[@]}" "${ps[@]}" --set parameter_server.servers=2 \
  --resume "$WORK/ddp/checkpoints/step_00000025"
grep -h "resumed from" "$WORK/ps_from_ddp.log" | head -1
/usr/bin/python3 "$here/compare_losses.py" "$WORK/ps_from_ddp" "$WORK/ddp" 0
same_checkpoint ps_from_ddp ddp 50
echo "ok: checkpoints cross modes bit for bit"

# The other family and precision: the Llama with full recompute, the GPT computing in bf16.
short=(--set train.steps=8 --set checkpoint.every=8 --set train.eval_every=0)
llama_config="$(dirname "$CONFIG")/llama-fortunes.yaml"
RUN_CONFIG=$llama_config run llama_ddp 2 "${common[@]}" "${short[@]}" \
  --set train.recompute=full
RUN_CONFIG=$llama_config run llama_ps 3 "${common[@]}" "${short[@]}" \
  --set train.recompute=full "${ps[@]}"
/usr/bin/python3 "$here/compare_losses.py" "$WORK/llama_ps" "$WORK/llama_ddp" 0
same_checkpoint llama_ps llama_ddp 8
run bf16_ddp 2 "${common[@]}" "${short[@]}" --set train.precision=bf16
run bf16_ps 3 "${common[@]}" "${short[@]}" --set train.precision=bf16 "${ps[@]}"
/usr/bin/python3 "$here/compare_losses.py" "$WORK/bf16_ps" "$WORK/bf16_ddp" 0
same_checkpoint bf16_ps bf16_ddp 8
echo "ok: the Llama with full recompute and the GPT in bf16, bit-identical to all-reduce DDP"

fast=(--set train.numerics=fast --set train.steps=20 --set checkpoint.every=0)
run ddp_fast 2 "${common[@]}" "${fast[@]}"
run ps_fast 3 "${common[@]}" "${fast[@]}" "${ps[@]}"
/usr/bin/python3 "$here/compare_losses.py" "$WORK/ps_fast" "$WORK/ddp_fast" 1e-5
echo "PASS: parameter_server"
