#!/bin/sh
# finalize_deadline.sh MPIEXEC PROBE: runs finalize_probe on 3 ranks (see its header) and passes
# when mpiexec exits 0 although two ranks' MPI_Finalize never returned, each having said so.
set -u
mpiexec=$1 probe=$2
out=$(MPIR_CVAR_NO_COLLECTIVE_FINALIZE=1 timeout 60 "$mpiexec" -n 3 "$probe" 2>&1)
rc=$?
printf '%s\n' "$out"
notes=$(printf '%s\n' "$out" | grep -c "MPI_Finalize did not return within")
if [ "$rc" -ne 0 ]; then echo "FAIL: mpiexec exited $rc (a finished run must exit 0)"; exit 1; fi
if [ "$notes" -eq 0 ]; then
  echo "SKIPPED: this MPI's MPI_Finalize did not hang on a departed peer; nothing to check"
  exit 77
fi
if [ "$notes" -ne 2 ]; then
  echo "FAIL: $notes rank(s) reported the finalize deadline, expected 2 (ranks 1 and 2)"
  exit 1
fi
echo "PASS: finalize deadline: mpiexec exited 0, ranks 1 and 2 left at the deadline"
