# shellcheck shell=bash
# Shared by the lose-a-node tests (elastic.sh, slurm_node_loss.sh, node_death.sh); sourced.

# first_step LOG RUN K: wait (up to 120 s) until RUN has trained a step after the K-th
# "resumed from" in LOG; sets `resumed` (that resume's step) and `first` (the time), or leaves
# `first` empty.
first_step() {
  first=""
  for _ in $(seq 1 1200); do
    if [ "$(grep -c "resumed from" "$1")" -ge "$3" ] && [ -f "$2/metrics.jsonl" ]; then
      resumed=$(grep -o "resumed from [^ ]* after step [0-9]*" "$1" | sed -n "$3p" | awk '{print $NF}')
      if [ "$(tail -1 "$2/metrics.jsonl" | /usr/bin/python3 -c 'import json,sys; print(json.loads(sys.stdin.read())["step"])' 2>/dev/null)" -gt "$resumed" ] 2>/dev/null; then
        # shellcheck disable=SC2034  # read by the caller
        first=$(date +%s.%N)
        return
      fi
    fi
    sleep 0.1
  done
}

# survivor_named_lost FILE...: true (printing the line) when the heartbeat named a rank on n1,
# a survivor, as lost.
survivor_named_lost() {
  cat "$@" 2>/dev/null | grep -E "heartbeat: ranks? [^:]* on n1\)[^:]* (is|are) lost"
}

since() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
