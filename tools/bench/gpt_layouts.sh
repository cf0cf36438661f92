#!/usr/bin/env bash
# Benchmark (not a test): the main job's GPT (configs/gpt-fortunes.yaml: 0.83 M parameters,
# seq 64, global batch 32) in several (dp, tp, pp) layouts, each trained STEPS steps:
# global tokens/s and MFU after the first step, the time from process start to the end of the
# first step, and the largest peak resident memory of a rank.
#   tools/bench/gpt_layouts.sh [STEPS] [LAYOUT...]      LAYOUT = DPxTPxPP (default: a set from
#                                                       1 to 8 ranks)
# The global batch is the same in every layout, so the rows compare how fast the same training
# runs. Each rank gets cores / ranks compute threads; with more ranks than cores the figures
# measure oversubscription, not scaling. MFU is against an fp32 matmul measured on all cores.
set -euo pipefail
cd "$(dirname "$0")/../.."
steps=${1:-40}
[ $# -eq 0 ] || shift
layouts=(1x1x1 2x1x1 1x2x1 1x1x2 2x2x1 2x1x2 1x2x2 2x2x2)
[ $# -eq 0 ] || layouts=("$@")
[ -x build/triax ] || { echo "build first: tools/setup.sh build" >&2; exit 2; }
[ -f runs/tokens/fortunes/train.tok ] || build/triax prepare-data /usr/share/games/fortunes --out runs/tokens/fortunes
echo "GPT h=128 L=4 heads=4 seq=64 vocab=256, global batch 32 (micro-batch 4), 1F1B, $steps steps, $(nproc) cores, $(date -u +%F)"
printf "%-7s %5s %10s %8s %14s %13s %10s\n" layout ranks "tokens/s" MFU "first step s" "peak MiB/rank" "final loss"
for layout in "${layouts[@]}"; do
  IFS=x read -r dp tp pp <<<"$layout"
  n=$((dp * tp * pp))
  out=$(mpirun -np "$n" build/triax train configs/gpt-fortunes.yaml --set train.steps="$steps" \
    --set parallel.tensor="$tp" --set parallel.pipeline="$pp" --set train.log_every="$steps" \
    --set train.eval_batches=1 --set sample.tokens=0 --set run.dir= 2>&1) ||
    { echo "$layout failed:" >&2; echo "$out" | tail -5 >&2; exit 1; }
  done_line=$(grep -E '\] done: ' <<<"$out")
  tokens=$(sed -E 's/.* ([0-9]+) tokens\/s.*/\1/' <<<"$done_line")
  mfu=$(sed -E 's/.*MFU ([0-9.]+%).*/\1/' <<<"$done_line")
  first=$(sed -E 's/.*first step done ([0-9.]+) s.*/\1/' <<<"$done_line")
  loss=$(sed -E 's/.*-> ([0-9.]+),.*/\1/' <<<"$done_line")
  mem=$(grep -E "step $steps/$steps" <<<"$out" | sed -E 's/.*peak mem ([0-9]+) MiB.*/\1/')
  printf "%-7s %5s %10s %8s %14s %13s %10s\n" "$layout" "$n" "$tokens" "$mfu" "$first" "$mem" "$loss"
done
