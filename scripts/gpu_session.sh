#!/usr/bin/env bash
# The GPU work on a lent GPU machine (the workplace's `device` tool), in
# stages that fit its calls of at most 10 minutes. Each stage prints its exit
# status as it ends, and every call ends with a table of its stages.
#
# Here, once per session:   scripts/gpu_session.sh prepare
#   fills .carry/ (git ignores it): ../shared/gpu/make-kit.sh's static OpenCV
#   kit, Gloo's headers, GoogleTest's sources (the GPU image may lack them)
#   and Fashion-MNIST's four .gz files (30 MB) in .carry/data.
# There, with carry [".carry"], several stages per call:
#   call 1: scripts/gpu_session.sh build pack diagnose
#           builds OpenCV and vit (~6 min), packs vit and vit_tests into
#           $OUT/bin.tar.xz.* (what comes back), then diagnoses the crash.
#   Here, between calls:      scripts/gpu_session.sh unpack FILES_AT
#           puts the parts that came back into .carry/bin/.
#   call 2: scripts/gpu_session.sh unpack test test diagnose
#   call 3: scripts/gpu_session.sh unpack bench
#   call 4: scripts/gpu_session.sh unpack config
#   (`unpack` there reads .carry/bin/, so each later call needs no build.)
# Stages:
#   build     OpenCV + vit + vit_tests into $BUILD (/tmp/vit-cuda)
#   pack      $BUILD's vit and vit_tests, xz-compressed, in parts of 15 MiB, to $OUT
#   unpack    here: DIR's parts (the device tool's files_at) to .carry/bin/;
#             there: .carry/bin/'s parts back into $BUILD
#   diagnose  the CUDA-graph crash, most decisive first: one graph test alone,
#             its exit status and whether it passed before dying; cuda-gdb's
#             backtrace of every thread; the test again without the autograd
#             engine's shutdown wait and with vit's malloc settings; `vit train`
#             on the tests' shapes with and without the graph; compute-sanitizer
#   test      every Cuda and Device test, each in a process of its own (as
#             ctest runs them), with its exit status
#   bench     scripts/bench/gpu.sh (ROWS, RUNS), with and without the graph
#   config    configs/fashion-mnist-gpu.json, timed, its curve and summary
# The device tool brings back at most 8 files from $OUT: the binaries' parts
# and one $OUT/logs.tar.xz of every log and result ($LOGS), made at the end.
set -uo pipefail
cd "$(dirname "$0")/.." || exit
OUT=${OUT:-/tmp/vit-gpu-out}
BUILD=${BUILD:-/tmp/vit-cuda}
LOGS=${LOGS:-/tmp/vit-gpu-logs}
export BUILD
mkdir -p "$OUT" "$LOGS"
results=()  # "stage|status|seconds"
test_round=0

prepare() {
  bash ../shared/gpu/make-kit.sh || return
  rm -rf .carry/gloo-include .carry/googletest
  mkdir -p .carry/gloo-include .carry/data
  cp -r /usr/include/gloo .carry/gloo-include/ &&
    cp -r /usr/src/googletest .carry/googletest &&
    cp /usr/share/datasets/fashion-mnist/*.gz .carry/data/ || return
  du -sh .carry
}

build() {
  # Gloo's headers for train/distributed (find_path reads CMAKE_INCLUDE_PATH),
  # and GoogleTest when the image has only its headers.
  export CMAKE_INCLUDE_PATH=$PWD/.carry/gloo-include
  if ! ls /usr/lib/x86_64-linux-gnu/libgtest.a /usr/local/lib*/libgtest.a >/dev/null 2>&1; then
    cmake -S .carry/googletest -B /tmp/gtest-build -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_INSTALL_PREFIX=/tmp/gtest-install >/tmp/gtest.log 2>&1 &&
      cmake --build /tmp/gtest-build >>/tmp/gtest.log 2>&1 &&
      cmake --install /tmp/gtest-build >>/tmp/gtest.log 2>&1 || { tail -20 /tmp/gtest.log; return 1; }
    export CMAKE_PREFIX_PATH=/tmp/gtest-install${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}
  fi
  bash .carry/gpu/build-on-device.sh 2>&1 | tee "$LOGS/build.log"
}

# The two binaries, compressed and cut to what the device tool brings back
# (files of at most 16 MiB). The tests find the source tree by its path at
# build time, which pack records.
pack() {
  [ -x "$BUILD/vit" ] && [ -x "$BUILD/vit_tests" ] || { echo "pack: no build in $BUILD"; return 1; }
  rm -f "$OUT"/bin.tar.xz.*
  pwd > "$BUILD/source-dir.txt"
  tar -C "$BUILD" -cf - vit vit_tests source-dir.txt | xz -T0 -6 | split -b 15M -d - "$OUT/bin.tar.xz."
  ls -l "$OUT"/bin.tar.xz.*
}

unpack() {
  if [ -n "${1:-}" ]; then  # here: the folder the device tool put the files in
    rm -rf .carry/bin && mkdir -p .carry/bin && cp "$1"/bin.tar.xz.* .carry/bin/ && ls -l .carry/bin
    return
  fi
  ls .carry/bin/bin.tar.xz.* >/dev/null 2>&1 || { echo "unpack: no .carry/bin/ (run build pack)"; return 1; }
  mkdir -p "$BUILD"
  cat .carry/bin/bin.tar.xz.* | xz -d | tar -C "$BUILD" -xf - || return
  # The tests look for the configs and scripts where the source tree was.
  local built_in
  built_in=$(cat "$BUILD/source-dir.txt")
  [ "$built_in" = "$PWD" ] || { mkdir -p "$(dirname "$built_in")" && ln -sfn "$PWD" "$built_in"; }
  "$BUILD/vit" --version
}

# Runs the command, prints and records its exit status (128 + N: signal N).
step() {  # NAME COMMAND...
  local name=$1 start=$SECONDS status
  shift
  echo "== $name: $*"
  "$@"
  status=$?
  echo "== $name: exit status $status ($((SECONDS - start)) s)"
  results+=("$name|$status|$((SECONDS - start))")
  return 0
}

# One gtest test in a process of its own; prints whether it reported a pass
# before the process ended.
one_test() {  # TEST [ENV=VALUE...]
  local test=$1 log status
  shift
  log=$LOGS/test-$(echo "$test" | tr -c 'A-Za-z0-9\n' '_')-$test_round.log
  env "$@" "$BUILD/vit_tests" --gtest_filter="$test" >"$log" 2>&1
  status=$?
  if grep -q "^\[  SKIPPED \] 1 test" "$log"; then
    echo "   $test: skipped ($(grep -m1 -A1 'Skipped$' "$log" | tail -1)), exit status $status"
  elif grep -q "^\[  PASSED  \] 1 test" "$log"; then
    echo "   $test: passed, then exit status $status"
  else
    echo "   $test: did not pass, exit status $status"
    tail -15 "$log"
  fi
  return $status
}

# The tests' model and data shapes in `vit train`: depth 1, fp32, class token.
tiny_train() {  # GRAPH(true|false)
  local run=/tmp/vit-tiny-$1
  rm -rf "$run"
  "$BUILD/vit" train --config configs/fashion-mnist.json --device cuda --out "$run" \
    --set "data.root=$PWD/.carry/data" --set data.limit_train=2000 --set data.limit_test=500 \
    --set data.val_size=500 --set model.depth=1 --set model.pool=cls --set train.precision=fp32 \
    --set train.epochs=2 --set train.batch_size=64 --set "train.cuda_graph=$1" >"$LOGS/tiny-$1.log" 2>&1
}

diagnose() {
  local graph_test=CudaTest.TheCudaGraphTrainsLikeTheEagerStep
  step "alone" one_test "$graph_test"
  if command -v cuda-gdb >/dev/null; then
    step "cuda-gdb" timeout 300 cuda-gdb -batch -ex run -ex bt -ex "info threads" \
      -ex "thread apply all bt" --args "$BUILD/vit_tests" --gtest_filter="$graph_test" \
      >"$LOGS/cuda-gdb.log" 2>&1
    grep -B2 -A40 "received signal\|SIGSEGV" "$LOGS/cuda-gdb.log" | head -120
  fi
  step "no-shutdown-wait" one_test "$graph_test" TORCH_AUTOGRAD_SHUTDOWN_WAIT_LIMIT=0
  # vit's own settings (src/allocator.cpp), which the tests' process lacks.
  step "vit-malloc" one_test "$graph_test" MALLOC_MMAP_THRESHOLD_=33554432 \
    MALLOC_TRIM_THRESHOLD_=1073741824
  step "vit-train-graph" tiny_train true
  step "vit-train-eager" tiny_train false
  tail -4 "$LOGS/tiny-true.log" "$LOGS/tiny-false.log"
  if command -v compute-sanitizer >/dev/null; then
    step "memcheck" timeout 420 compute-sanitizer --tool memcheck --print-limit 20 \
      "$BUILD/vit_tests" --gtest_filter="$graph_test" >"$LOGS/memcheck.log" 2>&1
    grep -m20 "ERROR SUMMARY\|Invalid\|========= " "$LOGS/memcheck.log"
  fi
}

gpu_tests() {
  local failed=0 test
  test_round=$((test_round + 1))
  for test in $("$BUILD/vit_tests" --gtest_list_tests --gtest_filter='Cuda*:Device*' |
    awk '/^[^ ]/ {suite=$1} /^  / {print suite $1}'); do
    one_test "$test" || failed=$((failed + 1))
  done
  echo "tests, round $test_round: $failed failed"
  return $failed
}

bench() {
  nvidia-smi | tee "$LOGS/nvidia-smi.txt"
  # shellcheck disable=SC2086
  DATA=$PWD/.carry/data VIT=$BUILD/vit RUNS=${RUNS:-3} WORK=/tmp/vit-bench-gpu \
    scripts/bench/gpu.sh ${ROWS:-} 2>&1 | tee "$LOGS/bench.log"
  local status=$?
  cp /tmp/vit-bench-gpu/results.jsonl "$LOGS/bench-results.jsonl"
  # The same rows with the step launched op by op: what the graph is worth.
  # shellcheck disable=SC2086
  DATA=$PWD/.carry/data VIT=$BUILD/vit RUNS=${RUNS:-3} WORK=/tmp/vit-bench-gpu-eager \
    CONTENDERS=vit VIT_SET="train.cuda_graph=false" scripts/bench/gpu.sh ${ROWS:-} 2>&1 |
    tee "$LOGS/bench-eager.log"
  return $((status + $?))
}

config() {
  local run=/tmp/vit-gpu-config
  rm -rf "$run"
  "$BUILD/vit" train --config configs/fashion-mnist-gpu.json --set "data.root=$PWD/.carry/data" \
    --device cuda --out "$run" 2>&1 | tee "$LOGS/config.log"
  local status=$?
  cp "$run/metrics.csv" "$run/summary.json" "$LOGS/" 2>/dev/null
  return $status
}

[ $# -gt 0 ] || { sed -n '2,35p' "$0"; exit 2; }
while [ $# -gt 0 ]; do
  stage=$1
  shift
  case "$stage" in
    prepare) step prepare prepare ;;
    build) step build build ;;
    pack) step pack pack ;;
    unpack)
      if [ $# -gt 0 ] && [ -d "$1" ]; then
        step unpack unpack "$1"
        shift
      else
        step unpack unpack
      fi
      ;;
    diagnose) diagnose ;;
    test) step test gpu_tests ;;
    bench) step bench bench ;;
    config) step config config ;;
    *) echo "gpu_session: unknown stage '$stage' (known: prepare build pack unpack diagnose test bench config)" >&2
       exit 2 ;;
  esac
done

tar -C "$(dirname "$LOGS")" -cJf "$OUT/logs.tar.xz" "$(basename "$LOGS")" 2>/dev/null
echo
printf '%-18s %12s %9s\n' stage "exit status" seconds
for r in "${results[@]}"; do
  IFS='|' read -r name status seconds <<<"$r"
  printf '%-18s %12s %9s\n' "$name" "$status" "$seconds"
done
