#!/usr/bin/env bash
# Benchmark (not a test): the planner's predictions against real runs (tools/bench/plan_accuracy.py
# says how). Calibrates, plans and runs sampled rows for the GPT and the small Llama.
#   tools/bench/plan_accuracy.sh [--nodes K [RATE DELAY]] [ROWS] [ROUNDS] [WORLDS] [MODELS]
#   (defaults: one node, 12 rows per world, 1 round, worlds 2,4,8, models gpt,llama; about 35
#   minutes. --nodes K: K namespace nodes (tools/cluster/ns-cluster.sh, as root), their link
#   shaped to RATE and DELAY when given, e.g. --nodes 2 1gbit 0.5ms 12 1 4 gpt)
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -x build/triax_bench_plan ] || { echo "build first: tools/setup.sh build" >&2; exit 2; }
if [ "${1:-}" = --nodes ]; then
  export PLAN_NODES=$2
  shift 2
  export TRIAX_CLUSTER=triax-plan
  tools/cluster/ns-cluster.sh up "$PLAN_NODES"
  trap 'tools/cluster/ns-cluster.sh down >/dev/null' EXIT
  if [ $# -ge 2 ] && [[ $1 =~ bit$ ]]; then
    tools/cluster/ns-cluster.sh shape "$1" "$2"
    export PLAN_SHAPE="$1 $2"
    shift 2
  fi
fi
echo "$(nproc) cores; world 4 and 8 oversubscribe them (ranks time-share cores, as calibrated)"
python3 tools/bench/plan_accuracy.py "$@"
