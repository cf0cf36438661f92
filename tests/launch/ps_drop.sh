#!/usr/bin/env bash
# Asynchronous parameter servers drop a lost worker and go on (docs/parameter_server.md, "A lost
# worker"): 3 workers and 1 dedicated server; world rank 2 (worker 2) is killed (kill -9) before
# step 6 (each push applied alone, apply: auto = push; and one update per step, apply: step,
# under layout-invariant numerics, whose DDP keeps the replaced dp group), or stopped (SIGSTOP, a
# frozen node) before step 6. In each case:
#   - the heartbeat names it ("rank 2 ... is lost ... the job goes on without it"), the server
#     drops it, and the workers take it out of their meetings' collectives;
#   - the other two train to the end (every logged step, the final checkpoint, the held-out loss
#     at steps 10 and 20 over every held-out sample: the dropped worker's share is scored by the
#     others) and finish within seconds of the last step;
#   - the held-out loss falls from step 10 to step 20 (the run still learns).
# And a lost server (killed after step 5) ends the job within seconds, naming it as the server.
# The launcher reports the dropped rank's end (mpirun: its supervisor, held until the others
# finished, then killed: "EXIT CODE: 9"), so the exit status is not checked; the run's outputs are.
# usage: ps_drop.sh WORK MPIEXEC TRIAX CONFIG [--set ...]
set -euo pipefail
WORK=$1 MPIEXEC=$2 TRIAX=$3 CONFIG=$4
shift 4
rm -rf "$WORK"
mkdir -p "$WORK"
common=(--set parallel.tensor=1 --set parallel.pipeline=1 --set train.steps=20
  --set train.global_batch=24 --set train.micro_batch=4 --set train.log_every=5
  --set train.eval_every=10 --set train.eval_batches=2 --set sample.tokens=0
  --set comm.timeout_s=60 --set comm.heartbeat_s=3 --set ddp.mode=parameter_server
  --set parameter_server.staleness=1)
for case in kill:auto:fast stop:auto:fast kill:step:layout_invariant; do
  IFS=: read -r fault apply numerics <<<"$case"
  name=${fault}_$apply
  log=$WORK/$name.log
  start=$(date +%s)
  TRIAX_FAULT=$fault:2:6 timeout 120 "$MPIEXEC" -n 4 "$TRIAX" train "$CONFIG" "$@" "${common[@]}" \
    --set parameter_server.apply="$apply" --set train.numerics="$numerics" \
    --set run.dir="$WORK/$name" >"$log" 2>&1 || true
  took=$(($(date +%s) - start))
  grep -q "rank 2 (worker 2, pid [0-9]* on .*) is lost: .*the job goes on without it" "$log" ||
    { tail -40 "$log"; echo "FAIL: $name: the heartbeat did not name rank 2 as dropped"; exit 1; }
  grep -q "parameter server 0: worker 2 dropped (lost); 2 worker(s) go on" "$log" ||
    { tail -40 "$log"; echo "FAIL: $name: the server did not drop worker 2"; exit 1; }
  grep -q "dp rank(s) 2 were dropped .* training goes on with 2 of 3 workers" "$log" ||
    { tail -40 "$log"; echo "FAIL: $name: the workers did not go on without worker 2"; exit 1; }
  grep -q "done: 20 steps" "$log" || { tail -40 "$log"; echo "FAIL: $name: no end"; exit 1; }
  grep -q "evaluation without the dropped worker(s): 48 held-out samples scored" "$log" ||
    { grep "evaluation without" "$log"; echo "FAIL: $name: the evaluation lost samples"; exit 1; }
  [ -f "$WORK/$name/checkpoints/step_00000020/manifest.yaml" ] ||
    { echo "FAIL: $name: no checkpoint of step 20"; exit 1; }
  /usr/bin/python3 - "$WORK/$name/metrics.jsonl" <<'PY'
import json, math, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
logged = [r["step"] for r in rows if "tokens_per_s" in r]
assert logged == [5, 10, 15, 20], f"logged steps {logged}"
val = [r["val_loss"] for r in rows if "val_loss" in r]
assert len(val) == 2 and all(math.isfinite(v) for v in val) and val[1] < val[0], f"val {val}"
PY
  # Everything after the last step (the survivors' end, the held process's) takes seconds.
  [ "$took" -lt 60 ] || { echo "FAIL: $name: the job took ${took} s"; exit 1; }
  echo "ok: $fault, apply $apply: worker 2 dropped at step 6; 2 workers trained to step 20 in ${took} s, held-out loss $(grep -o 'val loss [0-9.]*' "$log" | tail -1)"
done
# A lost server ends the job (its shard of the parameters and AdamW state is gone): killed after
# step 5, it is named as the server it was, and every rank ends within seconds.
log=$WORK/server.log
timeout 120 "$MPIEXEC" -n 4 "$TRIAX" train "$CONFIG" "$@" "${common[@]}" --set train.steps=200 \
  --set run.dir="$WORK/server" >"$log" 2>&1 &
job=$!
for _ in $(seq 600); do
  grep -q '"step": 5,' "$WORK/server/metrics.jsonl" 2>/dev/null && break
  sleep 0.1
done
pid=$(awk '$1 == 3 {print $3}' "$WORK/server/ranks.txt")
[ -n "$pid" ] || { echo "FAIL: server: no pid of rank 3 in ranks.txt"; exit 1; }
start=$(date +%s)
kill -9 "$pid"
rc=0
wait "$job" || rc=$?
took=$(($(date +%s) - start))
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || { tail -20 "$log"; echo "FAIL: server: exit $rc"; exit 1; }
grep -q "rank 3 (parameter server 0, pid $pid on .*) is lost: .*the job cannot go on without it" \
  "$log" || { tail -30 "$log"; echo "FAIL: server: the heartbeat did not name the lost server"; exit 1; }
! grep -q "done: 200 steps" "$log" || { echo "FAIL: server: the job went on"; exit 1; }
[ "$took" -lt 20 ] || { echo "FAIL: server: the job took ${took} s to end"; exit 1; }
echo "ok: a killed server ends the job in ${took} s, named: $(grep -o 'rank 3 (parameter server 0[^)]*)' "$log" | head -1)"
echo "PASS: ps_drop"
