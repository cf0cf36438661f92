#!/usr/bin/env bash
# A one-machine Slurm cluster for trying (and testing) triax's sbatch script, as root, in ~1 s:
#   tools/slurm/local-cluster.sh up      munge + slurmctld + slurmd, loopback only
#   tools/slurm/local-cluster.sh run CMD run CMD where the cluster is reachable (sbatch, srun, ...)
#   tools/slurm/local-cluster.sh down    stop what `up` started, remove its network namespace
# With TRIAX_SLURM_NODES=N (N >= 2) the cluster has N nodes instead: the namespace nodes n1..nN of
# tools/cluster/ns-cluster.sh (cluster name $TRIAX_SLURM_NS), one slurmd per node, slurmctld on
# n1, and `run` runs on n1; `srun -N 2 --ntasks-per-node 4 ...` then really spans two hosts.
# Everything listens inside a network namespace that has only `lo`, so nothing is reachable from
# outside. The configuration lives in $TRIAX_SLURM_DIR/slurm.conf (SLURM_CONF), never /etc/slurm.
# Two pitfalls of this kind of sandbox are handled (see ../shared/recipes in the design notes):
# daemons are started with nsenter (`ip netns exec` remounts /sys and hides the cgroup tree
# slurmd needs), and lo gets a second address 127.0.0.2 (glibc's AI_ADDRCONFIG ignores
# 127.0.0.1, so without it every Slurm address lookup fails).
set -euo pipefail
NS=${TRIAX_SLURM_NS:-triax-slurm}
D=${TRIAX_SLURM_DIR:-/tmp/triax-slurm}
CPUS=${TRIAX_SLURM_CPUS:-8}  # CPUs advertised; ranks may outnumber real cores
NODES=${TRIAX_SLURM_NODES:-1}
# How long slurmctld waits for a silent slurmd before it declares the node DOWN (Slurm's default
# 300 s); a test of a lost node shortens it.
SLURMD_TIMEOUT=${TRIAX_SLURMD_TIMEOUT:-300}
NS_CLUSTER=(env TRIAX_CLUSTER="$NS" "$(dirname "$0")/../cluster/ns-cluster.sh")
if [ "$NODES" -gt 1 ]; then IN=("${NS_CLUSTER[@]}" on n1); else IN=(nsenter --net=/run/netns/$NS); fi
export SLURM_CONF=$D/slurm.conf

up() {
  command -v slurmctld >/dev/null || { echo "local-cluster: no slurmctld (apt-get install slurm-wlm)" >&2; exit 77; }
  [ "$(id -u)" -eq 0 ] || { echo "local-cluster: needs root (network namespace, daemons)" >&2; exit 77; }
  if [ "$NODES" -gt 1 ]; then
    "${NS_CLUSTER[@]}" up "$NODES" || exit $?
  else
    ip netns list | grep -qw "$NS" || ip netns add "$NS"
    ip netns exec "$NS" ip link set lo up
    ip netns exec "$NS" ip -4 addr show dev lo | grep -q '127.0.0.2/' ||
      ip netns exec "$NS" ip addr add 127.0.0.2/8 dev lo
  fi
  mkdir -p "$D/state" "$D/spool" /run/munge /var/log/munge /var/lib/munge
  chown munge:munge /run/munge /var/log/munge /var/lib/munge
  chmod 0755 /run/munge
  if [ ! -s /etc/munge/munge.key ]; then
    mungekey --create --keyfile=/etc/munge/munge.key
    chown munge:munge /etc/munge/munge.key
    chmod 0400 /etc/munge/munge.key
  fi
  local host ctld_addr node_lines
  if [ "$NODES" -gt 1 ]; then
    host=n[1-$NODES]
    ctld_addr=$("${NS_CLUSTER[@]}" nodes | awk '$1 == "n1" {print $2}')
    node_lines=$("${NS_CLUSTER[@]}" nodes | while read -r name addr; do
      echo "NodeName=$name NodeAddr=$addr CPUs=${CPUS} Sockets=1 CoresPerSocket=${CPUS} ThreadsPerCore=1 RealMemory=4000 State=UNKNOWN"
    done)
    ctld_host=n1
  else
    host=$(hostname -s)
    ctld_addr=127.0.0.1
    ctld_host=$host
    node_lines="NodeName=${host} NodeAddr=127.0.0.1 CPUs=${CPUS} Sockets=1 CoresPerSocket=${CPUS} ThreadsPerCore=1 RealMemory=4000 State=UNKNOWN"
  fi
  cat >"$SLURM_CONF" <<CONF
# written by triax tools/slurm/local-cluster.sh: a test cluster of $NODES node(s) on one machine
ClusterName=triax
SlurmctldHost=${ctld_host}(${ctld_addr})
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool/%n
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd.%n.pid
SlurmctldLogFile=$D/slurmctld.log
SlurmdLogFile=$D/slurmd.%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SlurmctldPort=6817
SlurmdPort=6818
InactiveLimit=0
KillWait=5
SlurmdTimeout=${SLURMD_TIMEOUT}
MinJobAge=60
${node_lines}
PartitionName=debug Nodes=${host} Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
  if ! munge -n </dev/null >/dev/null 2>&1; then
    runuser -u munge -- /usr/sbin/munged
    touch "$D/started-munged"
  fi
  "${IN[@]}" env SLURM_CONF="$SLURM_CONF" /usr/sbin/slurmctld -i
  if [ "$NODES" -gt 1 ]; then
    for k in $(seq 1 "$NODES"); do
      mkdir -p "$D/spool/n$k"
      "${NS_CLUSTER[@]}" on "n$k" env SLURM_CONF="$SLURM_CONF" /usr/sbin/slurmd -N "n$k"
    done
  else
    mkdir -p "$D/spool/$host"
    "${IN[@]}" env SLURM_CONF="$SLURM_CONF" /usr/sbin/slurmd
  fi
  for _ in $(seq 1 120); do
    [ "$("${IN[@]}" sinfo -h -N -o '%T' 2>/dev/null | grep -cx idle)" -eq "$NODES" ] &&
      { echo "local-cluster: up ($NODES node(s) x $CPUS CPUs, partition debug)"; return 0; }
    sleep 0.25
  done
  echo "local-cluster: slurmd did not become idle; see $D/slurmctld.log and $D/slurmd.log" >&2
  down
  exit 1
}

down() {
  local f alive
  for f in "$D"/slurmd.*pid "$D/slurmctld.pid"; do
    [ -s "$f" ] && kill "$(cat "$f")" 2>/dev/null || true
  done
  for _ in $(seq 1 40); do
    alive=0
    for f in "$D"/slurmd.*pid "$D/slurmctld.pid"; do
      if [ -s "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null && [ "$(ps -o stat= -p "$(cat "$f")")" != Z ]; then alive=1; fi
    done
    [ $alive = 0 ] && break
    sleep 0.25
  done
  if [ -e "$D/started-munged" ] && [ -s /run/munge/munged.pid ]; then
    kill "$(cat /run/munge/munged.pid)" 2>/dev/null || true
    rm -f "$D/started-munged"
  fi
  rm -rf "$D/state" "$D/spool" "$D"/slurmd.*pid
  if [ "$NODES" -gt 1 ]; then "${NS_CLUSTER[@]}" down >/dev/null; fi
  ip netns del "$NS" 2>/dev/null || true
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  run) shift; exec "${IN[@]}" "$@" ;;
  *) echo "usage: $0 up|down|run CMD..." >&2; exit 2 ;;
esac
