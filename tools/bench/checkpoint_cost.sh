#!/usr/bin/env bash
# What checkpointing costs the main job: `triax train configs/gpt-fortunes.yaml` on 8 ranks
# (mpirun), STEPS steps, saving every EVERY steps synchronously (the step waits for the shard
# files and the manifest) and asynchronously (checkpoint.async: the step waits only for an
# in-memory copy; checkpoint/background_save.h), beside the same run without checkpoints. Rounds
# interleave the three (this machine is noisy); medians of the trainer's own tokens/s (the
# "done:" line: after the first step) are compared. Goal: async costs <= 5% of tokens/s.
# usage: tools/bench/checkpoint_cost.sh [ROUNDS] [STEPS] [EVERY] [RANKS]
set -euo pipefail
ROUNDS=${1:-3} STEPS=${2:-100} EVERY=${3:-10} RANKS=${4:-8}
cd "$(dirname "$0")/../.."
WORK=$(mktemp -d /tmp/triax-ckpt-cost.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
declare -A rates
for round in $(seq 1 "$ROUNDS"); do
  for mode in none sync async; do
    case $mode in
      none) sets=(--set checkpoint.every=0 --set checkpoint.at_end=false) ;;
      sync) sets=(--set checkpoint.every="$EVERY" --set checkpoint.async=false) ;;
      async) sets=(--set checkpoint.every="$EVERY" --set checkpoint.async=true) ;;
    esac
    rm -rf "$WORK/run"
    line=$(mpiexec -n "$RANKS" build/triax train configs/gpt-fortunes.yaml --set train.steps="$STEPS" \
      --set train.eval_every=0 --set train.log_every=0 --set sample.tokens=0 \
      --set run.dir="$WORK/run" "${sets[@]}" 2>&1 | grep "done:")
    rate=$(sed -E 's/.*; ([0-9.]+) tokens\/s.*/\1/' <<<"$line")
    rates[$mode]="${rates[$mode]:-} $rate"
    echo "round $round $mode: $rate tokens/s"
  done
done
median() { tr ' ' '\n' <<<"$1" | grep . | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
base=$(median "${rates[none]}")
echo
echo "main job, $RANKS ranks, $STEPS steps, a checkpoint every $EVERY steps; median of $ROUNDS rounds"
printf "%-28s %12s %10s %8s\n" mode tokens/s cost goal
printf "%-28s %12.0f %10s %8s\n" "no checkpoints" "$base" - -
for mode in sync async; do
  m=$(median "${rates[$mode]}")
  cost=$(awk -v b="$base" -v m="$m" 'BEGIN { printf "%.1f%%", 100 * (b - m) / b }')
  goal=$([ $mode = async ] && echo "<= 5%" || echo "(today)")
  printf "%-28s %12.0f %10s %8s\n" "every $EVERY steps, $mode" "$m" "$cost" "$goal"
done
