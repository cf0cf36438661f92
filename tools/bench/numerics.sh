#!/usr/bin/env bash
# Benchmark (not a test): what layout-invariant numerics (train.numerics: layout_invariant,
# docs/numerics.md) cost against fast, on the main job's GPT (configs/gpt-fortunes.yaml: hidden
# 128, 4 layers, sequence 64, global batch 32 in micro-batches of 4) at dp 2 (tp 1, pp 1) and at
# pp 2 (dp 1, tp 1, 1F1B), 2 ranks, one thread each; the trainer's own step
# (build/triax_bench_step --brief), fast and layout_invariant alternating; the overhead is the
# median over rounds of each round's fast/layout_invariant ratio (pairs taken back to back, so
# the machine's slow drifts cancel), beside the two modes' median tokens/s.
# The third mode, layout_invariant with train.micro_batch_invariant (micro-batches computed sample by
# sample, Note [Sample units]), is timed in the same rounds; it has no goal of its own: it is the
# price of making the micro-batch size change no bit.
# Then the deterministic tree all-reduce beside MPI's at 2, 4 and 8 ranks
# (build/triax_bench_tree_allreduce).
#   tools/bench/numerics.sh [STEPS] [ROUNDS]        (defaults: 30 steps, 5 rounds)
# Goal (issue 40): layout_invariant at most 5% slower per step than fast, at dp 2 and at pp 2.
set -euo pipefail
cd "$(dirname "$0")/../.."
steps=${1:-30}
rounds=${2:-5}
for b in triax_bench_step triax_bench_tree_allreduce; do
  [ -x "build/$b" ] || { echo "build first: tools/setup.sh build" >&2; exit 2; }
done
echo "$(nproc) cores, $(date -u +%F); tokens/s of 2 ranks, one thread each"
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
speed() { sed -E 's/.* ([0-9.]+) tokens\/s.*/\1/'; }
for layout in "dp2 1 1" "pp2 1 2"; do
  set -- $layout
  name=$1 tp=$2 pp=$3
  common=(configs/gpt-fortunes.yaml --brief --steps "$steps" --set parallel.tensor="$tp"
          --set parallel.pipeline="$pp" --set train.threads=1)
  fast=() inv=() mbi=()
  for r in $(seq 1 "$rounds"); do
    fast+=("$(mpirun -np 2 build/triax_bench_step "${common[@]}" --set train.numerics=fast | speed)")
    inv+=("$(mpirun -np 2 build/triax_bench_step "${common[@]}" --set train.numerics=layout_invariant | speed)")
    mbi+=("$(mpirun -np 2 build/triax_bench_step "${common[@]}" --set train.numerics=layout_invariant --set train.micro_batch_invariant=true | speed)")
    echo "$name round $r: fast ${fast[-1]}, layout_invariant ${inv[-1]}, + micro_batch_invariant ${mbi[-1]} tokens/s"
  done
  ratios=() mratios=()
  for k in "${!fast[@]}"; do
    ratios+=("$(awk -v f="${fast[$k]}" -v i="${inv[$k]}" 'BEGIN { print f / i }')")
    mratios+=("$(awk -v f="${fast[$k]}" -v i="${mbi[$k]}" 'BEGIN { print f / i }')")
  done
  awk -v n="$name" -v f="$(median "${fast[@]}")" -v i="$(median "${inv[@]}")" \
    -v r="$(median "${ratios[@]}")" 'BEGIN {
    printf "%s medians: fast %.0f, layout_invariant %.0f tokens/s; overhead (median of paired rounds) %.1f%% (goal <= 5%%: %s)\n",
      n, f, i, 100 * (r - 1), (r - 1 <= 0.05 ? "met" : "not met") }'
  awk -v n="$name" -v m="$(median "${mbi[@]}")" -v r="$(median "${mratios[@]}")" 'BEGIN {
    printf "%s + micro_batch_invariant: %.0f tokens/s; cost over fast %.1f%% (no goal: one-sample compute)\n",
      n, m, 100 * (r - 1) }'
done
for ranks in 2 4 8; do
  echo "tree all-reduce against MPI's, $ranks ranks (oversubscribed beyond 2):"
  mpirun -np "$ranks" build/triax_bench_tree_allreduce
done
