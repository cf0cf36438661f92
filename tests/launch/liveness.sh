#!/usr/bin/env bash
# Liveness at the default settings (comm.timeout_s 300, comm.heartbeat_s 15; job/heartbeat.h):
#   1. a rank stopped with SIGSTOP at step 3 (rank 3, then rank 0, the heartbeat's watcher) is
#      declared lost and the job ends on every survivor within 30 s, naming the rank, its pid and
#      host (and, for rank 3, its last action); its flight record says so
#   2. a rank merely slow — its checkpoint write stalled 25 s (TRIAX_STALL; STALL), longer
#      than the heartbeat's bound (silent for comm.heartbeat_s + 1.5 s is lost), while its peers
#      wait in the save's collective — is never declared lost: the run finishes, exit 0
# With LAUNCHER=torchrun the same runs go through a real torchrun (tcp backend); with
# LAUNCHER=srun through `srun -N 2 --ntasks-per-node 2` on a 2-node Slurm cluster of namespace
# nodes (ranks 0-1 on n1, 2-3 on n2; exit 77 without root).
# usage: liveness.sh WORK MPIEXEC|torchrun|srun TRIAX CONFIG [--set ...]
set -uo pipefail
WORK=$1 LAUNCHER=$2 TRIAX=$3 CONFIG=$4
shift 4
STALL=${STALL:-25}  # seconds; longer than comm.heartbeat_s (15) is what matters
# VICTIMS: the ranks stopped in turn (default "3 0": a rank, then the heartbeat's watcher).
if [ "$(basename "$LAUNCHER")" = torchrun ]; then
  LAUNCH=(torchrun --no_python -r 9:1 -t 9:1 --standalone --nproc_per_node=4)
elif [ "$LAUNCHER" = srun ]; then
  ROOT=$(cd "$(dirname "$0")/../.." && pwd)
  SLURM=$ROOT/tools/slurm/local-cluster.sh
  export TRIAX_CLUSTER=triax-live-srun TRIAX_CLUSTER_NET=10.80.0 TRIAX_SLURM_NODES=2
  export TRIAX_SLURM_NS=$TRIAX_CLUSTER TRIAX_SLURM_DIR=/tmp/$TRIAX_CLUSTER
  "$SLURM" up || exit $?
  trap '"$SLURM" down' EXIT
  LAUNCH=("$SLURM" run srun -N 2 --ntasks-per-node 2 --mpi=pmi2 --kill-on-bad-exit=1)
else
  LAUNCH=("$LAUNCHER" -n 4)
fi
rm -rf "$WORK"
mkdir -p "$WORK"
for victim in ${VICTIMS:-3 0}; do
  start=$(date +%s.%N)
  TRIAX_FAULT=stop:$victim:3 timeout 120 "${LAUNCH[@]}" "$TRIAX" train "$CONFIG" "$@" \
    --set train.steps=50 --set sample.tokens=0 --set run.dir="$WORK/stop$victim" \
    >"$WORK/stop$victim.log" 2>&1
  rc=$?
  seconds=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  grep "heartbeat:" "$WORK/stop$victim.log" | head -3 | cut -c1-220
  [ $rc -ne 0 ] && [ $rc -ne 124 ] || { echo "FAIL: stop rank $victim: exit $rc"; exit 1; }
  awk -v s="$seconds" 'BEGIN { exit !(s < 30) }' || { echo "FAIL: took $seconds s"; exit 1; }
  survivors=$(grep -c "error: heartbeat: rank $victim (pid [0-9]* on [^)]*) is lost: no heartbeat for" \
    "$WORK/stop$victim.log")
  [ "$survivors" -eq 3 ] || { cat "$WORK/stop$victim.log"; echo "FAIL: $survivors of 3 survivors named rank $victim"; exit 1; }
  if [ $victim -ne 0 ]; then
    grep -q "is lost: .*its last beat: step [0-9]*, " "$WORK/stop$victim.log" ||
      { echo "FAIL: no last action"; exit 1; }
  fi
  grep -q '"reason": "heartbeat: rank '$victim "$WORK/stop$victim/flight/rank_1.json" ||
    { echo "FAIL: rank 1's flight record does not say why"; exit 1; }
  echo "ok: rank $victim stopped at default settings: named by all 3 survivors, job ended in $seconds s (goal < 30 s)"
done

start=$(date +%s.%N)
TRIAX_STALL=checkpoint-shard:$STALL:0 timeout 200 "${LAUNCH[@]}" "$TRIAX" train "$CONFIG" "$@" \
  --set train.steps=3 --set checkpoint.every=2 --set checkpoint.at_end=false --set checkpoint.async=false --set sample.tokens=0 \
  --set run.dir="$WORK/slow" >"$WORK/slow.log" 2>&1
rc=$?
seconds=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
grep -E "stall point|heartbeat:|done:" "$WORK/slow.log" | cut -c1-160
[ $rc -eq 0 ] || { echo "FAIL: a $STALL s save ended the job (exit $rc)"; exit 1; }
! grep -q "is lost" "$WORK/slow.log" || { echo "FAIL: a slow rank was declared lost"; exit 1; }
echo "PASS ($(basename "$LAUNCHER")): stopped ranks named within 30 s at default settings; a $STALL s save stall (run took $seconds s) was not a false alarm"
