#!/usr/bin/env bash
# Benchmark (not a test): parameter servers against ring all-reduce on the wire, as the survey
# that started us describes them (docs/parameter_server.md). Namespace nodes, one rank each
# (tools/cluster/ns-cluster.sh), every node's link shaped to RATE with DELAY; the main GPT at tp 1,
# pp 1 under `triax train`:
#   allreduce   W workers, DDP's all-reduce (MPICH: reduce-scatter + all-gather for these sizes)
#   ps K=1      W workers + 1 dedicated server on a node of its own
#   ps K=2      W workers + 2 dedicated servers, each on its own node (half the parameters each)
# at W = 2, 4, 8. Per step, from two runs of STEPS1 and STEPS2 steps (start-up, the checkpoint and
# the end cancel in the difference): the TCP payload the busiest node sent and received (its eth0
# counters less 66 bytes of headers per packet): a server's node, or the worker whose link carried
# most under all-reduce. Beside it the model, P parameters of 4 bytes:
#   ring all-reduce, per worker and direction: 2 (W - 1) / W x 4P  (constant in W)
#   parameter server, per server and direction: W x 4P / K          (linear in W)
# and the α-β model's time on that link, α = DELAY per message round, β = RATE:
#   ring: 2 log2(W) α + 2 (W - 1) / W x 4P / β;   server: 2 α + W x 4P / (K β)
# and the measured median step time and tokens/s (2 cores: compute is shared by every rank here).
# Goal (issue 45): the server's bytes linear in W and the ring's per-worker bytes constant, each
# within 10% of the model.
# usage: tools/bench/ps_link.sh [STEPS1] [STEPS2] [RATE] [DELAY]     (as root; build first)
set -euo pipefail
STEPS1=${1:-2} STEPS2=${2:-4} RATE=${3:-100mbit} DELAY=${4:-0.5ms}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TRIAX=$ROOT/build/triax
TOKENS=$ROOT/runs/tokens/fortunes
[ -x "$TRIAX" ] || { echo "build first: tools/setup.sh build" >&2; exit 1; }
[ -f "$TOKENS/train.tok" ] || "$TRIAX" prepare-data /usr/share/games/fortunes --out "$TOKENS" >/dev/null
export TRIAX_CLUSTER=triax-ps
CLUSTER=$ROOT/tools/cluster/ns-cluster.sh
"$CLUSTER" up 10 >/dev/null
"$CLUSTER" shape "$RATE" "$DELAY" >/dev/null
RUNS=$(mktemp -d)
trap '"$CLUSTER" down >/dev/null; rm -rf "$RUNS"' EXIT

# Node k's eth0: payload bytes sent + received so far (66 bytes of headers per packet left out).
payload_of() {
  ip -n "$TRIAX_CLUSTER-n$1" -s link show eth0 |
    awk '/RX:/ {getline; rb=$1; rp=$2} /TX:/ {getline; tb=$1; tp=$2} END {print (rb - 66*rp) + (tb - 66*tp)}'
}

# MODE WORKERS SERVERS STEPS: one run; prints each node's payload in it, then the median step time.
run() {
  local mode=$1 w=$2 k=$3 steps=$4 nodes hosts
  nodes=$((w + k))
  hosts=$(seq -s, -f 'n%g:1' 1 "$nodes")
  local before=()
  for i in $(seq 1 "$nodes"); do before+=("$(payload_of "$i")"); done
  local extra=()
  [ "$mode" = ps ] && extra=(--set ddp.mode=parameter_server --set parameter_server.servers="$k")
  "$CLUSTER" on n1 mpiexec -hosts "$hosts" -launcher ssh \
    -launcher-exec "$ROOT/tools/cluster/node-ssh" "$TRIAX" train "$ROOT/configs/gpt-fortunes.yaml" \
    --set data.tokens="$TOKENS" --set parallel.tensor=1 --set parallel.pipeline=1 \
    --set train.steps="$steps" --set train.micro_batch=4 --set train.eval_every=0 \
    --set sample.tokens=0 --set train.log_every=1 --set comm.timeout_s=600 "${extra[@]}" \
    --set run.dir="$RUNS/$mode-$w-$k-$steps" >"$RUNS/log" 2>&1 || { cat "$RUNS/log" >&2; exit 1; }
  local out=()
  for i in $(seq 1 "$nodes"); do out+=($(($(payload_of "$i") - before[i - 1]))); done
  echo "${out[*]}"
}

median_step() {
  python3 - "$1/metrics.jsonl" <<'PY'
import json, statistics, sys
s = [r["step_s"] for r in map(json.loads, filter(str.strip, open(sys.argv[1]))) if r["step"] > 1]
print(f"{statistics.median(s):.3f}")
PY
}

P=$("$TRIAX" config "$ROOT/configs/gpt-fortunes.yaml" --set parallel.tensor=1 --set parallel.pipeline=1 \
  --set data.tokens="$TOKENS" --world 1 2>/dev/null | grep -oE '[0-9]+ parameters' | head -1 | cut -d' ' -f1 || true)
printf 'main GPT (configs/gpt-fortunes.yaml) tp 1 pp 1, one rank per namespace node, links %s + %s; %s cores; %s\n' \
  "$RATE" "$DELAY" "$(nproc)" "$(date -u +%F)"
printf '%-10s %3s %3s %14s %14s %6s %10s %9s %9s\n' mode W K "busiest B/step" model ratio \
  "model s" "step s" "tokens/s"
rate_bps=$(python3 -c "
import re,sys
m=re.match(r'([0-9.]+)([kmg]?)bit','$RATE'); print(float(m[1])*{'':1,'k':1e3,'m':1e6,'g':1e9}[m[2]]/8)")
alpha=$(python3 -c "print(float('$DELAY'.rstrip('ms'))/1000)")
for w in 2 4 8; do
  for spec in allreduce/0 ps/1 ps/2; do
    mode=${spec%/*} k=${spec#*/}
    read -r -a a <<<"$(run "$mode" "$w" "$k" "$STEPS1")"
    read -r -a b <<<"$(run "$mode" "$w" "$k" "$STEPS2")"
    if [ -z "$P" ]; then
      P=$(grep -oE '[0-9]+ parameters' "$RUNS/log" | head -1 | cut -d' ' -f1)
    fi
    # The busiest node: a server's (the last K nodes), or the busiest worker's.
    best=0
    first=0
    [ "$mode" = ps ] && first=$w
    for i in $(seq "$first" $((${#b[@]} - 1))); do
      d=$(((b[i] - a[i]) / (STEPS2 - STEPS1)))
      [ "$d" -gt "$best" ] && best=$d
    done
    read -r model model_s < <(python3 - "$mode" "$w" "$k" "$P" "$rate_bps" "$alpha" <<'PY'
import math, sys
mode, w, k, p, beta, alpha = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6])
per_direction = 2 * (w - 1) / w * 4 * p if mode == "allreduce" else w * 4 * p / k
rounds = 2 * math.log2(w) if mode == "allreduce" else 2
print(int(2 * per_direction), f"{rounds * alpha + per_direction / beta:.3f}")
PY
)
    ratio=$(awk -v m="$best" -v f="$model" 'BEGIN {printf "%.3f", m / f}')
    dir=$RUNS/$mode-$w-$k-$STEPS2
    step_s=$(median_step "$dir")
    tps=$(awk -v s="$step_s" 'BEGIN {printf "%.0f", 32 * 64 / s}')
    printf '%-10s %3s %3s %14s %14s %6s %10s %9s %9s\n' "$mode" "$w" "${k/#0/-}" "$best" "$model" \
      "$ratio" "$model_s" "$step_s" "$tps"
  done
done
echo "P = $P parameters; busiest = payload sent + received per step on the busiest node's link;"
echo "model = 2 directions x (ring: 2 (W-1)/W x 4P; server: W x 4P / K); goal: ratio within 1 +- 0.10"
