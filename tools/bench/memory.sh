#!/usr/bin/env bash
# Benchmark (not a test): per-rank training memory, measured (bytes of live tensors, a counting
# allocator) next to the analytic model, for the main job's GPT scaled up (hidden 512, 8 layers,
# 8 heads, sequence 256, micro-batch 4, fp32, AdamW): the baseline and activation recompute
# (selective, full), ZeRO-1, -2 and -3 (ddp.shard), bf16 working weights (train.param_dtype) and
# sequence parallelism (parallel.sequence), in layouts from 1 to 8 ranks; then the same shape as a
# Llama (8 of 8 heads as 4 kv heads, SwiGLU 1408, untied head); last, context parallelism. Formulas:
# models/transformer_memory.h and docs/memory.md. Each row is the first rank and, with a pipeline,
# the last (stages differ).
#   tools/bench/memory.sh [MAX_RANKS]        (default 8)
#   tools/bench/memory.sh MAX_RANKS long     only context parallelism at issue 42's length: the
#                                            Llama shape at seq_len 2048, one sequence a step, at
#                                            cp 1, 2 and 4 (ring and all-to-all; about 5 minutes)
set -euo pipefail
cd "$(dirname "$0")/../.."
max=${1:-8}
only=${2:-}
[ -x build/triax_bench_memory ] || { echo "build first: tools/setup.sh build" >&2; exit 2; }
echo "$(nproc) cores, $(date -u +%F); MiB per rank; goal: measured within 10% of theory"
model=()  # extra --set of the model family (empty: the GPT)
extra=()  # extra --set of the rows (bf16 working weights)
row() {  # RANKS TP PP RECOMPUTE [SHARD (none|optimizer|gradients|parameters) [SEQUENCE]]
  [ "$1" -le "$max" ] || return 0
  mpirun -np "$1" build/triax_bench_memory --set parallel.tensor="$2" --set parallel.pipeline="$3" \
    --set train.recompute="$4" --set ddp.shard="${5:-none}" \
    --set parallel.sequence="${6:-false}" "${model[@]}" "${extra[@]}" | grep '^memory' | sed -n '1p;$p' |
    uniq | sed "s/^memory /${label:-gpt} /"
}
if [ "$only" = long ]; then
  label=llama-2048
  model=(--set model.arch=llama --set model.kv_heads=4 --set model.multiple_of=64
    --set model.tie_embeddings=false --set model.seq_len=2048 --set train.micro_batch=1)
  row 1 1 1 none
  row 1 1 1 full
  for cp in 2 4; do
    for mode in ring all_to_all; do
      extra=(--set parallel.context=$cp --set parallel.context_mode=$mode)
      label=llama-2048-$mode
      row "$cp" 1 1 none
    done
  done
  exit 0
fi
for recompute in none selective full; do row 1 1 1 "$recompute"; done
row 2 1 1 none
for recompute in none full; do row 2 2 1 "$recompute"; done
row 2 1 2 none
row 4 4 1 none
for recompute in none selective full; do row 4 2 2 "$recompute"; done
row 8 2 2 none
# ZeRO-1 (ddp.shard: optimizer): AdamW's moments over dp; ZeRO-2 (gradients): the gradient too
row 2 1 1 none optimizer
row 2 1 1 none gradients
row 4 1 1 none
row 4 1 1 none optimizer
row 4 1 1 none gradients
row 8 1 1 none
row 8 1 1 none optimizer
row 8 1 1 none gradients
row 8 2 1 none optimizer
row 8 2 1 none gradients
row 8 2 2 full optimizer
row 8 2 2 full gradients
# sequence parallelism (parallel.sequence): the replicated activations split over tp as well
row 2 2 1 none none true
row 4 4 1 none none true
row 4 2 2 none none true
row 4 2 2 full none true
row 8 2 2 full optimizer true
row 8 2 2 full gradients true
# the Llama family (the same formula's terms): grouped-query attention, SwiGLU, RMSNorm, untied head
label=llama
model=(--set model.arch=llama --set model.kv_heads=4 --set model.multiple_of=64
  --set model.tie_embeddings=false)
for recompute in none selective full; do row 1 1 1 "$recompute"; done
row 2 2 1 none
row 2 1 2 none
row 2 2 1 none none true
row 2 2 1 selective none true
row 4 2 2 full none true
row 4 2 2 none optimizer true
row 4 2 2 none gradients true
# every shard level at dp 2, 4 and 8 (tp 1, pp 1), and at dp 2 with tp 2 x pp 2
for ranks in 2 4 8; do
  for shard in none optimizer gradients parameters; do row "$ranks" 1 1 none "$shard"; done
done
for shard in optimizer gradients parameters; do row 8 2 2 none "$shard"; done
# bf16 working weights (train.param_dtype: bf16, bf16 compute): half the parameter bytes, whole or
# sliced and gathered; the fp32 master joins AdamW's moments in the optimizer's slice (12/dp)
extra=(--set train.precision=bf16 --set train.param_dtype=bf16)
for shard in optimizer gradients parameters; do row 4 1 1 none "$shard"; done
row 8 2 2 none parameters
extra=()
# context parallelism (parallel.context): positions / context per rank; ring attention keeps its
# fp32 output and log-sum-exp instead of the scores, all-to-all the scores of heads / context
for mode in ring all_to_all; do
  extra=(--set parallel.context=2 --set parallel.context_mode=$mode)
  label=gpt
  model=()
  row 2 1 1 none
  row 4 2 1 none
  row 4 1 1 selective
  row 4 1 1 full
  row 4 1 1 none parameters
  row 4 2 1 none none true
  label=llama
  model=(--set model.arch=llama --set model.kv_heads=4 --set model.multiple_of=64
    --set model.tie_embeddings=false)
  row 2 1 1 none
  row 4 1 2 none
done
extra=(--set parallel.context=4)
label=gpt
model=()
row 4 1 1 none
row 8 2 1 none optimizer
extra=()
