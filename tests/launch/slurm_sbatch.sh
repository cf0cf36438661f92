#!/usr/bin/env bash
# Brings up a one-machine Slurm cluster (tools/slurm/local-cluster.sh), submits the user-facing
# sbatch script tools/slurm/triax.sbatch with a short run of CONFIG, waits for it, prints its
# output and stops the daemons it started, whatever happens.
# usage: slurm_sbatch.sh SOURCE_DIR BUILD_TRIAX OUTPUT_FILE CONFIG [--set ...]
# Exit 77 (skipped) where Slurm or root is missing.
set -euo pipefail
SOURCE=$1 TRIAX=$2 OUT=$3
shift 3
CLUSTER=$SOURCE/tools/slurm/local-cluster.sh
export TRIAX_SLURM_NS=triax-ctest-slurm TRIAX_SLURM_DIR=/tmp/triax-ctest-slurm
"$CLUSTER" up || exit $?
trap '"$CLUSTER" down' EXIT
# The script runs build/triax relative to the submit directory: submit from a folder where
# build/triax is this build's executable.
WORK=$(mktemp -d)
mkdir -p "$WORK/build"
ln -s "$TRIAX" "$WORK/build/triax"
rm -f "$OUT"
cd "$WORK"
rc=0
"$CLUSTER" run timeout 240 sbatch --wait --output="$OUT" "$SOURCE/tools/slurm/triax.sbatch" "$@" || rc=$?
cat "$OUT"
exit $rc
