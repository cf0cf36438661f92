#!/bin/sh
# Runs a command in a new network namespace with only the loopback interface, so that the
# processes a test starts (mpiexec's control sockets, MPI itself) can only reach 127.0.0.1.
# Where namespaces are not allowed (an unprivileged container), runs the command as it is.
if [ -z "$TRIAX_NO_NETNS" ] && command -v unshare >/dev/null 2>&1 && command -v ip >/dev/null 2>&1 &&
  unshare -n true 2>/dev/null; then
  exec unshare -n sh -c 'ip link set lo up && exec "$@"' run_isolated "$@"
fi
exec "$@"
