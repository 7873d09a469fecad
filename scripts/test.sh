#!/usr/bin/env bash
# Sets everything up from a bare Debian 12, builds, and runs the whole test
# suite on the default LibTorch line, a 10-second fuzz run of every reader
# (scripts/fuzz.sh), the whole suite again under ASan and UBSan
# (scripts/sanitize.sh --ci), then the suite again on the other line (see
# scripts/torch_line.sh): Debian's LibTorch 1.13 and pip's LibTorch 2.x (CUDA).
# On CI (CI=true) both lines must pass. Elsewhere, when the other line's
# pieces cannot be had (no CUDA toolkit, no PyPI), it is skipped with one line
# saying why.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/torch_line.sh

# Each phase's wall time, so that a slow CI run says where its minutes went.
phase_start=$SECONDS
phase_done() {  # WHAT
  echo "test.sh: $1 took $((SECONDS - phase_start)) s (total $SECONDS s)"
  phase_start=$SECONDS
}

# ctest runs two tests at a time on CI's 2 cores, each with 2 OpenMP threads
# (CMakeLists.txt sets OMP_NUM_THREADS=2 for them), as are the vit processes
# they start: threads that spin while they wait (libgomp's default) take the
# cores from the other test, so they wait passively (measured:
# docs/benchmarks.md, "Why the own kernels").
export OMP_WAIT_POLICY=passive

# The skips tests/expected_skips.txt allows: each line names the LibTorch
# line, the run, a fact of the host, and a glob of the tests, with the reason.
# The facts this host has:
host_facts="always"
nvidia-smi -L 2>/dev/null | grep -q '^GPU' || host_facts+=" no-gpu"
grep -qw amx_tile /proc/cpuinfo || host_facts+=" no-amx"
grep -qwE 'avx512_bf16|amx_bf16' /proc/cpuinfo && host_facts+=" bf16-cpu"
[ "$(id -u)" -eq 0 ] && host_facts+=" root"

skip_allowed() {  # LINE RUN TEST
  local line run fact pattern reason
  while read -r line run fact pattern reason; do
    case "$line" in '' | '#'*) continue ;; esac
    # The sanitizers' run is the whole suite too: "suite" lines hold for it.
    [[ $line = any || $line = "$1" ]] && [[ $run = any || $run = "$2" || ($run = suite && $2 = asan) ]] &&
      [[ " $host_facts " = *" $fact "* ]] && [[ $3 == $pattern ]] && return 0
  done <tests/expected_skips.txt
  return 1
}

# A run's skipped tests (SKIPS, a file with one name a line) against the
# allow-list. A skip it does not allow is named; on CI (CI=true) it fails the
# run, so that a test that stops running (a package gone, a probe broken)
# shows instead of leaving the run green.
check_skips() {  # LINE RUN SKIPS
  local name count=0 unexpected=()
  while read -r name; do
    count=$((count + 1))
    skip_allowed "$1" "$2" "$name" || unexpected+=("$name")
  done <"$3"
  rm -f "$3"
  echo "test.sh: $count tests skipped (the $1 line, $2), ${#unexpected[@]} of them not in tests/expected_skips.txt"
  [ ${#unexpected[@]} -eq 0 ] && return 0
  printf 'test.sh: unexpected skip: %s\n' "${unexpected[@]}" >&2
  if [ "${CI:-}" = true ]; then
    echo "test.sh: on CI every skip must be expected: give it a line in tests/expected_skips.txt, with its reason, or make the test run" >&2
    exit 1
  fi
}

# Runs the tests that gtest's FILTER picks from DIR's test binary as ctest
# would (two OpenMP threads each, a process per core), but in one process per
# core (gtest's shards) instead of one per test, which would load LibTorch
# each time. Prints each shard's summary, and its whole log when it fails;
# the skipped tests' names go to SKIPS.
run_filtered() {  # DIR FILTER SKIPS
  local shards i status=0 pids=() logs=()
  shards=$(nproc)
  for ((i = 0; i < shards; i++)); do
    logs+=("$(mktemp)")
    (cd "$1" && OMP_NUM_THREADS=2 GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i \
      timeout 1800 ./vit_tests --gtest_filter="$2" >"${logs[i]}" 2>&1) &
    pids+=($!)
  done
  for ((i = 0; i < shards; i++)); do
    if ! wait "${pids[i]}"; then
      status=1
      cat "${logs[i]}"
    fi
    grep -E '^\[(==========|  PASSED  |  SKIPPED |  FAILED  )\] [0-9]+ tests?' "${logs[i]}" |
      sed "s/^/test.sh: shard $((i + 1)) of $shards: /"
    sed -nE 's/^\[  SKIPPED \] ([^ ]+) \([0-9]+ ms\)$/\1/p' "${logs[i]}" >>"$3"
    rm -f "${logs[i]}"
  done
  return $status
}

run_suite() {  # LINE
  echo "test.sh: the LibTorch $1 line ($(torch_line_build_dir "$1")/)"
  local log skips
  log=$(mktemp)
  skips=$(mktemp)
  (cd "$(torch_line_build_dir "$1")" && ctest --output-on-failure --timeout 900 -j "$(nproc)") |
    tee "$log"
  # ctest's closing list: "<tab>NUMBER - NAME (Skipped)".
  sed -nE 's/^[[:space:]]*[0-9]+ - ([^ ]+) \(Skipped\)$/\1/p' "$log" >"$skips"
  rm -f "$log"
  check_skips "$1" suite "$skips"
  # The own kernels and the precision choice again, on the paths of lesser
  # CPUs: AVX2 (vit's 8-lane kernels, LibTorch's AVX2 code, and precision
  # auto as on a CPU without bf16), then no vector kernels of vit's own
  # (LibTorch's operators in their place). So every path is tested on every
  # host, whatever its CPU. The AVX2 run caps oneDNN as ATEN_CPU_CAPABILITY
  # caps ATen (ONEDNN_MAX_CPU_ISA, which Debian's oneDNN 2.6 reads as well as
  # DNNL_MAX_CPU_ISA), so its products take the code an AVX2 host runs.
  # LibTorch 1.13 still asks the CPU, not oneDNN, whether bf16 products are
  # there, and the capped oneDNN refuses them: the tests' bf16 cases skip
  # under that cap (tests/kernels/kernel_paths.hpp), and precision auto picks
  # fp32 as on an AVX2 host. OpenBLAS's own variables are left alone.
  local kernel_tests='SimdSets.*:AdamW.*:Optimizer.*:Gelu.*:LayerNorm.*:ScaledSoftmax.*:BiasedResidual.*:ResidualNorm.*:Linear*:BatchedMatmul.*:SplitHeads.*:AttentionFromProjection.*:CpuIsa.*:ChoosePrecision.*:EvaluationPrecision.*:AutocastDtype.*:VisionTransformer*'
  # On a CPU with AVX512_BF16, also AVX-512 without it (the narrowing to
  # bf16 in integer instructions, as on Intel's Skylake and Ice Lake Xeons),
  # with ATen's AVX-512 code as there: the LayerNorm tests' bounds are
  # LibTorch's own error, which its scalar code (default) makes smaller.
  local isas="avx2 baseline"
  grep -qw avx512_bf16 /proc/cpuinfo && isas="avx512 $isas"
  for isa in $isas; do
    echo "test.sh: the LibTorch $1 line, kernels and precision under VIT_CPU_ISA=$isa"
    VIT_CPU_ISA=$isa ATEN_CPU_CAPABILITY=$([ $isa = baseline ] && echo default || echo $isa) \
    ONEDNN_MAX_CPU_ISA=$([ $isa = avx2 ] && echo AVX2 || echo ALL) \
      run_filtered "$(torch_line_build_dir "$1")" "$kernel_tests" "$skips"
    check_skips "$1" "$isa" "$skips"
  done
}

default=$VIT_DEFAULT_TORCH
other=$(torch_line_other "$default")
scripts/setup.sh --python-check --browser-check --fuzz
phase_done "the setup"
scripts/build.sh
phase_done "the $default line's build"
run_suite "$default"
phase_done "the $default line's tests"
# A fuzz smoke run, 10 s a target with a fixed seed (docs/robustness.md).
scripts/fuzz.sh --seed 1 all 10
phase_done "the fuzz run"
# The whole suite under AddressSanitizer and UndefinedBehaviorSanitizer, in
# one process (docs/robustness.md): any report fails the run, and its skips
# go through the allow-list as the run "asan".
sanitize_log=$(mktemp)
scripts/sanitize.sh --ci | tee "$sanitize_log"
sanitize_skips=$(mktemp)
sed -nE 's/^skipped: ([^ ]+)$/\1/p' "$sanitize_log" >"$sanitize_skips"
rm -f "$sanitize_log"
check_skips "$default" asan "$sanitize_skips"
phase_done "the sanitizers' build and run"

reason=""
if [ "$other" = pip ] && [ -z "$(torch_line_nvcc)" ]; then
  reason="no CUDA toolkit (nvcc), which pip's LibTorch needs to build against"
fi
if [ -z "$reason" ]; then
  log=$(mktemp)
  scripts/setup.sh --torch "$other" >"$log" 2>&1 || reason="its setup failed: $(tail -n 1 "$log")"
  rm -f "$log"
  phase_done "the $other line's setup"
fi
if [ -n "$reason" ]; then
  if [ "${CI:-}" = true ]; then
    echo "test.sh: CI tests both LibTorch lines, and the $other line cannot be set up: $reason" >&2
    exit 1
  fi
  echo "test.sh: skipped the LibTorch $other line: $reason (the $default line passed)"
  exit 0
fi
scripts/build.sh --torch "$other"
phase_done "the $other line's build"
run_suite "$other"
phase_done "the $other line's tests"
