#!/usr/bin/python3
"""The table of tools/bench/freeze_finetune.sh: WORK/runs.txt (round, mode, wall s, load s, first
step s after the process started, final save s; mode `reload`: the load of the freezing run's
final checkpoint on its last layout) and
WORK/MODE-ROUND.jsonl (each step's loss, step_s, val_loss, relayout_* and prefix_cached keys)."""
import json
import statistics
import sys

work, rounds = sys.argv[1], int(sys.argv[2])
runs = [line.split() for line in open(f"{work}/runs.txt")]
MODES = ("full", "freeze", "freeze-nocache", "full-dp")
wall = {m: [float(r[2]) for r in runs if r[1] == m] for m in MODES}
# A restart's load on the layout the freeze left (the freezing run's final checkpoint resumed).
reloads = [float(r[3]) for r in runs if r[1] == "reload"]
load = statistics.median(reloads) if reloads else float("nan")
first_step = statistics.median(float(r[4]) for r in runs if r[1] == "full")
# The save a restart would start with: on the layout the freeze starts from (pp 4), `full`'s final one.
save_s = statistics.median(float(r[5]) for r in runs if r[1] == "full")


def records(mode, rnd):
    return [json.loads(l) for l in open(f"{work}/{mode}-{rnd}.jsonl") if l.strip()]


def final_val(mode, rnd):
    return [r["val_loss"] for r in records(mode, rnd) if "val_loss" in r][-1]


val = {m: [final_val(m, k) for k in range(1, rounds + 1)] for m in MODES}
print("\nmode            wall s (median)   final held-out loss (each round)")
for m in MODES:
    print(f"{m:15} {statistics.median(wall[m]):10.1f}        {', '.join(f'{v:.4f}' for v in val[m])}")
ratio = statistics.median(wall["freeze"]) / statistics.median(wall["full"])
loss_gap = statistics.median(val["freeze"]) / statistics.median(val["full"]) - 1
print(f"wall time, freeze / full: {ratio:.2f}x (goal <= 0.6x)")
print(f"held-out loss, freeze vs full: {100 * loss_gap:+.2f}% (goal within 1%)")
dp_ratio = statistics.median(wall["freeze"]) / statistics.median(wall["full-dp"])
dp_gap = statistics.median(val["freeze"]) / statistics.median(val["full-dp"]) - 1
cache_ratio = statistics.median(wall["freeze"]) / statistics.median(wall["freeze-nocache"])
print(f"AutoCache: freeze / freeze-nocache wall {cache_ratio:.2f}x")
print(f"against all layers at pp 1 (full-dp): wall {dp_ratio:.2f}x, held-out loss "
      f"{100 * dp_gap:+.2f}% (what freezing gains beyond the layout)")

print("\nthe freezing run (last round), phase by phase:")
recs = records("freeze", rounds)
phase_start, phase_s, layout = recs[0]["step"], 0.0, "the starting layout (dp 1 x tp 1 x pp 4)"
cached = []
pauses = []


def phase_line(last):
    share = f", {100 * statistics.mean(cached):.0f}% of rank 0's rows from AutoCache" if cached else ""
    print(f"  steps {phase_start:4}..{last:4}: {phase_s:6.1f} s  {layout}{share}")


for r in recs:
    if "relayout_to" in r:
        phase_line(r["step"] - 1)
        pauses.append(r["relayout_pause_s"])
        print(f"  re-layout after step {r['relayout_after_step']} ({r['relayout_trigger']}): "
              f"pause {r['relayout_pause_s']:.2f} s")
        phase_start, phase_s, layout, cached = r["step"], 0.0, r["relayout_to"], []
    phase_s += r["step_s"]
    if "prefix_cached" in r:
        cached.append(r["prefix_cached"])
phase_line(recs[-1]["step"])
if pauses:
    print(f"re-layout pauses: longest {max(pauses):.2f} s; instead, a checkpoint save "
          f"({save_s:.2f} s) and its load ({load:.2f} s): {save_s + load:.2f} s; a save and a "
          f"restart to the first step ({first_step:.2f} s after the process starts): "
          f"{save_s + first_step:.2f} s (goal: each pause <= the save and load)")
