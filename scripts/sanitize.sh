#!/usr/bin/env bash
# Builds the whole test suite with AddressSanitizer, UndefinedBehaviorSanitizer
# (its checks of values, below) and libstdc++'s assertions
# (-D_GLIBCXX_ASSERTIONS) into build-asan/, on the default LibTorch line, and
# runs ctest there. Any report fails the run.
#   scripts/sanitize.sh            build and run every test
#   scripts/sanitize.sh REGEX      build the test binary, then run the tests whose names match
#   scripts/sanitize.sh --ci       every test of the test binary in one process, as
#                                  scripts/test.sh (CI) runs it, which loads LibTorch
#                                  once instead of once per test
# LibTorch, OpenBLAS and OpenMP are not instrumented; the leaks that come from
# inside them are silenced by scripts/sanitize.supp (and only those).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=build-asan
supp=$PWD/scripts/sanitize.supp

# UBSan's checks of values and arithmetic (signed overflow, shifts, division
# by zero, bool and enum loads, a function's missing return, unreachable
# code, VLA bounds, builtins' arguments), not its pointer checks (null,
# alignment, object size, pointer overflow, array bounds, vptr, nonnull
# attributes): ASan catches the bad accesses those stand for, and with them
# the instrumented build takes far longer (docs/benchmarks.md, "Why the own
# kernels"), which CI's time cannot spare. The fuzz
# targets (scripts/fuzz.sh), the readers of untrusted bytes, keep every check.
ubsan=signed-integer-overflow,shift,integer-divide-by-zero,unreachable,return,bool,enum,vla-bound,builtin
flags="-fsanitize=address,$ubsan -fno-omit-frame-pointer -D_GLIBCXX_ASSERTIONS -g1"
options=(-DCMAKE_BUILD_TYPE=Sanitize
         "-DCMAKE_CXX_FLAGS_SANITIZE=-O1 $flags"
         "-DCMAKE_EXE_LINKER_FLAGS_SANITIZE=-fsanitize=address,$ubsan"
         "-DCMAKE_SHARED_LINKER_FLAGS_SANITIZE=-fsanitize=address,$ubsan")
command -v ninja >/dev/null && options+=(-G Ninja)
command -v ccache >/dev/null && options+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# Configured every time (a few seconds), so that a change of the flags above
# reaches an existing build-asan/.
log=$(mktemp)
cmake -S . -B "$dir" "${options[@]}" >"$log" 2>&1 || { cat "$log" >&2; rm -f "$log"; exit 1; }
rm -f "$log"
mode=all
pattern=""
if [ "${1:-}" = --ci ]; then mode=ci; elif [ $# -gt 0 ]; then mode=some; pattern=$1; fi

if [ $mode = all ]; then
  cmake --build "$dir" -j "$(nproc)"
else
  cmake --build "$dir" -j "$(nproc)" --target vit_tests
fi

# halt_on_error: the first report ends the test, so ctest sees a failure.
# detect_odr_violation=0: LibTorch's libraries define some globals twice (not ours).
# The suppressions are leak ones, which only LSan reads: ASan refuses a file
# with lines of kinds it does not know.
export ASAN_OPTIONS="halt_on_error=1:abort_on_error=0:detect_odr_violation=0:detect_leaks=1"
export LSAN_OPTIONS="suppressions=$supp:print_suppressions=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
if [ $mode = ci ]; then
  # One process: the instrumented binary loads LibTorch slowly, which ctest
  # would pay once per test. Only a summary, the skipped tests ("skipped:
  # Suite.Name", for scripts/test.sh's allow-list) and the failures print.
  log=$(mktemp) results=$PWD/$dir/sanitize-results.xml
  if (cd "$dir" && ./vit_tests --gtest_brief=1 --gtest_output="xml:$results" >"$log" 2>&1); then
    grep -E '^\[  (PASSED|SKIPPED) +\]|tests from .* ran' "$log"
    sed -nE '/result="skipped"/s/.*<testcase name="([^"]+)".* classname="([^"]+)".*/skipped: \2.\1/p' \
      "$results"
    rm -f "$log"
    exit 0
  fi
  tail -n 80 "$log" >&2
  echo "sanitize.sh: a test failed or a sanitizer reported under ASan/UBSan (the whole log: $log)" >&2
  exit 1
fi
args=(--output-on-failure --timeout 1800 -j "$(nproc)")
[ -n "$pattern" ] && args+=(-R "$pattern")
(cd "$dir" && ctest "${args[@]}")
