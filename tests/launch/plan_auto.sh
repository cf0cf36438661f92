#!/usr/bin/env bash
# The planner as a user runs it (issue 29), on the main job's GPT:
#  1. `triax calibrate` on 4 ranks writes a profile; `triax plan --world 4 --profile` ranks the
#     layouts with it and recommends one;
#  2. `parallel: auto` with that profile trains on 4 ranks with the same layout, printed once
#     (every rank chose it alone, from the same files), with its runner-up, and the job's own
#     layout table shows it;
#  3. resuming with auto keeps the checkpoint's tp and pp: a tp 2 x pp 2 checkpoint resumed on 8
#     ranks trains at dp 2 with them, and on 2 ranks (where tp x pp = 4 cannot fit) it is
#     refused on every rank, naming the checkpoint's layout and the reshard way out.
# usage: plan_auto.sh WORK EXPECT_ERROR MPIEXEC TRIAX CONFIG [--set ...]
set -euo pipefail
WORK=$1 EXPECT_ERROR=$2 MPIEXEC=$3 TRIAX=$4 CONFIG=$5
shift 5
rm -rf "$WORK"
mkdir -p "$WORK"
"$MPIEXEC" -n 4 "$TRIAX" calibrate "$CONFIG" "$@" --out "$WORK/profile.yaml"
# The profile holds layer timings for tp 1, 2 and 4 (4 heads, 4 ranks), every recompute mode,
# and the links of groups of 2 and 4 inside the node.
for want in "tp: 1, micro_batch: 1, recompute: none" "tp: 2, micro_batch: 1, recompute: full" \
  "tp: 4, micro_batch: 16, recompute: selective, sequence: true" "op: all_reduce, group: 4"; do
  grep -q "$want" "$WORK/profile.yaml" || { echo "FAIL: the profile lacks '$want'"; exit 1; }
done
"$TRIAX" plan "$CONFIG" "$@" --world 4 --profile "$WORK/profile.yaml" --top 3 | tee "$WORK/plan.txt"
best=$(sed -nE 's/^recommended: ([^,]*), .*/\1/p' "$WORK/plan.txt")
[ -n "$best" ] || { echo "FAIL: no recommendation"; exit 1; }

AUTO=(--set parallel.auto=true --set parallel.profile="$WORK/profile.yaml")
"$MPIEXEC" -n 4 "$TRIAX" train "$CONFIG" "$@" "${AUTO[@]}" --set run.dir="$WORK/auto" \
  >"$WORK/auto.txt" 2>&1 || { cat "$WORK/auto.txt"; exit 1; }
grep -E "parallel: auto chose|layout: world|done:" "$WORK/auto.txt"
chosen=$(grep -c "parallel: auto chose $best (.*runner-up" "$WORK/auto.txt" || true)
[ "$chosen" -eq 1 ] || { echo "FAIL: 'parallel: auto chose $best' printed $chosen times"; exit 1; }
read -r dp tp pp < <(sed -E 's/^dp([0-9]+) tp([0-9]+) pp([0-9]+).*/\1 \2 \3/' <<<"$best")
# With context parallelism the layout line names cp between dp and tp.
cp=$(sed -nE 's/.* cp([0-9]+) .*/ x cp \1/p' <<<"$best")
grep -q "layout: world 4 = dp $dp$cp x tp $tp x pp $pp" "$WORK/auto.txt" ||
  { echo "FAIL: the job did not run dp $dp$cp x tp $tp x pp $pp"; exit 1; }
echo "PASS: auto trained with the plan's first choice, $best"

"$MPIEXEC" -n 4 "$TRIAX" train "$CONFIG" "$@" --set parallel.tensor=2 --set parallel.pipeline=2 \
  --set checkpoint.every=6 --set run.dir="$WORK/tp2pp2" | grep -E "done:"
step6=$WORK/tp2pp2/checkpoints/step_00000006
"$MPIEXEC" -n 8 "$TRIAX" train "$CONFIG" "$@" "${AUTO[@]}" --set run.dir="$WORK/resumed" \
  --resume "$step6" >"$WORK/resumed.txt" 2>&1 || { cat "$WORK/resumed.txt"; exit 1; }
grep -E "parallel: auto chose|resumed from|done:" "$WORK/resumed.txt"
# The 4 ranks tp 2 x pp 2 leave are dp 2, or dp 1 x cp 2 (the planner's choice between them).
grep -qE "parallel: auto chose (dp2 tp2 pp2|dp1 tp2 pp2 cp2) .*tp 2, pp 2 and 1 chunk\(s\) per rank of the checkpoint" \
  "$WORK/resumed.txt" || { echo "FAIL: auto did not keep the checkpoint's tp and pp"; exit 1; }
echo "PASS: auto resumed the tp 2 x pp 2 checkpoint at dp x cp 2 on 8 ranks"

"$EXPECT_ERROR" 2 "no layout of 2 ranks keeps tp 2, pp 2 and 1 chunk(s) per rank of the checkpoint" \
  "$MPIEXEC" -n 2 "$TRIAX" train "$CONFIG" "$@" "${AUTO[@]}" --set run.dir="$WORK/refused" \
  --resume "$step6" | tail -3
echo "PASS: auto refused a checkpoint layout that 2 ranks cannot hold"
