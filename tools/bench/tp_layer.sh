#!/usr/bin/env bash
# Benchmark (not a test): one GPT layer's forward+backward time and all-reduced bytes at
# tp = 1, 2, 4 (the same layer, split over more ranks).
#   tools/bench/tp_layer.sh [batch seq hidden heads iterations]   (defaults: 4 128 256 8 20)
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -x build/triax_bench_tp_layer ] || { echo "build first: tools/setup.sh build" >&2; exit 2; }
echo "$(nproc) cores; with more ranks than cores the time measures oversubscription, not scaling"
for tp in 1 2 4; do
  mpirun -np "$tp" build/triax_bench_tp_layer "$@"
done
