#!/usr/bin/env bash
# Benchmark (not a test): training throughput of the Fashion-MNIST MLP at dp = 1, 2, 4.
#   tools/bench/mlp_dp_throughput.sh [STEPS] [RANKS...]     (defaults: 300 steps; 1 2 4)
# The global batch is the same at every dp (64), so the figures compare how fast the same
# training runs when spread over more ranks. Each rank uses cores / ranks compute threads; with
# more ranks than cores (dp=4 on a 2-core machine) it measures oversubscription, not scaling.
set -euo pipefail
cd "$(dirname "$0")/../.."
steps=${1:-300}
[ $# -eq 0 ] || shift
ranks=(1 2 4)
[ $# -eq 0 ] || ranks=("$@")
[ -x build/triax ] || { echo "build first: tools/setup.sh build" >&2; exit 2; }
echo "MLP 784-256-128-10, global batch 64, $steps steps, $(nproc) cores, $(date -u +%F)"
printf "%-4s %14s %14s %10s\n" dp "samples/s" "step ms" "speedup"
base=""
for n in "${ranks[@]}"; do
  line=$(mpirun -np "$n" build/triax train configs/mnist-mlp.yaml --set train.steps="$steps" \
    --set train.log_every=0 --set run.dir= 2>&1 | grep -E '\] done: ') ||
    { echo "dp=$n failed" >&2; exit 1; }
  rate=$(sed -E 's/.* ([0-9.]+) samples\/s.*/\1/' <<<"$line")
  step_ms=$(awk -v r="$rate" 'BEGIN { printf "%.2f", 64 * 1000 / r }')
  [ -n "$base" ] || base=$rate
  speedup=$(awk -v r="$rate" -v b="$base" 'BEGIN { printf "%.2fx", r / b }')
  printf "%-4s %14s %14s %10s\n" "$n" "$rate" "$step_ms" "$speedup"
done
