#!/usr/bin/env bash
# Benchmark (not a test): the GPT of configs/gpt-pipeline.yaml at pp = 2 and 4 (tp = 1, dp = 1),
# every schedule (gpipe, 1f1b, interleaved, zbh1, zbv), m = 4, 8, 16 micro-batches, timed as
# `triax train` runs it (Trainer::step): tokens/s, the idle fraction from the trainer's own
# trace beside the simulator's prediction from that trace's measured per-rank F/B/I/W and
# message times, per-rank busy time and peak activation memory, and the goals of issue 28.
# Traces go to runs/bench/trace.<schedule>-p<P>-m<M>.json (open in ui.perfetto.dev).
#   tools/bench/pipeline.sh [ROUNDS] [--set key=value ...]     (default 3 rounds, interleaved)
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-3}
[ $# -gt 0 ] && shift
[ -x build/triax_bench_pipeline ] || { echo "build first: tools/setup.sh build" >&2; exit 2; }
mkdir -p runs/bench
echo "$(nproc) cores; at pp = 4 ranks are oversubscribed: a waiting rank lends its core, so"
echo "measured idle time is partly time-sharing"
for p in 2 4; do
  mpirun -np "$p" build/triax_bench_pipeline configs/gpt-pipeline.yaml --rounds "$rounds" \
    --set schedule.trace=runs/bench/trace "$@"
done
