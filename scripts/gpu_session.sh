#!/usr/bin/env bash
# The GPU checks of issue 15 on a lent GPU machine (the workplace's `device`
# tool), in stages that fit its calls of at most 10 minutes.
#
# Here, once per session:   scripts/gpu_session.sh prepare
#   fills .carry/ (git ignores it): ../shared/gpu/make-kit.sh's static OpenCV
#   kit, Gloo's headers and GoogleTest's sources (the GPU image may lack
#   them), and Fashion-MNIST's four .gz files (30 MB) in .carry/data.
# There, with carry [".carry"], stages in order, several per call:
#   scripts/gpu_session.sh build test     # OpenCV + vit (~6 min), then ctest -R Cuda|Device
#   scripts/gpu_session.sh bench          # scripts/bench_gpu.sh (ROWS, RUNS)
#   scripts/gpu_session.sh config         # configs/fashion-mnist-gpu.json, timed
# The build lives in /tmp/vit-cuda, which lasts while the machine stays warm
# (30 s after a call): a later call on a fresh machine starts with `build`.
# Logs and results go to $OUT (the device tool brings them back).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/vit-gpu-out}
BUILD=${BUILD:-/tmp/vit-cuda}
export BUILD
mkdir -p "$OUT"

prepare() {
  bash ../shared/gpu/make-kit.sh
  rm -rf .carry/gloo-include .carry/googletest
  mkdir -p .carry/gloo-include .carry/data
  cp -r /usr/include/gloo .carry/gloo-include/
  cp -r /usr/src/googletest .carry/googletest
  cp /usr/share/datasets/fashion-mnist/*.gz .carry/data/
  du -sh .carry
}

build() {
  # Gloo's headers for train/distributed (find_path reads CMAKE_INCLUDE_PATH),
  # and GoogleTest when the image has only its headers.
  export CMAKE_INCLUDE_PATH=$PWD/.carry/gloo-include
  if ! ls /usr/lib/x86_64-linux-gnu/libgtest.a /usr/local/lib*/libgtest.a >/dev/null 2>&1; then
    cmake -S .carry/googletest -B /tmp/gtest-build -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_INSTALL_PREFIX=/tmp/gtest-install >/tmp/gtest.log 2>&1
    cmake --build /tmp/gtest-build >>/tmp/gtest.log 2>&1
    cmake --install /tmp/gtest-build >>/tmp/gtest.log 2>&1
    export CMAKE_PREFIX_PATH=/tmp/gtest-install${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}
  fi
  local start=$SECONDS
  bash .carry/gpu/build-on-device.sh 2>&1 | tee "$OUT/build.log"
  echo "build: $((SECONDS - start)) s"
}

gpu_tests() {
  (cd "$BUILD" && ctest -R 'Cuda|Device' --output-on-failure 2>&1) | tee "$OUT/gpu-tests.log"
}

bench() {
  nvidia-smi | tee "$OUT/nvidia-smi.txt"
  # shellcheck disable=SC2086
  DATA=$PWD/.carry/data VIT=$BUILD/vit RUNS=${RUNS:-3} WORK=/tmp/vit-bench-gpu \
    scripts/bench_gpu.sh ${ROWS:-} 2>&1 | tee "$OUT/bench.log"
  cp /tmp/vit-bench-gpu/results.jsonl "$OUT/bench-results.jsonl"
}

config() {
  local run=/tmp/vit-gpu-config
  rm -rf "$run"
  local start=$SECONDS
  "$BUILD/vit" train --config configs/fashion-mnist-gpu.json --set "data.root=$PWD/.carry/data" \
    --device cuda --out "$run" 2>&1 | tee "$OUT/config.log"
  echo "vit train, whole command: $((SECONDS - start)) s" | tee -a "$OUT/config.log"
  cp "$run/metrics.csv" "$run/summary.json" "$OUT/"
}

[ $# -gt 0 ] || { sed -n '2,17p' "$0"; exit 2; }
for stage in "$@"; do
  case "$stage" in
    prepare) prepare ;;
    build) build ;;
    test) gpu_tests ;;
    bench) bench ;;
    config) config ;;
    *) echo "gpu_session: unknown stage '$stage' (known: prepare build test bench config)" >&2; exit 2 ;;
  esac
done
