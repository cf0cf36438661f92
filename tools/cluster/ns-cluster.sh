#!/usr/bin/env bash
# A multi-node test cluster on one machine: each "node" is a network + UTS namespace with its own
# hostname (n1, n2, ...), its own address on a private bridge and its own network stack, so MPI,
# Gloo and Slurm see separate hosts and talk over TCP between them (shared memory inside one).
#   ns-cluster.sh up N              create nodes n1..nN (N >= 1)
#   ns-cluster.sh shape RATE [DELAY] shape every node's link: e.g. `shape 1gbit 0.5ms` (tc netem;
#                                   tbf, rate only, where the kernel lacks netem)
#   ns-cluster.sh unshape           remove the shaping
#   ns-cluster.sh on NODE CMD...    run CMD on NODE (its namespaces, /etc/hosts naming the nodes)
#   ns-cluster.sh ssh [-x] NODE CMD...  the same, shaped like ssh, for `mpiexec -launcher ssh
#                                   -launcher-exec tools/cluster/node-ssh` (node-ssh calls this)
#   ns-cluster.sh kill NODE         SIGKILL every process on NODE (a node that dies)
#   ns-cluster.sh nodes             list the nodes with their addresses
#   ns-cluster.sh down              kill what runs on the nodes, remove every namespace made here
# Layout: a hub namespace holds the bridge; node k's veth pair has `eth0` (10.77.0.k/24) in the
# node and its peer on the bridge in the hub. No address exists outside these namespaces and no
# route leads out of them, so nothing can leave the cluster. Shaping applies to each node's eth0
# egress: every packet between two nodes passes exactly one shaped queue.
# Several clusters can coexist under different TRIAX_CLUSTER names (namespaces are prefixed with
# it, and TRIAX_CLUSTER_NET picks the /24). Needs root; without it `up` exits 77 saying why.
set -euo pipefail
NAME=${TRIAX_CLUSTER:-triax}
NET=${TRIAX_CLUSTER_NET:-10.77.0}
STATE=/run/triax-cluster/$NAME
HUB=$NAME-hub

node_ns() { echo "$NAME-$1"; }
node_count() { cat "$STATE/nodes" 2>/dev/null || echo 0; }
need_node() {
  local n=${1#n}
  [[ "$1" == n* && "$n" =~ ^[0-9]+$ && $n -ge 1 && $n -le $(node_count) ]] || {
    echo "ns-cluster: no node '$1' in cluster $NAME (nodes: $(seq -s ' ' -f 'n%g' 1 "$(node_count)"))" >&2
    exit 2
  }
}

up() {
  local count=${1:-2}
  [[ "$count" =~ ^[0-9]+$ && $count -ge 1 && $count -le 200 ]] || {
    echo "ns-cluster: up needs a node count 1..200, got '$count'" >&2
    exit 2
  }
  [ "$(id -u)" -eq 0 ] || { echo "ns-cluster: needs root (network and UTS namespaces); skipping" >&2; exit 77; }
  for tool in ip unshare nsenter tc; do
    command -v $tool >/dev/null || { echo "ns-cluster: needs '$tool' (apt-get install iproute2 util-linux)" >&2; exit 77; }
  done
  ip netns add "$HUB-probe" 2>/dev/null || { echo "ns-cluster: cannot create network namespaces here; skipping" >&2; exit 77; }
  ip netns del "$HUB-probe"
  down >/dev/null 2>&1 || true
  mkdir -p "$STATE"
  echo "$count" >"$STATE/nodes"
  {
    echo "127.0.0.1 localhost"
    for k in $(seq 1 "$count"); do echo "$NET.$k n$k"; done
  } >"$STATE/hosts"
  ip netns add "$HUB"
  ip -n "$HUB" link set lo up
  ip -n "$HUB" link add br0 type bridge
  ip -n "$HUB" link set br0 up
  for k in $(seq 1 "$count"); do
    local ns
    ns=$(node_ns "n$k")
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    # Created inside the node so that no interface of it ever exists in the caller's namespace.
    ip -n "$ns" link add eth0 type veth peer name "v$k" netns "$HUB"
    ip -n "$ns" addr add "$NET.$k/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$HUB" link set "v$k" master br0
    ip -n "$HUB" link set "v$k" up
    # A UTS namespace kept alive by a bind mount gives the node its own hostname.
    touch "$STATE/n$k.uts"
    unshare --uts="$STATE/n$k.uts" hostname "n$k"
  done
  echo "ns-cluster $NAME: up, $count nodes ($(seq -s ' ' -f 'n%g' 1 "$count")) on $NET.0/24"
}

shape() {
  local rate=$1 delay=${2:-}
  local how
  for k in $(seq 1 "$(node_count)"); do
    local ns
    ns=$(node_ns "n$k")
    # netem gives rate and delay; kernels without sch_netem still have tbf (rate only). The
    # burst holds a few of the 64 KiB segments veth passes (GSO), or tbf would drop them.
    if tc -n "$ns" qdisc replace dev eth0 root netem ${delay:+delay "$delay"} rate "$rate" \
      limit 100000 2>/dev/null; then
      how="netem: $rate${delay:+, $delay one way}"
    else
      tc -n "$ns" qdisc replace dev eth0 root tbf rate "$rate" burst 256kb latency 100ms
      how="tbf: $rate${delay:+ (no netem in this kernel: the $delay delay is not applied)}"
    fi
  done
  echo "ns-cluster $NAME: every node's link shaped ($how)"
}

unshape() {
  for k in $(seq 1 "$(node_count)"); do
    tc -n "$(node_ns "n$k")" qdisc del dev eth0 root 2>/dev/null || true
  done
}

# A fresh mount namespace per command binds the cluster's hosts file over /etc/hosts, so that
# node names resolve on every node without touching the machine's own /etc/hosts.
# UCX (MPICH's transport) would see one kernel (one boot id) and move data between "nodes"
# through shared memory; UCX_TLS=tcp,self makes inter-node traffic cross the link as it would on
# a real cluster (ranks on one node still share memory through MPICH's own shm, which MPICH
# decides by hostname).
on() {
  need_node "$1"
  local node=$1
  shift
  exec nsenter --net="/run/netns/$(node_ns "$node")" --uts="$STATE/$node.uts" \
    env UCX_TLS="${UCX_TLS:-tcp,self}" unshare --mount --propagation private \
    sh -c 'mount --bind "$0" /etc/hosts && exec "$@"' "$STATE/hosts" "$@"
}

# Hydra calls the ssh launcher as `EXEC [-x] HOST CMD...` (CMD possibly one quoted string).
ssh_like() {
  while [[ "${1:-}" == -* ]]; do shift; done
  local host=$1
  shift
  host=${host%%:*}
  on "$host" sh -c "$*"
}

kill_node() {
  need_node "$1"
  local pids
  pids=$(ip netns pids "$(node_ns "$1")" 2>/dev/null || true)
  [ -n "$pids" ] && kill -9 $pids 2>/dev/null || true
  echo "ns-cluster $NAME: killed $(echo $pids | wc -w) processes on $1"
}

down() {
  local count ns
  count=$(node_count)
  for k in $(seq 1 "$count"); do
    ns=$(node_ns "n$k")
    local pids
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    [ -n "$pids" ] && kill -9 $pids 2>/dev/null || true
  done
  for k in $(seq 1 "$count"); do
    ip netns del "$(node_ns "n$k")" 2>/dev/null || true
    umount "$STATE/n$k.uts" 2>/dev/null || true
  done
  ip netns del "$HUB" 2>/dev/null || true
  rm -rf "$STATE"
}

case "${1:-}" in
  up) shift; up "$@" ;;
  shape) [ $# -ge 2 ] || { echo "usage: $0 shape RATE [DELAY] (e.g. 1gbit 0.5ms)" >&2; exit 2; }; shape "$2" "${3:-}" ;;
  unshape) unshape ;;
  on) shift; [ $# -ge 2 ] || { echo "usage: $0 on NODE CMD..." >&2; exit 2; }; on "$@" ;;
  ssh) shift; ssh_like "$@" ;;
  kill) [ $# -eq 2 ] || { echo "usage: $0 kill NODE" >&2; exit 2; }; kill_node "$2" ;;
  nodes) for k in $(seq 1 "$(node_count)"); do echo "n$k $NET.$k"; done ;;
  down) down; echo "ns-cluster $NAME: down" ;;
  *) sed -n '2,20p' "$0" >&2; exit 2 ;;
esac
