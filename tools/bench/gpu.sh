#!/bin/bash
# Runs on the GPU machine only (docs/gpu.md).
# One GPU in bf16: `triax train` of a GPT of GPT-2 medium's shape (configs/gpt2-medium.yaml: 24
# layers, width 1024, 16 heads, 1024 positions, vocabulary 50257, 355M parameters; tp = pp = 1,
# no dropout, no recompute) beside the same model as a PyTorch user trains it
# (tools/bench/pytorch_gpu_step.py: eager, and torch.compile), in interleaved rounds. MFU is
# counted against PEAK_TFLOPS (default 989: the H100's and H200's dense bf16 datasheet figure)
# by one FLOP count (models/transformer_flops.cpp); GPU memory is nvidia-smi's most used during
# each run (CUDA context included, the same for both).
#
#   tools/bench/gpu.sh [BUILD_DIR [MICRO_BATCH [STEPS [ROUNDS]]]]   (build-gpu 8 20 1)
#
# Token files: TOKENS (default runs/tokens/fortunes; any ids < 50257 do).
set -uo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build-gpu}
mb=${2:-8}
steps=${3:-20}
rounds=${4:-1}
peak=${PEAK_TFLOPS:-989}
tokens=${TOKENS:-runs/tokens/fortunes}

# Runs "$@" while nvidia-smi samples the memory in use; prints the command's output lines that
# match $pattern, then the most memory seen.
sampled() {
  local pattern=$1
  shift
  local log
  log=$(mktemp)
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 >"$log" 2>/dev/null &
  local smi=$!
  "$@" 2>&1 | grep -E "$pattern"
  kill $smi 2>/dev/null
  wait $smi 2>/dev/null
  echo "  GPU memory used at most: $(sort -n "$log" | tail -1) MiB (nvidia-smi)"
  rm -f "$log"
}

echo "GPT 24 x 1024, 16 heads, sequence 1024, micro-batch $mb, $steps steps, bf16, one GPU:"
echo "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null)"
for round in $(seq "$rounds"); do
  echo "round $round"
  sampled "done:|rror" "$build/triax" train configs/gpt2-medium.yaml --set run.device=cuda \
    --set parallel.tensor=1 --set parallel.pipeline=1 --set train.precision=bf16 \
    --set train.recompute=none --set model.dropout=0 --set train.global_batch="$mb" \
    --set train.micro_batch="$mb" --set train.steps="$steps" --set train.eval_every=0 \
    --set train.log_every="$steps" --set sample.tokens=0 --set run.dir= \
    --set run.peak_tflops="$peak" --set data.tokens="$tokens" --set train.warmup_steps=2
  for mode in eager compile; do
    sampled "pytorch|rror" python3 tools/bench/pytorch_gpu_step.py 24 1024 16 1024 50257 "$mb" \
      "$steps" "$mode" "$peak"
  done
done
echo "goals: MFU >= 45% (Megatron's range on an H100); triax >= 1.1x PyTorch eager's tokens/s"
