#!/usr/bin/env bash
# Damaged checkpoints are refused on every rank, before any communication, with the file and
# what is wrong: a truncated shard, a flipped byte, a manifest from a newer format, a missing
# shard, a different tensor/pipeline layout (which names `triax reshard`), another model shape or
# optimizer.
# usage: bad_checkpoints.sh GOOD_STEP_DIR WORK_DIR EXPECT_ERROR MPIEXEC TRIAX CONFIG [--set ...]
set -euo pipefail
GOOD=$1 WORK=$2 EXPECT=$3 MPIEXEC=$4 TRIAX=$5 CONFIG=$6
shift 6
fresh() { rm -rf "${WORK:?}/$1"; mkdir -p "$WORK"; cp -r "$GOOD" "$WORK/$1"; echo "$WORK/$1"; }
run() {  # RANKS MESSAGE DIR [extra args]
  local ranks=$1 message=$2 dir=$3
  shift 3
  "$EXPECT" "$ranks" "$message" "$MPIEXEC" -n "$ranks" "$TRIAX" train "$CONFIG" "$@" --resume "$dir"
}
d=$(fresh truncated) && truncate -s -100 "$d/pp1-tp0.safetensors"
run 4 "bytes, the manifest says" "$d" "$@"
d=$(fresh flipped) && printf 'X' | dd of="$d/pp0-tp1.safetensors" bs=1 seek=5000 conv=notrunc status=none
run 4 "pp0-tp1.safetensors: checksum mismatch" "$d" "$@"
# A shard whose header is valid JSON with the checksum the manifest records, describing an
# impossible tensor: refused naming the shard and the tensor, on every rank.
d=$(fresh impossible)
/usr/bin/python3 - "$d" <<'PY'
import pathlib, re, sys, zlib
d = pathlib.Path(sys.argv[1])
shard = d / "pp1-tp0.safetensors"
data = bytearray(shard.read_bytes())
at = data.index(b'"shape":[128,128]')
data[at:at + 17] = b'"shape":[-12,128]'  # same length: the header size stays right
shard.write_bytes(bytes(data))
manifest = d / "manifest.yaml"
text = manifest.read_text()
text = re.sub(r"(file: pp1-tp0.safetensors,[^}]*crc32: )\d+",
              lambda m: m.group(1) + str(zlib.crc32(bytes(data))), text)
manifest.write_text(text)
PY
run 4 "pp1-tp0.safetensors: tensor 'c0/token_embedding.weight' (F32 [-12,128]" "$d" "$@"
d=$(fresh newer) && sed -i 's/^format_version: 1$/format_version: 99/' "$d/manifest.yaml"
run 4 "checkpoint format version 99 is newer than this triax reads (1)" "$d" "$@"
d=$(fresh missing) && rm "$d/pp1-tp1.safetensors"
run 4 "pp1-tp1.safetensors: shard file is missing" "$d" "$@"
d=$(fresh interrupted) && rm "$d/manifest.yaml"
run 4 "is missing (valid: a checkpoint step folder" "$d" "$@"
d=$(fresh layout)
run 2 "the checkpoint was written at parallel.tensor=2 parallel.pipeline=2" "$d" "$@" \
  --set parallel.tensor=1 --set parallel.pipeline=1
run 2 "triax reshard" "$d" "$@" --set parallel.tensor=1 --set parallel.pipeline=1
# Another model shape or optimizer: named key by key before anything is loaded.
run 4 "holds another model or optimizer: model.hidden was 128, now 64" "$d" "$@" --set model.hidden=64
run 4 "train.optimizer was adamw, now sgd" "$d" "$@" --set train.optimizer=sgd
# Same shapes, other numbers: a key the family's build reads (models/model_keys.h).
run 4 "holds another model or optimizer: model.activation was gelu, now gelu_tanh" "$d" "$@" \
  --set model.activation=gelu_tanh
# --resume auto needs a folder to look in.
"$EXPECT" 4 "--resume auto: no checkpoint folder (set checkpoint.dir or run.dir)" \
  "$MPIEXEC" -n 4 "$TRIAX" train "$CONFIG" "$@" --set run.dir= --resume auto
# Offline conversion refuses to write over its own source (the step folder is rewritten whole).
d=$WORK/own/$(basename "$GOOD")
rm -rf "$WORK/own" && mkdir -p "$WORK/own" && cp -r "$GOOD" "$d"
out=$("$TRIAX" reshard "$d" --tensor 1 --pipeline 1 --out "$WORK/own" 2>&1) && {
  echo "$out"; echo "FAIL: reshard over its source succeeded" >&2; exit 1; }
grep -q "would overwrite the source checkpoint" <<<"$out" || { echo "$out"; exit 1; }
[ -f "$d/manifest.yaml" ] || { echo "FAIL: the source checkpoint was touched" >&2; exit 1; }
echo "PASS: every damaged checkpoint was refused on every rank; reshard kept its source"
