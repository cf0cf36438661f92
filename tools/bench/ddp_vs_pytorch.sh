#!/usr/bin/env bash
# Benchmark (not a test): data parallelism, triax against PyTorch's DistributedDataParallel, on
# the same GPT (4 layers, hidden 128, 4 heads, seq 64, vocab 256, batch 8 per process, AdamW, one
# thread per process). Prints tokens/s of each and the ratios the project aims for:
#   triax dp=2 / triax dp=1 >= 1.9   (communication hidden; 2 ranks on 2 cores is the limit)
#   triax dp=2 / PyTorch DDP >= 1.3
#   tools/bench/ddp_vs_pytorch.sh [steps]        (default 30)
set -euo pipefail
cd "$(dirname "$0")/../.."
steps=${1:-30}
[ -x build/triax_bench_ddp ] || { echo "build first: tools/setup.sh build" >&2; exit 2; }
rate() { sed -nE 's/.* ([0-9]+) tokens\/s.*/\1/p' <<<"$1"; }
echo "$(nproc) cores, $steps steps each"
t1=$(mpirun -np 1 build/triax_bench_ddp bucketed "$steps"); echo "$t1"
t2=$(mpirun -np 2 build/triax_bench_ddp bucketed "$steps"); echo "$t2"
s2=$(mpirun -np 2 build/triax_bench_ddp simple "$steps"); echo "$s2"
if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  p1=$(/usr/bin/python3 tools/bench/pytorch_ddp.py "$steps" 2>/dev/null); echo "$p1"
  # -r/-t: torchrun on Python 3.11 needs them (see ENVIRONMENT.md); loopback only.
  p2=$(torchrun -r 9:1 -t 9:1 --standalone --nproc_per_node=2 tools/bench/pytorch_ddp.py "$steps" 2>/dev/null | grep pytorch)
  echo "$p2"
  awk -v a="$(rate "$t2")" -v b="$(rate "$t1")" -v c="$(rate "$p2")" -v d="$(rate "$s2")" 'BEGIN {
    printf "triax dp=2 / triax dp=1      = %.2fx (goal >= 1.9)\n", a / b
    printf "triax dp=2 / PyTorch DDP     = %.2fx (goal >= 1.3)\n", a / c
    printf "bucketed / per-parameter DDP = %.2fx\n", a / d }'
else
  echo "PyTorch comparison skipped: /usr/bin/python3 has no torch (apt-get install python3-torch)"
fi
