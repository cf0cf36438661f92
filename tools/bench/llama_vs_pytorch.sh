#!/usr/bin/env bash
# Benchmark (not a test): triax's Llama step against plain PyTorch on the same shape, one process,
# one thread, rounds interleaved (this machine is noisy), medians. triax's figure is the trainer's
# own step (build/triax_bench_step --brief); PyTorch's is tools/bench/pytorch_llama_step.py.
#   tools/bench/llama_vs_pytorch.sh [STEPS] [ROUNDS]       (defaults: 40 steps, 3 rounds)
# Goal (issue 25): triax >= 1.0x PyTorch. Measured 2026-11-24 (30 steps, 5 rounds): 1.09x.
set -euo pipefail
cd "$(dirname "$0")/../.."
steps=${1:-40}
rounds=${2:-3}
[ -x build/triax_bench_step ] || { echo "build first: tools/setup.sh build" >&2; exit 2; }
llama=(--set model.arch=llama --set model.kv_heads=2 --set model.intermediate_size=352
  --set model.tie_embeddings=false)
triax=() torch=()
for r in $(seq 1 "$rounds"); do
  t=$(mpirun -np 1 build/triax_bench_step --brief --steps "$steps" "${llama[@]}" |
    sed -E 's/.* ([0-9.]+) tokens\/s.*/\1/')
  p=$(/usr/bin/python3 tools/bench/pytorch_llama_step.py "$steps" 1 |
    sed -E 's/.* ([0-9.]+) tokens\/s.*/\1/')
  echo "round $r: triax $t tokens/s, pytorch $p tokens/s"
  triax+=("$t") torch+=("$p")
done
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
mt=$(median "${triax[@]}") mp=$(median "${torch[@]}")
awk -v t="$mt" -v p="$mp" 'BEGIN {
  printf "median: triax %.0f tokens/s, pytorch %.0f tokens/s; triax / pytorch %.2f (goal >= 1.00: %s)\n",
    t, p, t / p, (t / p >= 1.0 ? "met" : "not met") }'
