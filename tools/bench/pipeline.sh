#!/usr/bin/env bash
# Benchmark (not a test): the GPT of configs/gpt-pipeline.yaml at pp = 2 and 4 (tp = 1), every
# schedule, m = p, 2p, 4p: step time, bubble measured from the trace vs simulated, peak
# activation memory per rank. Traces go to runs/bench/trace.<schedule>-p<P>-m<M>.json (Perfetto).
#   tools/bench/pipeline.sh [--set key=value ...]
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -x build/triax_bench_pipeline ] || { echo "build first: tools/setup.sh build" >&2; exit 2; }
mkdir -p runs/bench
echo "$(nproc) cores; with more ranks than cores, measured bubbles include time-sharing"
for p in 2 4; do
  mpirun -np "$p" build/triax_bench_pipeline configs/gpt-pipeline.yaml --set parallel.tensor=1 \
    --set parallel.pipeline="$p" --set schedule.trace=runs/bench/trace "$@"
done
