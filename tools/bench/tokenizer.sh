#!/usr/bin/env bash
# Benchmark (not a test): GPT-2 tokenizer throughput on the same corpus (Debian's fortunes, all
# files concatenated), one thread each, rounds interleaved, medians:
#   triax    `triax prepare-data --tokenizer GPT2 --threads 1` (its tokenising time)
#   python   openai/gpt-2's encoder.py algorithm (tests/tokenizer/bpe_reference.py, python3-regex)
#   node     the npm package gpt-3-encoder's Encoder.js (if node is installed)
# and then triax on every core (prepare-data's parallel path).
#   tools/bench/tokenizer.sh [ROUNDS]        (default 3)
# Goal (issue 26): triax >= 1.5x the reference encoder's tokens/s.
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-3}
gpt2=build/third_party/gpt2
[ -x build/triax ] || { echo "build first: tools/setup.sh build" >&2; exit 2; }
[ -f $gpt2/vocab.bpe ] || /usr/bin/python3 tools/fetch_gpt2_vocab.py $gpt2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The text fortunes (not the ASCII-art files), encoded by all three in ~4 KiB blocks at line ends.
find /usr/share/games/fortunes -maxdepth 1 -type f ! -name '*.dat' ! -name art ! -name ascii-art \
  -exec cat {} + > "$work/corpus.txt"
echo "corpus: $(wc -c <"$work/corpus.txt") bytes of fortunes; $(nproc) cores; $(date -u +%F)"
speed() { sed -E 's/.* ([0-9]+) tokens\/s.*/\1/'; }
triax=() python=() node=()
for r in $(seq 1 "$rounds"); do
  t=$(build/triax prepare-data "$work/corpus.txt" --tokenizer $gpt2 --threads 1 --out "$work/tok" |
    grep -o '[0-9]* tokens/s' | speed)
  p=$(/usr/bin/python3 tests/tokenizer/bpe_reference.py bench $gpt2 "$work/corpus.txt" | speed)
  n=0
  command -v node >/dev/null && n=$(node tools/bench/tokenizer_node.js $gpt2 "$work/corpus.txt" | speed)
  echo "round $r: triax $t, python $p, node $n tokens/s"
  triax+=("$t") python+=("$p") node+=("$n")
done
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
mt=$(median "${triax[@]}") mp=$(median "${python[@]}") mn=$(median "${node[@]}")
all=$(build/triax prepare-data "$work/corpus.txt" --tokenizer $gpt2 --out "$work/tok" |
  grep -o '[0-9]* tokens/s on [0-9]* thread(s)')
awk -v t="$mt" -v p="$mp" -v n="$mn" 'BEGIN {
  printf "median tokens/s, one thread: triax %d, python encoder.py %d, node Encoder.js %d\n", t, p, n
  printf "triax / python %.1fx, triax / node %s (goal >= 1.5x the reference encoder: %s)\n",
    t / p, (n > 0 ? sprintf("%.1fx", t / n) : "n/a"), ((t / p >= 1.5 && (n == 0 || t / n >= 1.5)) ? "met" : "not met") }'
echo "triax prepare-data on every core: $all"
