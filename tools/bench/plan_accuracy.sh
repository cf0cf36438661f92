#!/usr/bin/env bash
# Benchmark (not a test): the planner's predictions against real runs (tools/bench/plan_accuracy.py
# says how). Calibrates, plans and runs sampled rows for the GPT and the small Llama.
#   tools/bench/plan_accuracy.sh [ROWS] [ROUNDS] [WORLDS] [MODELS]
#   (defaults: 12 rows per world, 1 round, worlds 2,4,8, models gpt,llama; about 15 minutes)
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -x build/triax_bench_plan ] || { echo "build first: tools/setup.sh build" >&2; exit 2; }
echo "$(nproc) cores; world 4 and 8 oversubscribe them (ranks time-share cores, as calibrated)"
exec python3 tools/bench/plan_accuracy.py "$@"
