#!/usr/bin/env bash
# Fuzz every reader of outside bytes with libFuzzer (fuzz/): safetensors (load and map), token
# files, checkpoint manifests, the rank table, tokenizer files (tokenizer.json, GPT-2's
# encoder.json + vocab.bpe, tiktoken) and Hugging Face config.json. Each target runs SECONDS
# from a seed corpus of real files (fuzz/seeds.sh makes them with build/triax-core) under
# AddressSanitizer and UBSan; a crash, a hang (> 10 s on one input), a leak-free OOM (> 2 GiB) or
# a refusal that does not name the file is a finding: its input is kept in build-fuzz/findings/
# and the script exits 1. Needs the main build (tools/setup.sh build) and clang (apt: clang).
# usage: tools/fuzz.sh [SECONDS] [TARGET...]
set -uo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${1:-60}
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(fuzz_safetensors fuzz_token_file fuzz_manifest
  fuzz_rank_table fuzz_tokenizer_files fuzz_hf_config)
[ -x build/triax-core ] || { echo "fuzz: build first (tools/setup.sh build)" >&2; exit 2; }
command -v clang++ >/dev/null || { echo "fuzz: needs clang (apt install clang)" >&2; exit 2; }
if [ ! -f build-fuzz/build.ninja ]; then
  cmake -S fuzz -B build-fuzz -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null || exit 2
fi
ninja -C build-fuzz "${TARGETS[@]}" >/dev/null || { ninja -C build-fuzz "${TARGETS[@]}"; exit 2; }
bash fuzz/seeds.sh build-fuzz/seeds || exit 2
mkdir -p build-fuzz/findings
status=0
printf '%-22s %8s %10s %8s  %s\n' target seconds runs corpus verdict
for target in "${TARGETS[@]}"; do
  corpus=build-fuzz/corpus/$target
  mkdir -p "$corpus"
  log=build-fuzz/$target.log
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ASAN_OPTIONS=detect_leaks=0 \
    "build-fuzz/$target" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 \
    -max_len=65536 -artifact_prefix=build-fuzz/findings/$target- "$corpus" \
    "build-fuzz/seeds/$target" >"$log" 2>&1
  rc=$?
  runs=$(sed -nE "s/^Done ([0-9]+) runs.*/\1/p" "$log")
  inputs=$(find "$corpus" -type f | wc -l)
  verdict=$([ $rc -eq 0 ] && echo "no crash, hang or sanitizer report" || echo "FINDING (see $log)")
  [ $rc -eq 0 ] || status=1
  printf '%-22s %8s %10s %8s  %s\n' "$target" "$SECONDS_EACH" "${runs:-?}" "$inputs" "$verdict"
done
exit $status
