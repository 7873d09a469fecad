#!/usr/bin/env bash
# Configures and builds vit (Release). Run scripts/setup.sh first, with the same --torch.
#   scripts/build.sh                 the default LibTorch line, into build/
#   scripts/build.sh --torch pip     LibTorch 2.x from pip's torch (CUDA), into its own folder
#   scripts/build.sh --torch debian  Debian's LibTorch 1.13 (CPU)
# The folder of each line is in scripts/torch_line.sh (build/ for the default one).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/torch_line.sh
line=$VIT_DEFAULT_TORCH
while [ $# -gt 0 ]; do
  case "$1" in
    --torch) [ $# -ge 2 ] || { echo "build.sh: --torch needs a line (debian or pip)" >&2; exit 2; }
             line=$2; shift ;;
    *) echo "build.sh: unknown option '$1' (known: --torch debian|pip)" >&2; exit 2 ;;
  esac
  shift
done
torch_line_check "$line"
dir=$(torch_line_build_dir "$line")

options=(-DCMAKE_BUILD_TYPE=Release)
command -v ninja >/dev/null && options+=(-G Ninja)
# ccache, where installed, makes rebuilds in other worktrees of this repository cheap.
command -v ccache >/dev/null && options+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
if [ "$line" = pip ]; then
  python=$VIT_TORCH2_VENV/bin/python
  [ -x "$python" ] || { echo "build.sh: no pip LibTorch in $VIT_TORCH2_VENV; run scripts/setup.sh --torch pip" >&2; exit 1; }
  nvcc=$(torch_line_nvcc)
  [ -n "$nvcc" ] || { echo "build.sh: pip's LibTorch is built with CUDA and its CMake config needs the CUDA toolkit (nvcc), which is not installed" >&2; exit 1; }
  export PATH=$(dirname "$nvcc"):$PATH CUDACXX=$nvcc
  # The torch package folder itself, so CMake finds its libraries before any
  # other LibTorch on the system (Debian's libtorch-dev, for one).
  options+=(-DCMAKE_PREFIX_PATH="$("$python" -c 'import os, torch; print(os.path.dirname(torch.__file__))')")
fi
# Configure when the folder is new, and again when a configure failed: that
# leaves a cache but no build file, and building would only say so.
if [ ! -f "$dir/CMakeCache.txt" ] || { [ ! -f "$dir/build.ninja" ] && [ ! -f "$dir/Makefile" ]; }; then
  log=$(mktemp)
  cmake -S . -B "$dir" "${options[@]}" >"$log" 2>&1 || { cat "$log" >&2; rm -f "$log"; exit 1; }
  rm -f "$log"
fi
cmake --build "$dir" -j "$(nproc)"
