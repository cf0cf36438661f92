#!/usr/bin/env bash
# Benchmark (not a test): the memory of `triax import` on a multi-GB Hugging Face folder. A
# GPT-2-medium-shaped folder (355M parameters, random weights, bf16, 4 safetensors shards) is
# imported at tp 2 x pp 2; the peak resident set of the import is printed beside what it may hold:
# one rank's share (its largest output shard) plus one full fp32 tensor (the largest), plus the
# resident set of the same command on a tiny folder (LibTorch's own footprint).
#   tools/bench/hf_import_memory.sh [WORK_DIR]      (default: a temporary folder; ~3 GB of disk)
# Goal (issue 26): never more than one rank's share plus one tensor.
set -euo pipefail
cd "$(dirname "$0")/../.."
work=${1:-$(mktemp -d)}
mkdir -p "$work"
[ -x build/triax ] || { echo "build first: tools/setup.sh build" >&2; exit 2; }
ref=tests/interop/hf_reference.py
peak() {  # the peak resident set (MiB) of a command, from the kernel's accounting of children
  /usr/bin/python3 -c 'import resource, subprocess, sys
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)' "$@"
}
rm -rf "$work/big" "$work/tiny" "$work/out_big" "$work/out_tiny"
/usr/bin/python3 $ref make "$work/big" gpt2 --vocab 50257 --positions 1024 --hidden 1024 \
  --layers 24 --heads 16 --shards 4 --dtype BF16
/usr/bin/python3 $ref make "$work/tiny" gpt2
folder=$(du -sm "$work/big" | cut -f1)
base=$(peak build/triax import "$work/tiny" --tensor 2 --pipeline 2 --out "$work/out_tiny")
big=$(peak build/triax import "$work/big" --tensor 2 --pipeline 2 --out "$work/out_big")
share=$(find "$work/out_big" -name 'pp*-tp*.safetensors' -printf '%s\n' | sort -n | tail -1)
share=$((share / 1048576))
tensor=$((50257 * 1024 * 4 / 1048576))  # wte in fp32, the largest tensor
bound=$((share + tensor + base))
echo "folder ${folder} MiB (bf16, 4 shards); model in fp32 $((folder * 2)) MiB"
echo "import at tp 2 x pp 2: peak resident ${big} MiB; bound = largest rank share ${share} +" \
  "largest tensor ${tensor} + LibTorch's footprint ${base} = ${bound} MiB" \
  "(goal: peak <= bound: $([ "$big" -le "$bound" ] && echo met || echo not met))"
[ -n "${1:-}" ] || rm -rf "$work"
