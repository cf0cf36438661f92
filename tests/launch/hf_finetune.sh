#!/usr/bin/env bash
# The README's fine-tuning example, end to end, checked at each step against the independent
# Hugging Face reference (tests/interop/hf_reference.py):
#   a GPT-2-shaped Hugging Face folder (random weights: nothing pretrained can be downloaded here)
#   -> fortunes tokenized with GPT-2's real tokenizer -> imported at tp 2 x pp 2 -> fine-tuned on
#   8 ranks (dp 2) -> greedy text from the checkpoint -> exported as a Hugging Face folder, whose
#   held-out loss (computed by the reference from the folder) equals the one triax recorded, and
#   whose greedy continuation equals `triax generate`'s token for token.
# usage: hf_finetune.sh SOURCE_DIR TRIAX WORK_DIR GPT2_DIR
# Exit 77 (skipped) without GPT-2's files or python3-torch.
set -euo pipefail
SOURCE=$1 TRIAX=$2 WORK=$3 GPT2=$4
REF=$SOURCE/tests/interop/hf_reference.py
[ -f "$GPT2/vocab.bpe" ] || { echo "SKIPPED: no GPT-2 tokenizer files in $GPT2 (tools/fetch_gpt2_vocab.py)"; exit 77; }
/usr/bin/python3 -c 'import torch' 2>/dev/null || { echo "SKIPPED: no python3-torch"; exit 77; }
rm -rf "$WORK"
mkdir -p "$WORK"
/usr/bin/python3 "$REF" make "$WORK/hf_in" gpt2 --vocab 50257 --positions 32 --hidden 64 \
  --layers 2 --heads 4 --seed 3
"$TRIAX" prepare-data /usr/share/games/fortunes --tokenizer "$GPT2" --out "$WORK/tokens"
"$TRIAX" import "$WORK/hf_in" --tensor 2 --pipeline 2 --out "$WORK/ckpt" \
  --config "$SOURCE/configs/gpt2-finetune.yaml" --set data.tokens="$WORK/tokens" \
  --set data.tokenizer="$GPT2" --set train.steps=6 --set train.eval_every=6 \
  --set train.log_every=2 --set run.dir="$WORK/run" --set checkpoint.every=6
mpiexec -n 8 "$TRIAX" train "$WORK/ckpt/config.yaml" --resume "$WORK/ckpt"
ids=$("$TRIAX" generate "$WORK/run/checkpoints" --prompt "The meaning of life is" \
  --tokens 8 --ids | tee /dev/stderr | sed -n 's/^ids: //p')
"$TRIAX" export "$WORK/run/checkpoints/step_00000006" --hf --out "$WORK/hf_out"
/usr/bin/python3 "$REF" loss "$WORK/hf_out" "$WORK/tokens/val.tok" "$WORK/run" 6 4 16
/usr/bin/python3 "$REF" greedy "$WORK/hf_out" 464,3616,286,1204,318 8 "$ids"
echo "PASS: Hugging Face GPT-2 folder -> GPT-2 tokens -> 3D fine-tune -> text -> Hugging Face folder"
