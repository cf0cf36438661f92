# Runs on the GPU machine only (docs/gpu.md).
# Sourced (tools/gpu/build.sh, docs/gpu.md): unpacks the Debian packages of .cache/deb into
# .cache/deb-root once and puts their libraries on LD_LIBRARY_PATH (MPICH, yaml-cpp, UCX, hwloc)
# and their programs (mpiexec) on PATH, for a machine without apt. Nothing is installed into /.
TRIAX_DEB_ROOT=$PWD/.cache/deb-root
export TRIAX_DEB_ROOT
if compgen -G ".cache/deb/*.deb" >/dev/null && [ ! -d "$TRIAX_DEB_ROOT/usr" ]; then
  for deb in .cache/deb/*.deb; do dpkg -x "$deb" "$TRIAX_DEB_ROOT"; done
fi
if [ -d "$TRIAX_DEB_ROOT/usr/lib/x86_64-linux-gnu" ]; then
  export LD_LIBRARY_PATH=$TRIAX_DEB_ROOT/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export UCX_MODULE_DIR=$TRIAX_DEB_ROOT/usr/lib/x86_64-linux-gnu/ucx
  export PATH=$TRIAX_DEB_ROOT/usr/bin:$PATH
fi
