#!/bin/bash
# Runs on the GPU machine only (docs/gpu.md).
# The GPU machine's checks in one run (docs/gpu.md), each logged to OUT_DIR and each run whatever
# the one before it gave: build against the CUDA LibTorch (tools/gpu/build.sh), the GPU tests
# (ctest -L gpu), the README's main job and the Llama main job on one GPU (fp32, then bf16), a
# checkpoint written on the GPU resumed on the CPU, and the benchmark (tools/bench/gpu.sh).
#
#   tools/gpu/check.sh OUT_DIR [BUILD_DIR]
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${1:?OUT_DIR}
build=${2:-build-gpu}
mkdir -p "$out"
source tools/gpu/env.sh
step() {  # step NAME COMMAND...: runs it, logs it, prints its tail and its time
  local name=$1 start=$SECONDS rc
  shift
  "$@" >"$out/$name.log" 2>&1
  rc=$?
  echo "== $name: exit $rc in $((SECONDS - start)) s"
  tail -n "${TAIL:-6}" "$out/$name.log"
  return $rc
}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
TAIL=30 step build bash tools/gpu/build.sh "$build" triax triax-core triax_tests || exit 1
TAIL=40 step gpu_tests bash -c "cd $build && ctest -L gpu --output-on-failure -V"
tokens=${TOKENS:-runs/tokens/fortunes}
run_dir=${RUN_DIR:-/tmp/triax-gpu-check}
rm -rf "$run_dir"
one_gpu=(--set run.device=cuda --set parallel.tensor=1 --set parallel.pipeline=1
  --set data.tokens="$tokens")
train() { "$build/triax" train "$@"; }  # one rank: MPI's singleton start
step gpt_fp32 train configs/gpt-fortunes.yaml "${one_gpu[@]}" --set run.dir="$run_dir"
step gpt_bf16 train configs/gpt-fortunes.yaml "${one_gpu[@]}" --set train.precision=bf16 \
  --set run.dir= --set train.steps=100
step llama_bf16 train configs/llama-fortunes.yaml "${one_gpu[@]}" --set train.precision=bf16 \
  --set run.dir= --set train.steps=100
# The GPU run's last checkpoint goes on for 20 steps on the CPU.
step resume_on_cpu train configs/gpt-fortunes.yaml --set parallel.tensor=1 \
  --set parallel.pipeline=1 --set data.tokens="$tokens" --set run.dir="$run_dir" \
  --set train.steps=320 --set sample.tokens=0 --resume latest
TAIL=20 step bench bash tools/bench/gpu.sh "$build" "${MICRO_BATCH:-8}" "${STEPS:-20}" 1
