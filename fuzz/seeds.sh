#!/usr/bin/env bash
# Seed corpora for the fuzz targets (tools/fuzz.sh): real files of each format, made with the
# main build and the repository's test fixtures, so that fuzzing starts from valid inputs.
# usage: fuzz/seeds.sh OUT_DIR
set -euo pipefail
OUT=$1
ROOT=$(cd "$(dirname "$0")/.." && pwd)
[ -f "$OUT/.done" ] && exit 0
WORK=$(mktemp -d /tmp/triax-seeds.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$OUT"/{fuzz_safetensors,fuzz_token_file,fuzz_manifest,fuzz_rank_table,fuzz_tokenizer_files,fuzz_hf_config}
# A tiny run: token files, a checkpoint (shards + manifest), a rank table.
printf 'hello world\nthe quick brown fox\n%.0s' $(seq 1 50) >"$WORK/text.txt"
"$ROOT/build/triax-core" prepare-data "$WORK/text.txt" --out "$WORK/tokens" >/dev/null
cp "$WORK/tokens/train.tok" "$OUT/fuzz_token_file/train.tok"
cp "$WORK/tokens/val.tok" "$OUT/fuzz_token_file/val.tok"
cp "$ROOT"/tests/checkpoint/format_v1/step_00000002/*.safetensors "$OUT/fuzz_safetensors/"
cp "$ROOT/tests/checkpoint/format_v1/step_00000002/manifest.yaml" "$OUT/fuzz_manifest/"
printf '0 n1 100\n1 n1 101\n2 n2.cluster 200\n3 n2.cluster 201\n' >"$OUT/fuzz_rank_table/ranks.txt"
# Tokenizer files: the first byte picks the reader (0 tokenizer.json, 1 GPT-2, 2 tiktoken).
printf '\0{"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]}, "pre_tokenizer": {"type": "ByteLevel"}, "added_tokens": [{"id": 3, "content": "<|endoftext|>", "special": true}]}' \
  >"$OUT/fuzz_tokenizer_files/tokenizer.json"
printf '\001{"a": 0, "b": 1, "ab": 2, "<|endoftext|>": 3}\0#version: 0.2\na b\n' \
  >"$OUT/fuzz_tokenizer_files/gpt2"
printf '\002YQ== 0\nYg== 1\nYWI= 2\n' >"$OUT/fuzz_tokenizer_files/tiktoken"
printf '{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 2, "vocab_size": 256, "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "max_position_embeddings": 128, "tie_word_embeddings": false, "torch_dtype": "float32"}' \
  >"$OUT/fuzz_hf_config/llama.json"
printf '{"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_embd": 64, "n_head": 4, "n_layer": 2, "vocab_size": 256, "n_positions": 128, "layer_norm_epsilon": 1e-5}' \
  >"$OUT/fuzz_hf_config/gpt2.json"
touch "$OUT/.done"
