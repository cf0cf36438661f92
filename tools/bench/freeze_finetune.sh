#!/usr/bin/env bash
# PipeTransformer's claim on triax (docs/relayout.md): fine-tuning with the freeze algorithm,
# AutoPipe and AutoDP reaches the same held-out loss (goal: within 1%) as fine-tuning without,
# in less wall time (goal: <= 0.6x). The main job's GPT is pretrained on fortunes (RANKS ranks,
# dp), exported and imported as a step-0 checkpoint, then fine-tuned for EPOCHS epochs on another
# text (Debian's licence texts, /usr/share/common-licenses) four ways per round, rounds
# interleaved: `full` = all layers at pp 4 (the layout PipeTransformer starts from), `freeze` =
# the same with freezing every quarter epoch from the end of the first epoch (re-laid out as
# AutoPipe/AutoDP choose, AutoCache on), `freeze-nocache` = the same with freeze.cache: false
# (what AutoCache gains), and `full-dp` = all layers at pp 1 (dp = RANKS), which separates what
# the freeze gains from what the layout alone gains. FREEZE_SET (environment) adds settings to
# both freezing runs, e.g. FREEZE_SET="--set freeze.max_fraction=0.5"; MODEL_SET to every run,
# pretraining included, e.g. MODEL_SET="--set model.tie_embeddings=false"; PRETRAINED names a
# model exported before (`triax export`) to fine-tune instead of pretraining one; HELD_OUT names
# one of fortunes' files (e.g. songs-poems): pretraining then reads the others and the fine-tune
# that one, a new text of the same language and source (the fine-tuning PipeTransformer
# measures: a pretrained model adapted to a related task) instead of the licences. Printed: each
# run's wall time and final held-out loss, the ratios beside the goals, and for the freezing run
# the time per phase, the layouts chosen and each re-layout's pause beside what saving and
# resuming costs instead (`full`'s final save, on the layout a freeze starts from; the load of
# the freezing run's final checkpoint on the layout it left, by a short run resuming it; and the
# fine-tune's process start to the end of its first step).
# usage: tools/bench/freeze_finetune.sh [ROUNDS] [EPOCHS] [RANKS] [PRETRAIN_STEPS]
set -euo pipefail
ROUNDS=${1:-1} EPOCHS=${2:-3} RANKS=${3:-4} PRETRAIN=${4:-600}
cd "$(dirname "$0")/../.."
WORK=$(mktemp -d /tmp/triax-freeze.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
if [ -n "${HELD_OUT:-}" ]; then
  fortunes=/usr/share/games/fortunes
  [ -f "$fortunes/$HELD_OUT" ] || { echo "HELD_OUT=$HELD_OUT: no such file in $fortunes"; exit 2; }
  if [ -z "${PRETRAINED:-}" ]; then
    mapfile -t others < <(find "$fortunes" -maxdepth 1 -type f ! -name '*.dat' ! -name '*.u8' \
      ! -name "$HELD_OUT" | sort)
    build/triax prepare-data "${others[@]}" --out "$WORK/pretrain-text" >/dev/null
  fi
  build/triax prepare-data "$fortunes/$HELD_OUT" --out "$WORK/finetune-text" >/dev/null
  PRETRAIN_DATA=$WORK/pretrain-text TEXT="fortunes' $HELD_OUT"
else
  [ -f runs/tokens/fortunes/train.tok ] ||
    build/triax prepare-data /usr/share/games/fortunes --out runs/tokens/fortunes >/dev/null
  build/triax prepare-data /usr/share/common-licenses --out "$WORK/finetune-text" >/dev/null
  PRETRAIN_DATA=runs/tokens/fortunes TEXT="the licence texts"
fi
read -r -a model_set <<<"${MODEL_SET:-}"
COMMON=(--set parallel.tensor=1 --set parallel.pipeline=4 --set sample.tokens=0 "${model_set[@]}")
if [ -n "${PRETRAINED:-}" ]; then
  echo "pretrained: $PRETRAINED"
  cp "$PRETRAINED" "$WORK/pretrained.safetensors"
else
  echo "pretraining: $PRETRAIN steps on fortunes at dp $RANKS"
  # (train.epochs: PRETRAIN steps, as many passes over fortunes as that takes)
  mpiexec -n "$RANKS" build/triax train configs/gpt-fortunes.yaml "${COMMON[@]}" \
    --set parallel.pipeline=1 --set train.epochs=1000 --set data.tokens="$PRETRAIN_DATA" \
    --set train.steps="$PRETRAIN" --set train.log_every=0 --set train.eval_every=0 \
    --set run.dir="$WORK/pretrain" >"$WORK/pretrain.log" 2>&1 || { cat "$WORK/pretrain.log"; exit 1; }
  build/triax export "$WORK/pretrain/checkpoints" --out "$WORK/pretrained.safetensors" >/dev/null
fi
build/triax import "$WORK/pretrained.safetensors" --tensor 1 --pipeline 4 --out "$WORK/init" >/dev/null
build/triax import "$WORK/pretrained.safetensors" --tensor 1 --pipeline 1 --out "$WORK/init-pp1" >/dev/null
# Steps per epoch from the plan (the "data:" line), then the freezing cadence.
steps_per_epoch=$(build/triax config configs/gpt-fortunes.yaml "${COMMON[@]}" \
  --set data.tokens="$WORK/finetune-text" --world "$RANKS" | sed -nE 's/.*\(([0-9]+) steps per epoch\).*/\1/p')
every=$((steps_per_epoch / 4))
FINETUNE=(--set data.tokens="$WORK/finetune-text" --set train.steps=0 --set train.epochs="$EPOCHS"
  --set train.lr=0.001 --set train.min_lr=0.0001 --set train.warmup_steps=10
  --set train.eval_every="$steps_per_epoch" --set train.eval_batches=0 --set train.log_every=0
  --set relayout.on_request=false)
echo "fine-tuning: $EPOCHS epochs of $steps_per_epoch steps on $TEXT; freezing every" \
  "$every steps from step $steps_per_epoch"
read -r -a freeze_set <<<"${FREEZE_SET:-}"
for round in $(seq 1 "$ROUNDS"); do
  for mode in full freeze freeze-nocache full-dp; do
    extra=(--resume "$WORK/init")
    case $mode in freeze*)
      extra+=(--set freeze.every="$every" --set freeze.start="$steps_per_epoch" "${freeze_set[@]}")
    esac
    [ "$mode" = freeze-nocache ] && extra+=(--set freeze.cache=false)
    [ "$mode" = full-dp ] && extra=(--resume "$WORK/init-pp1" --set parallel.pipeline=1)
    rm -rf "$WORK/$mode"
    begin=$(date +%s%N)
    mpiexec -n "$RANKS" build/triax train configs/gpt-fortunes.yaml "${COMMON[@]}" \
      "${FINETUNE[@]}" "${extra[@]}" --set run.dir="$WORK/$mode" \
      >"$WORK/$mode.log" 2>&1 || { cat "$WORK/$mode.log"; exit 1; }
    wall_ms=$((($(date +%s%N) - begin) / 1000000))
    wall=$((wall_ms / 1000)).$(printf %03d $((wall_ms % 1000)))
    load_s=$(sed -nE 's/.*resumed from .* in ([0-9.]+) s$/\1/p' "$WORK/$mode.log")
    first_s=$(sed -nE 's/.*first step done ([0-9.]+) s after start.*/\1/p' "$WORK/$mode.log")
    save_s=$(sed -nE 's/.*checkpoint of step [0-9]+ saved to .* in ([0-9.]+) s$/\1/p' "$WORK/$mode.log")
    echo "$round $mode $wall $load_s $first_s $save_s" >>"$WORK/runs.txt"
    if [ "$mode" = freeze ]; then
      # A restart's load on the layout the freeze left: its final checkpoint (the whole optimizer
      # state, the frozen layers' included) resumed there for one more epoch's first steps.
      to=$(grep "layout changed after step" "$WORK/$mode.log" | tail -1)
      pp=$(sed -nE 's/.*-> dp [0-9]+ x tp [0-9]+ x pp ([0-9]+),.*/\1/p' <<<"$to")
      frozen=$(sed -nE 's/.*, ([0-9]+) layer\(s\) frozen$/\1/p' <<<"$to")
      mpiexec -n "$RANKS" build/triax train configs/gpt-fortunes.yaml "${COMMON[@]}" \
        "${FINETUNE[@]}" --set train.epochs=$((EPOCHS + 1)) --set parallel.pipeline="${pp:-4}" \
        --set train.frozen_layers="${frozen:-0}" --set train.eval_every=0 \
        --resume "$WORK/$mode/checkpoints" --set run.dir="$WORK/reload" \
        --set train.steps=$((steps_per_epoch * EPOCHS + 2)) >"$WORK/reload.log" 2>&1 ||
        { cat "$WORK/reload.log"; exit 1; }
      reload_s=$(sed -nE 's/.*resumed from .* in ([0-9.]+) s$/\1/p' "$WORK/reload.log")
      echo "$round reload 0 $reload_s 0 0" >>"$WORK/runs.txt"
      rm -rf "$WORK/reload"
    fi
    cp "$WORK/$mode/metrics.jsonl" "$WORK/$mode-$round.jsonl"
    echo "round $round $mode: $wall s wall"
  done
done
/usr/bin/python3 tools/bench/freeze_report.py "$WORK" "$ROUNDS"
