#!/usr/bin/python3
"""usage: frozen_tensors.py STEP_DIR_BEFORE STEP_DIR_AFTER FROZEN_LAYERS

Every tensor of the frozen part of the model — blocks layer0 .. layer{FROZEN_LAYERS-1}, the
embeddings, and each one's optimizer state — must hold the same bytes in both checkpoints (each
read from all its shards, chunk prefixes dropped, each tp rank's slice on its own; both
checkpoints at the same tp); and at least one active parameter must
have changed, so the comparison can fail. Reads safetensors directly (header length, JSON, bytes)."""
import glob
import json
import re
import struct
import sys


def tensors(step_dir):
    out = {}
    for path in sorted(glob.glob(f"{step_dir}/*.safetensors")):
        with open(path, "rb") as f:
            n = struct.unpack("<Q", f.read(8))[0]
            header = json.loads(f.read(n))
            data = f.read()
        tp = re.search(r"tp(\d+)\.safetensors$", path).group(1)  # a tp slice per file
        for name, info in header.items():
            if name == "__metadata__" or name.startswith("rng/"):
                continue
            begin, end = info["data_offsets"]
            out[f"tp{tp}/" + re.sub(r"^c\d+/", "", name)] = data[begin:end]
    return out


before, after, frozen = tensors(sys.argv[1]), tensors(sys.argv[2]), int(sys.argv[3])


def is_frozen(key):
    name = key.split("/", 1)[1]
    m = re.match(r"layer(\d+)\.", name)
    if m:
        return int(m.group(1)) < frozen
    return name.split("@")[0].startswith(("token_embedding.", "position_embedding."))


names = [n for n in before if is_frozen(n)]
if not names:
    sys.exit("no frozen tensor found")
for name in names:
    if before[name] != after.get(name):
        sys.exit(f"{name} changed after it froze")
moved = [n for n in before if not is_frozen(n) and "@" not in n and before[n] != after.get(n)]
if not moved:
    sys.exit("no active parameter changed: the comparison proves nothing")
print(f"{len(names)} frozen tensors (values and optimizer state) bit-identical, "
      f"{len(moved)} active parameters changed")
