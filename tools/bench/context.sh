#!/usr/bin/env bash
# Benchmark (not a test): context parallelism's speed beside data parallelism on the same global
# batch (issue 42). On 2 ranks, the main job's GPT (configs/gpt-fortunes.yaml, tp 1, pp 1) at a
# sequence of LEN positions (default 1024), the config's 32 sequences a step: dp 2 (16 per rank)
# against cp 2 by ring and by all-to-all attention (each rank half of every sequence). The
# trainer's own step (build/triax_bench_step --brief, STEPS timed steps after warm-up), ROUNDS
# interleaved rounds, medians; "cp wait" is what attention waited for its exchanges per step (the
# ring's exposed communication). Goal: cp 2 >= 0.9x dp 2's tokens/s.
#   tools/bench/context.sh [LEN] [ROUNDS] [STEPS]
set -euo pipefail
cd "$(dirname "$0")/../.."
len=${1:-1024}
rounds=${2:-3}
steps=${3:-5}
[ -x build/triax_bench_step ] || { echo "build first: tools/setup.sh build" >&2; exit 2; }
runs=(dp2 ring all_to_all)
args() {
  case "$1" in
    dp2) echo "--set train.micro_batch=1" ;;
    *) echo "--set train.micro_batch=2 --set parallel.context=2 --set parallel.context_mode=$1" ;;
  esac
}
declare -A rate wait
echo "main GPT at seq_len $len, 32 sequences a step, 2 ranks, $rounds rounds, $(nproc) cores, $(date -u +%F)"
for round in $(seq "$rounds"); do
  for run in "${runs[@]}"; do
    line=$(mpirun -np 2 build/triax_bench_step configs/gpt-fortunes.yaml --brief --steps "$steps" \
      --set parallel.tensor=1 --set parallel.pipeline=1 --set model.seq_len="$len" $(args "$run") |
      grep '^triax')
    r=$(sed -E 's/.*: +([0-9.]+) tokens\/s.*/\1/' <<<"$line")
    w=$(sed -E 's/.*cp wait +([0-9.]+) ms.*/\1/' <<<"$line")
    echo "round $round $run: $r tokens/s, cp wait $w ms"
    rate[$run]+="$r "
    wait[$run]+="$w "
  done
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
base=$(median <<<"${rate[dp2]}")
for run in "${runs[@]}"; do
  m=$(median <<<"${rate[$run]}")
  w=$(median <<<"${wait[$run]}")
  ratio=$(awk -v a="$m" -v b="$base" 'BEGIN {printf "%.3f", a / b}')
  goal=""
  [ "$run" != dp2 ] && goal="  (goal >= 0.9x dp 2)"
  printf "%-10s median %8.0f tokens/s, cp wait %7.2f ms a step, %sx dp 2%s\n" "$run" "$m" "$w" \
    "$ratio" "$goal"
done
