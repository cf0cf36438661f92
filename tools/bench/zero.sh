#!/usr/bin/env bash
# Benchmark (not a test): the step time of the shard levels side by side, on the main job's GPT
# (configs/gpt-fortunes.yaml) at dp N (tp 1, pp 1; default 4), the trainer's own step
# (build/triax_bench_step --brief, 20 timed steps after warm-up), ROUNDS interleaved rounds
# (none, optimizer, gradients, parameters in each), medians; with the goal beside each figure:
# ZeRO-2 (ddp.shard: gradients) <= 1.03x and ZeRO-3 (parameters) <= 1.15x ZeRO-1's step time
# (issue 41).
#   tools/bench/zero.sh [N] [ROUNDS] [--set ...]
# "exposed comm" is what DDP waited for (its own clock): after backward in finish(), and for
# ZeRO-2 also inside backward for a bucket to leave. Every level's reductions start during
# backward; ZeRO-2's on every micro-batch. "gather wait" is what ZeRO-3's forward and backward
# waited for all-gathers (not hidden behind the previous unit's compute).
set -euo pipefail
cd "$(dirname "$0")/../.."
n=${1:-4}
rounds=${2:-3}
shift $(($# > 2 ? 2 : $#))
[ -x build/triax_bench_step ] || { echo "build first: tools/setup.sh build" >&2; exit 2; }
levels=(none optimizer gradients parameters parameters-kept)
# parameters-kept: ZeRO-3 keeping each unit from its forward to its backward (one gather per
# unit and micro-batch instead of two).
extra() { [ "$1" = parameters-kept ] && echo "--set ddp.shard=parameters --set ddp.reshard_after_forward=false" || echo "--set ddp.shard=$1"; }
declare -A times comms gathers
echo "main GPT (configs/gpt-fortunes.yaml), dp $n, $rounds rounds, $(nproc) cores, $(date -u +%F)"
for round in $(seq "$rounds"); do
  for level in "${levels[@]}"; do
    line=$(mpirun -np "$n" build/triax_bench_step configs/gpt-fortunes.yaml --brief --steps 20 \
      --set parallel.tensor=1 --set parallel.pipeline=1 $(extra "$level") "$@" |
      grep '^triax')
    step=$(sed -E 's/.*step +([0-9.]+) ms.*/\1/' <<<"$line")
    comm=$(sed -E 's/.*exposed comm +([0-9.]+) ms.*/\1/' <<<"$line")
    gather=$(sed -E 's/.*gather wait +([0-9.]+) ms.*/\1/' <<<"$line")
    echo "round $round $level: step $step ms, exposed comm $comm ms, gather wait $gather ms"
    times[$level]+="$step "
    comms[$level]+="$comm "
    gathers[$level]+="$gather "
  done
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
base=$(median <<<"${times[optimizer]}")
for level in "${levels[@]}"; do
  m=$(median <<<"${times[$level]}")
  c=$(median <<<"${comms[$level]}")
  g=$(median <<<"${gathers[$level]}")
  ratio=$(awk -v a="$m" -v b="$base" 'BEGIN {printf "%.3f", a / b}')
  goal=""
  [ "$level" = gradients ] && goal="  (goal <= 1.03x ZeRO-1)"
  [ "${level%-kept}" = parameters ] && goal="  (goal <= 1.15x ZeRO-1)"
  printf "%-15s median step %7.1f ms, exposed comm %6.2f ms, gather wait %6.2f ms, %sx ZeRO-1%s\n" \
    "$level" "$m" "$c" "$g" "$ratio" "$goal"
done
