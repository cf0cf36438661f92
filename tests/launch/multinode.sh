#!/usr/bin/env bash
# `triax train` on 2 namespace nodes (tools/cluster/ns-cluster.sh) under a real launcher, started
# the way a user starts it on a cluster, and the checks that it really was multi-node: rank 0's
# table shows both nodes, and data crossed the link between them.
# usage: multinode.sh LAUNCHER SOURCE_DIR TRIAX RUN_DIR CONFIG [--set ...]
#   LAUNCHER: mpirun | torchrun | torchrun-rdzv | srun | sbatch
#   PER_NODE (env, default 4): ranks per node
# Exit 77 (skipped, saying why) without root, namespaces or Slurm.
set -euo pipefail
LAUNCHER=$1 SOURCE=$2 TRIAX=$3 RUN=$4 CONFIG=$5
shift 5
PER_NODE=${PER_NODE:-4}
export TRIAX_CLUSTER=${TRIAX_CLUSTER:-triax-mn-$LAUNCHER}
CLUSTER=$SOURCE/tools/cluster/ns-cluster.sh
SLURM=$SOURCE/tools/slurm/local-cluster.sh
ARGS=(train "$CONFIG" "$@" --set run.dir="$RUN")
rm -rf "$RUN"
mkdir -p "$RUN"

case $LAUNCHER in
  srun | sbatch)
    export TRIAX_SLURM_NODES=2 TRIAX_SLURM_NS=$TRIAX_CLUSTER TRIAX_SLURM_DIR=/tmp/$TRIAX_CLUSTER
    "$SLURM" up || exit $?
    trap '"$SLURM" down' EXIT ;;
  *)
    "$CLUSTER" up 2 || exit $?
    trap '"$CLUSTER" down >/dev/null' EXIT ;;
esac
sent() { ip -n "$TRIAX_CLUSTER-n2" -s link show eth0 | awk '/TX:/ {getline; print $1}'; }
before=$(sent)

rc=0
case $LAUNCHER in
  mpirun)
    echo "+ mpiexec -hosts n1:$PER_NODE,n2:$PER_NODE -launcher ssh -launcher-exec tools/cluster/node-ssh triax ${ARGS[*]}"
    timeout 240 "$CLUSTER" on n1 mpiexec -hosts "n1:$PER_NODE,n2:$PER_NODE" -launcher ssh \
      -launcher-exec "$SOURCE/tools/cluster/node-ssh" "$TRIAX" "${ARGS[@]}" || rc=$? ;;
  torchrun | torchrun-rdzv)
    # Python 3.11's torchrun needs -r/-t (see ENVIRONMENT.md).
    if [ "$LAUNCHER" = torchrun ]; then
      RDZV=(--master_addr n1 --master_port 29500)
    else
      RDZV=(--rdzv_backend c10d --rdzv_endpoint n1:29400 --rdzv_id triax-multinode)
    fi
    pids=()
    for node in 1 2; do
      [ "$LAUNCHER" = torchrun ] && RANK_ARG=(--node_rank $((node - 1))) || RANK_ARG=()
      echo "+ on n$node: torchrun --nnodes 2 --nproc_per_node $PER_NODE ${RANK_ARG[*]} ${RDZV[*]} triax ${ARGS[*]}"
      timeout 240 "$CLUSTER" on "n$node" torchrun --no_python -r 9:1 -t 9:1 --nnodes 2 \
        --nproc_per_node "$PER_NODE" "${RANK_ARG[@]}" "${RDZV[@]}" "$TRIAX" "${ARGS[@]}" \
        >"$RUN/node$node.log" 2>&1 &
      pids+=($!)
    done
    for pid in "${pids[@]}"; do wait "$pid" || rc=$?; done
    cat "$RUN/node1.log" "$RUN/node2.log" ;;
  srun)
    echo "+ srun -N 2 --ntasks-per-node $PER_NODE --mpi=pmi2 triax ${ARGS[*]}"
    "$SLURM" run timeout ${TIMEOUT:-240} srun -N 2 --ntasks-per-node "$PER_NODE" --mpi=pmi2 \
      --kill-on-bad-exit=1 "$TRIAX" "${ARGS[@]}" || rc=$? ;;
  sbatch)
    # tools/slurm/triax.sbatch runs build/triax relative to the submit directory.
    WORK=$(mktemp -d)
    mkdir -p "$WORK/build"
    ln -s "$TRIAX" "$WORK/build/triax"
    cd "$WORK"
    echo "+ sbatch --nodes=2 --ntasks-per-node=$PER_NODE tools/slurm/triax.sbatch $CONFIG $* --set run.dir=$RUN"
    "$SLURM" run timeout 240 sbatch --wait --nodes=2 --ntasks-per-node="$PER_NODE" \
      --output="$RUN/slurm.out" "$SOURCE/tools/slurm/triax.sbatch" "$CONFIG" "$@" \
      --set run.dir="$RUN" || rc=$?
    cat "$RUN/slurm.out" ;;
  *) echo "multinode.sh: unknown launcher '$LAUNCHER'" >&2; exit 2 ;;
esac
[ $rc -eq 0 ] || { echo "FAIL: $LAUNCHER exited $rc" >&2; exit 1; }
mib=$(( ($(sent) - before) / 1048576 ))
echo "inter-node traffic: n2 sent $mib MiB over its link"
[ "$mib" -ge 1 ] || { echo "FAIL: no traffic crossed the node boundary" >&2; exit 1; }
