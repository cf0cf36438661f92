#!/bin/bash
# Runs on the GPU machine only (docs/gpu.md).
# Builds triax against a CUDA LibTorch (docs/gpu.md): the one inside the machine's PyTorch
# (python3 -c 'import torch; print(torch.utils.cmake_prefix_path)'), NCCL from CUDA's toolkit or
# the nvidia-nccl wheel PyTorch depends on, and Debian 12's MPICH, yaml-cpp, nlohmann-json,
# Catch2, PCRE2, SentencePiece and zlib headers where the machine lacks them: the .deb files in .cache/deb are
# unpacked (never installed) into .cache/deb-root, found from there, and put on
# LD_LIBRARY_PATH by `source tools/gpu/env.sh`.
#
#   tools/gpu/build.sh [BUILD_DIR [TARGET...]]     (default build-gpu; all targets)
#
# Fetch the packages once on a Debian 12 machine (the GPU machine has no apt):
#   mkdir -p .cache/deb && (cd .cache/deb && apt-get download mpich libmpich12 libmpich-dev \
#     libhwloc15 libucx0 libibverbs1 librdmacm1 libnuma1 libnl-3-200 libnl-route-3-200 \
#     libgfortran5 libudev1 libslurm38 libyaml-cpp0.7 libyaml-cpp-dev nlohmann-json3-dev catch2 \
#     zlib1g zlib1g-dev libpcre2-dev libpcre2-8-0 libsentencepiece-dev libsentencepiece0)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build-gpu}
shift || true
source tools/gpu/env.sh
torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
args=(-DCMAKE_BUILD_TYPE=Release "-DCMAKE_PREFIX_PATH=$torch_prefix;$TRIAX_DEB_ROOT/usr")
if [ -d "$TRIAX_DEB_ROOT/usr/include/x86_64-linux-gnu/mpich" ]; then
  # MPICH's compiler wrappers name /usr: give FindMPI the unpacked header and library instead.
  args+=(-DMPI_SKIP_COMPILER_WRAPPER=ON -DMPI_C_LIB_NAMES=mpich
    "-DMPI_mpich_LIBRARY=$TRIAX_DEB_ROOT/usr/lib/x86_64-linux-gnu/libmpich.so"
    "-DMPI_C_HEADER_DIR=$TRIAX_DEB_ROOT/usr/include/x86_64-linux-gnu/mpich"
    "-DZLIB_INCLUDE_DIR=$TRIAX_DEB_ROOT/usr/include"
    "-DZLIB_LIBRARY=$(ls "$TRIAX_DEB_ROOT"/lib/x86_64-linux-gnu/libz.so.1.* | head -1)")
  # pkg-config (PCRE2, SentencePiece) reads only the unpacked .pc files, their /usr moved there;
  # the machine's own (an MPI of another kind, say) stay out of the build.
  export PKG_CONFIG_LIBDIR=$TRIAX_DEB_ROOT/usr/lib/x86_64-linux-gnu/pkgconfig
  export PKG_CONFIG_SYSROOT_DIR=$TRIAX_DEB_ROOT
fi
# NCCL: the toolkit's when it has one, else the wheel's (its library is named libnccl.so.2 only).
if [ ! -e /usr/local/cuda/include/nccl.h ]; then
  nccl=$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))' \
    2>/dev/null || true)
  if [ -n "$nccl" ] && [ -e "$nccl/include/nccl.h" ]; then
    args+=("-DNCCL_INCLUDE_DIR=$nccl/include" "-DNCCL_LIBRARY=$(ls "$nccl"/lib/libnccl.so* | head -1)")
  fi
fi
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S . -B "$build" "${generator[@]}" "${args[@]}"
# Keep going past a failing file, so that one build shows every error.
keep_going=(-- -k 0)
[ ${#generator[@]} -eq 0 ] && keep_going=(-- -k)
if [ $# -gt 0 ]; then
  cmake --build "$build" --target "$@" "${keep_going[@]}"
else
  cmake --build "$build" "${keep_going[@]}"
fi
