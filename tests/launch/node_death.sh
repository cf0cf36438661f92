#!/usr/bin/env bash
# A node that dies mid-run: 2 namespace nodes x 2 ranks train the GPT (dp 2 x pp 2, so both a
# pipeline and a data-parallel group cross the nodes); after 3 steps every process on n2 is
# SIGKILLed at once (its launcher agent and the ranks' death watchers too, as when a machine
# fails). At the default settings (comm.heartbeat_s 15, comm.timeout_s 300) the ranks on n1 must
# end within 30 s, and the job must name the lost ranks:
#   heartbeat  n2's ranks' heartbeat connections to rank 0 close: rank 0 names ranks 2, 3 on n2
#              ("every rank on n2 is gone") on every survivor and in their flight records, which
#              `triax flight RUN_DIR` gives as the verdict (job/heartbeat.h)
#   mpirun     may be quicker: mpiexec ends the job as soon as it loses n2; then
#              run.dir/flight/died.txt (the death watches) names the ranks that vanished
#   srun       the ranks end by the heartbeat; srun itself then waits for n2's slurmd until Slurm
#              declares the node down (SlurmdTimeout, minutes): the test stops it after 15 s
#   torchrun   the same; torchrun's own agent then waits in its exit barrier for the dead agent
#              (up to 300 s, a torchrun behaviour: the test stops it once the ranks have ended)
#   LAUNCHER: mpirun | srun | torchrun
# usage: node_death.sh LAUNCHER SOURCE_DIR TRIAX RUN_DIR CONFIG [--set ...]
# Exit 77 (skipped, saying why) without root or namespaces.
set -euo pipefail
LAUNCHER=$1 SOURCE=$2 TRIAX=$3 RUN=$4 CONFIG=$5
shift 5
export TRIAX_CLUSTER=triax-death-$LAUNCHER
CLUSTER=$SOURCE/tools/cluster/ns-cluster.sh
SLURM=$SOURCE/tools/slurm/local-cluster.sh
if [ "$LAUNCHER" = srun ]; then
  export TRIAX_SLURM_NODES=2 TRIAX_SLURM_NS=$TRIAX_CLUSTER TRIAX_SLURM_DIR=/tmp/$TRIAX_CLUSTER
  "$SLURM" up || exit $?
  trap '"$SLURM" down' EXIT
else
  "$CLUSTER" up 2 || exit $?
  trap '"$CLUSTER" down >/dev/null' EXIT
fi
rm -rf "$RUN"
mkdir -p "$RUN"
ARGS=(train "$CONFIG" "$@" --set parallel.tensor=1 --set parallel.pipeline=2
  --set train.steps=100000 --set train.log_every=1 --set train.eval_every=0 --set sample.tokens=0
  --set run.dir="$RUN")
if [ "$LAUNCHER" = srun ]; then
  "$SLURM" run srun -N 2 --ntasks-per-node 2 --mpi=pmi2 --kill-on-bad-exit=1 "$TRIAX" \
    "${ARGS[@]}" >"$RUN/node1.log" 2>&1 &
elif [ "$LAUNCHER" = mpirun ]; then
  "$CLUSTER" on n1 mpiexec -hosts n1:2,n2:2 -launcher ssh \
    -launcher-exec "$SOURCE/tools/cluster/node-ssh" "$TRIAX" "${ARGS[@]}" >"$RUN/node1.log" 2>&1 &
else
  for node in 2 1; do
    "$CLUSTER" on "n$node" torchrun --no_python -r 9:1 -t 9:1 --nnodes 2 --nproc_per_node 2 \
      --node_rank $((node - 1)) --master_addr n1 --master_port 29500 "$TRIAX" "${ARGS[@]}" \
      >"$RUN/node$node.log" 2>&1 &
  done
fi
for _ in $(seq 1 1200); do
  [ -f "$RUN/metrics.jsonl" ] && [ "$(wc -l <"$RUN/metrics.jsonl")" -ge 3 ] && break
  sleep 0.1
done
[ -f "$RUN/metrics.jsonl" ] || { cat "$RUN"/node*.log; echo "FAIL: training did not start" >&2; exit 1; }
start=$(date +%s.%N)
"$CLUSTER" kill n2
# The ranks on n1 (triax processes) must all be gone within 30 s.
for _ in $(seq 1 300); do
  alive=$(ip netns pids "$TRIAX_CLUSTER-n1" | xargs -r ps -o comm= -p | grep -c '^triax$' || true)
  [ "$alive" -eq 0 ] && break
  sleep 0.1
done
seconds=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
echo "ranks on n1 ended $seconds s after n2 died"
if [ "$LAUNCHER" != torchrun ]; then
  if [ "$LAUNCHER" = srun ]; then
    # srun itself waits for the dead node's slurmd until Slurm declares the node down
    # (SlurmdTimeout, minutes): the ranks have ended; stop it as a user would.
    for _ in $(seq 1 150); do kill -0 %1 2>/dev/null || break; sleep 0.1; done
    if kill -0 %1 2>/dev/null; then
      echo "srun still waits for n2's slurmd (Slurm's SlurmdTimeout) 15 s after the ranks ended: stopping it"
      kill %1
    fi
  fi
  rc=0
  wait %1 || rc=$?
  echo "$LAUNCHER exit status: $rc"
  [ $rc -ne 0 ] || { echo "FAIL: the job exited 0 after losing a node" >&2; exit 1; }
  sleep 3  # the survivors' death watchers write died.txt 2 s after their ranks end
  "$TRIAX" flight "$RUN" | tee "$RUN/flight.txt"
  # mpirun ends the survivors at once (their watchers then name the ranks that left no trace);
  # Slurm does not notice a dead node for SlurmdTimeout, so the survivors' comm.timeout_s ends
  # the job; their flight records point at the ranks they waited for, and n2 is the node none of
  # whose ranks wrote one.
  grep -q -e "rank 2 on n2, rank 3 on n2" -e "verdict: rank 2, 3 stopped the job" \
    -e "verdict: ranks .*2 (pid [0-9]* on n2), 3 (pid [0-9]* on n2) are lost" "$RUN/flight.txt" ||
    { echo "FAIL: triax flight does not name the lost ranks" >&2; exit 1; }
else
  cat "$RUN/node1.log" | grep -E "error" | head -6
  grep -q -e "host n2, where ranks 2,3 ran" -e "ranks 2 (pid [0-9]* on n2), 3 (pid [0-9]* on n2) are lost" "$RUN/node1.log" ||
    { echo "FAIL: the survivors do not name the lost ranks" >&2; exit 1; }
fi
# A survivor that ended on its own error in the same instant said goodbye: it is not lost.
# shellcheck source=tests/launch/node_loss_checks.sh
. "$(dirname "$0")/node_loss_checks.sh"
if survivor_named_lost "$RUN"/*.log; then
  echo "FAIL: the heartbeat named a rank on n1, a survivor, as lost" >&2
  exit 1
fi
[ "$alive" -eq 0 ] && awk -v s="$seconds" 'BEGIN { exit !(s < 30) }' ||
  { echo "FAIL: $alive rank(s) on n1 still running after $seconds s" >&2; exit 1; }
echo "PASS: node n2 lost; the job on n1 ended in $seconds s naming ranks 2,3"
