#!/usr/bin/env bash
# AutoCache (docs/relayout.md): the frozen prefix's output per training sample, kept in
# run.dir/autocache/ and read in later epochs instead of running the frozen layers. On a small
# text read for 3 epochs, each run against the same run with freeze.cache: false:
#   - layers frozen from the start at tp 2 x dp 2 (the tp pair agrees on its misses; the two dp
#     replicas share the rows, which the sampler deals to either): every loss and the final
#     shards equal bit for bit under layout-invariant numerics computing sample by sample (so a
#     row's bits do not depend on the rows beside it); rank 0 takes no row from the cache in the
#     first epoch and every row after;
#   - the freeze algorithm from tp 1 x pp 4 (AutoPipe, AutoDP, the prefix growing mid-epoch):
#     the same, bit for bit; some rows come from the cache; only the last prefix's file is left;
#   - the same under the default numerics, where the frozen layers run only for the rows a
#     micro-batch misses: every loss within 1e-6 relative.
# usage: autocache.sh WORK MPIEXEC TRIAX CONFIG [--set ...]
set -euo pipefail
WORK=$1 MPIEXEC=$2 TRIAX=$3 CONFIG=$4
shift 4
here=$(dirname "$0")
rm -rf "$WORK"
mkdir -p "$WORK/text"
head -c 16000 /usr/share/common-licenses/GPL-3 >"$WORK/text/gpl.txt"  # 6 steps an epoch
"$TRIAX" prepare-data "$WORK/text" --out "$WORK/tokens" --val-fraction 0.25 >/dev/null
COMMON=(--set data.tokens="$WORK/tokens" --set train.steps=0 --set train.epochs=3
  --set train.global_batch=32 --set train.micro_batch=4 --set train.warmup_steps=2
  --set train.eval_every=0 --set train.log_every=0 --set sample.tokens=0
  --set relayout.on_request=false)
INVARIANT=(--set train.numerics=layout_invariant --set train.micro_batch_invariant=true)
read -r samples per_epoch < <("$TRIAX" config "$CONFIG" "$@" "${COMMON[@]}" \
  --set parallel.tensor=1 --set parallel.pipeline=1 --world 4 |
  sed -nE 's/^data: ([0-9]+) training samples \(([0-9]+) steps per epoch\).*/\1 \2/p')
[ -n "$per_epoch" ] || { echo "FAIL: no steps per epoch from triax config"; exit 1; }

# NAME [--set ...]: one run with the cache and one without, into $WORK/NAME and NAME-nocache.
pair() {
  local name=$1
  shift
  for cache in true false; do
    local dir=$WORK/$name
    [ "$cache" = false ] && dir=$WORK/$name-nocache
    "$MPIEXEC" -n 4 "$TRIAX" train "$CONFIG" "$@" --set freeze.cache="$cache" \
      --set run.dir="$dir" >"$dir.log" 2>&1 || { cat "$dir.log"; exit 1; }
  done
}
same_shards() {
  local last
  last=$(ls -d "$WORK/$1"/checkpoints/step_* | tail -1)
  for shard in "$last"/*.safetensors; do
    cmp "$shard" "$WORK/$1-nocache/checkpoints/$(basename "$last")/$(basename "$shard")"
  done
}

pair fixed "${COMMON[@]}" "${INVARIANT[@]}" --set parallel.tensor=2 --set parallel.pipeline=1 \
  --set train.frozen_layers=2
/usr/bin/python3 "$here/compare_losses.py" "$WORK/fixed" "$WORK/fixed-nocache" 0
same_shards fixed
/usr/bin/python3 - "$WORK/fixed/metrics.jsonl" "$per_epoch" "$samples" <<'PY'
import json, sys
cached = [json.loads(l).get("prefix_cached") for l in open(sys.argv[1]) if l.strip()]
per_epoch, samples = int(sys.argv[2]), int(sys.argv[3])
first, later = cached[:per_epoch], cached[per_epoch:]
assert all(c == 0 for c in first), f"epoch 1 should compute every row: {first}"
# Rank 0 holds 16 of each step's 32 rows (dp 2); an epoch leaves out the samples past its last
# whole batch, so a later epoch may meet at most those few for the first time.
unseen = samples - per_epoch * 32
missed = sum(round((1 - c) * 16) for c in later)
epochs = len(later) // per_epoch
assert later and missed <= unseen * epochs, f"later epochs should read (nearly) every row: {later}"
print(f"frozen from the start: no row from the cache in epoch 1; after it {missed} of "
      f"{16 * len(later)} rows computed (at most {unseen * epochs} never seen before)")
PY
echo "fixed: with and without the cache, every loss and the final shards are identical"

pair freeze "${COMMON[@]}" "${INVARIANT[@]}" --set parallel.tensor=1 --set parallel.pipeline=4 \
  --set freeze.every=4 --set freeze.start=4
/usr/bin/python3 "$here/compare_losses.py" "$WORK/freeze" "$WORK/freeze-nocache" 0
same_shards freeze
grep -q "layout changed after step 4 (freeze" "$WORK/freeze.log" ||
  { cat "$WORK/freeze.log"; echo "FAIL: no freeze after step 4"; exit 1; }
/usr/bin/python3 - "$WORK/freeze/metrics.jsonl" <<'PY'
import json, sys
cached = [json.loads(l).get("prefix_cached") or 0 for l in open(sys.argv[1]) if l.strip()]
assert max(cached) > 0, f"no row came from the cache: {cached}"
print("freeze algorithm: rows from the cache per step", [round(c, 2) for c in cached])
PY
files=$(ls "$WORK/freeze/autocache")
[ "$(echo "$files" | wc -l)" = 1 ] || { echo "FAIL: stale cache files: $files"; exit 1; }
echo "freeze: with and without the cache, every loss and the final shards are identical ($files)"

pair fast "${COMMON[@]}" --set parallel.tensor=1 --set parallel.pipeline=4 \
  --set freeze.every=4 --set freeze.start=4
/usr/bin/python3 "$here/compare_losses.py" "$WORK/fast" "$WORK/fast-nocache" 1e-6
echo "PASS: cached prefix outputs give the run without the cache"
