#!/usr/bin/env bash
# The re-layout pause beside what a restart costs instead (docs/relayout.md; goal: each pause <=
# a checkpoint save and its load). The main job's GPT on RANKS ranks, at dp 1 x pp RANKS on
# fortunes' songs-poems, ROUNDS rounds, interleaved: `online` = the freeze algorithm freezes 2 of
# 4 layers after step 20 and re-lays the run out to dp RANKS x pp 1 in memory (its logged pause
# and parts); `restart` = the same run saves after step 20 (pp RANKS), `triax reshard` converts
# the checkpoint to pp 1, and a new run resumes it at dp RANKS with the 2 layers frozen (the save,
# the reshard, the load, and the new process's start to its first step). Medians printed.
# usage: tools/bench/relayout_pause.sh [ROUNDS] [RANKS]
set -euo pipefail
ROUNDS=${1:-5} RANKS=${2:-4}
cd "$(dirname "$0")/../.."
WORK=$(mktemp -d /tmp/triax-pause.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
build/triax prepare-data /usr/share/games/fortunes/songs-poems --out "$WORK/text" >/dev/null
COMMON=(configs/gpt-fortunes.yaml --set parallel.tensor=1 --set sample.tokens=0
  --set data.tokens="$WORK/text" --set train.eval_every=0 --set train.log_every=0
  --set relayout.on_request=false)
seconds() { sed -nE "s/.*$1 in ([0-9.]+) s.*/\\1/p" "$2" | head -1; }
for round in $(seq 1 "$ROUNDS"); do
  rm -rf "$WORK/online" "$WORK/restart" "$WORK/resharded"
  mpiexec -n "$RANKS" build/triax train "${COMMON[@]}" --set parallel.pipeline="$RANKS" \
    --set train.steps=23 --set freeze.every=20 --set freeze.start=20 \
    --set freeze.criterion=progressive --set freeze.max_fraction=0.5 \
    --set run.dir="$WORK/online" >"$WORK/online.log" 2>&1 || { cat "$WORK/online.log"; exit 1; }
  line=$(grep -m1 "layout changed after step" "$WORK/online.log")
  pause=$(sed -nE 's/.* in ([0-9.]+) s \(state.*/\1/p' <<<"$line")
  parts=$(sed -nE 's/.* s \((state gathered[^)]*)\).*/\1/p' <<<"$line")
  mpiexec -n "$RANKS" build/triax train "${COMMON[@]}" --set parallel.pipeline="$RANKS" \
    --set train.steps=20 --set run.dir="$WORK/restart" >"$WORK/save.log" 2>&1 ||
    { cat "$WORK/save.log"; exit 1; }
  save=$(seconds "saved to [^ ]*" "$WORK/save.log")
  begin=$(date +%s%N)
  build/triax reshard "$WORK/restart/checkpoints/step_00000020" --tensor 1 --pipeline 1 \
    --out "$WORK/resharded" >/dev/null
  reshard_ms=$((($(date +%s%N) - begin) / 1000000))
  mpiexec -n "$RANKS" build/triax train "${COMMON[@]}" --set parallel.pipeline=1 \
    --set train.frozen_layers=2 --set train.steps=21 --resume "$WORK/resharded" \
    --set run.dir="$WORK/restart" >"$WORK/load.log" 2>&1 || { cat "$WORK/load.log"; exit 1; }
  load=$(seconds "resumed from .*" "$WORK/load.log")
  first=$(sed -nE 's/.*first step done ([0-9.]+) s after start.*/\1/p' "$WORK/load.log")
  echo "round $round: pause $pause s ($parts); save $save s + load $load s;" \
    "reshard $((reshard_ms / 1000)).$(printf %03d $((reshard_ms % 1000))) s;" \
    "restart to first step $first s"
  echo "$pause $save $load $reshard_ms $first" >>"$WORK/rounds.txt"
done
/usr/bin/python3 - "$WORK/rounds.txt" <<'PY'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1])]
med = lambda k: statistics.median(r[k] for r in rows)
pause, save, load, reshard, first = med(0), med(1), med(2), med(3) / 1000, med(4)
print(f"medians over {len(rows)} rounds: re-layout pause {pause:.3f} s; a save {save:.3f} s and "
      f"its load on the new layout {load:.3f} s = {save + load:.3f} s "
      f"(goal: pause <= save + load: {'met' if pause <= save + load else 'NOT met'}); "
      f"a restart adds the reshard ({reshard:.2f} s) and the start to the first step "
      f"({first:.2f} s)")
PY
