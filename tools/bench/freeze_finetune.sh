#!/usr/bin/env bash
# PipeTransformer's claim on triax (docs/relayout.md): fine-tuning with the freeze algorithm,
# AutoPipe and AutoDP reaches the same held-out loss (goal: within 1%) as fine-tuning without,
# in less wall time (goal: <= 0.6x). The main job's GPT is pretrained on fortunes at pp 4 on
# RANKS ranks, exported and imported as a step-0 checkpoint, then fine-tuned for EPOCHS epochs
# on another text (Debian's licence texts, /usr/share/common-licenses) twice per round, rounds
# interleaved: all layers trained (pp 4 throughout), and freezing every quarter epoch from the
# end of the first epoch (the layout re-laid out as AutoPipe/AutoDP choose). Printed: each run's
# wall time and final held-out loss, the medians' ratios beside the goals, and for the freezing
# run the time per phase, the layouts chosen and each re-layout's pause beside what a
# checkpoint save and load cost the same model (the pretraining's save, the fine-tune's load).
# usage: tools/bench/freeze_finetune.sh [ROUNDS] [EPOCHS] [RANKS] [PRETRAIN_STEPS]
set -euo pipefail
ROUNDS=${1:-2} EPOCHS=${2:-3} RANKS=${3:-4} PRETRAIN=${4:-200}
cd "$(dirname "$0")/../.."
WORK=$(mktemp -d /tmp/triax-freeze.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
[ -f runs/tokens/fortunes/train.tok ] ||
  build/triax prepare-data /usr/share/games/fortunes --out runs/tokens/fortunes >/dev/null
build/triax prepare-data /usr/share/common-licenses --out "$WORK/licenses" >/dev/null
COMMON=(--set parallel.tensor=1 --set parallel.pipeline=4 --set sample.tokens=0)
echo "pretraining: $PRETRAIN steps on fortunes at pp 4"
mpiexec -n "$RANKS" build/triax train configs/gpt-fortunes.yaml "${COMMON[@]}" \
  --set train.steps="$PRETRAIN" --set train.log_every=0 --set train.eval_every=0 \
  --set run.dir="$WORK/pretrain" >"$WORK/pretrain.log" 2>&1 || { cat "$WORK/pretrain.log"; exit 1; }
save_s=$(grep -E "checkpoint of step $PRETRAIN saved" "$WORK/pretrain.log" |
  sed -E 's/.* in ([0-9.]+) s$/\1/')
build/triax export "$WORK/pretrain/checkpoints" --out "$WORK/pretrained.safetensors" >/dev/null
build/triax import "$WORK/pretrained.safetensors" --tensor 1 --pipeline 4 --out "$WORK/init" >/dev/null
# Steps per epoch from the plan (the "data:" line), then the freezing cadence.
steps_per_epoch=$(build/triax config configs/gpt-fortunes.yaml "${COMMON[@]}" \
  --set data.tokens="$WORK/licenses" --world "$RANKS" | sed -nE 's/.*\(([0-9]+) steps per epoch\).*/\1/p')
every=$((steps_per_epoch / 4))
FINETUNE=(--set data.tokens="$WORK/licenses" --set train.steps=0 --set train.epochs="$EPOCHS"
  --set train.lr=0.001 --set train.min_lr=0.0001 --set train.warmup_steps=10
  --set train.eval_every="$steps_per_epoch" --set train.eval_batches=0 --set train.log_every=0
  --set checkpoint.at_end=false --set relayout.on_request=false)
echo "fine-tuning: $EPOCHS epochs of $steps_per_epoch steps on the licence texts; freezing every" \
  "$every steps from step $steps_per_epoch"
for round in $(seq 1 "$ROUNDS"); do
  for mode in full freeze; do
    extra=()
    [ "$mode" = freeze ] && extra=(--set freeze.every="$every" --set freeze.start="$steps_per_epoch")
    rm -rf "$WORK/$mode"
    begin=$(date +%s%N)
    mpiexec -n "$RANKS" build/triax train configs/gpt-fortunes.yaml "${COMMON[@]}" \
      "${FINETUNE[@]}" "${extra[@]}" --set run.dir="$WORK/$mode" --resume "$WORK/init" \
      >"$WORK/$mode.log" 2>&1 || { cat "$WORK/$mode.log"; exit 1; }
    wall_ms=$((($(date +%s%N) - begin) / 1000000))
    wall=$((wall_ms / 1000)).$(printf %03d $((wall_ms % 1000)))
    load_s=$(sed -nE 's/.*resumed from .* in ([0-9.]+) s$/\1/p' "$WORK/$mode.log")
    echo "$round $mode $wall $load_s" >>"$WORK/runs.txt"
    cp "$WORK/$mode/metrics.jsonl" "$WORK/$mode-$round.jsonl"
    echo "round $round $mode: $wall s wall"
  done
done
/usr/bin/python3 tools/bench/freeze_report.py "$WORK" "$ROUNDS" "$save_s"
