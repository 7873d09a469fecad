#!/usr/bin/env bash
# Coverage-guided fuzzing of every reader of untrusted bytes (libFuzzer, with
# AddressSanitizer and UndefinedBehaviorSanitizer), built with clang from
# fuzz/ into build-fuzz/. Needs clang and libFuzzer (Debian: clang, libclang-rt-dev).
#   scripts/fuzz.sh --list             the targets, one a line
#   scripts/fuzz.sh TARGET [SECONDS]   fuzz one target (default 60 s)
#   scripts/fuzz.sh all [SECONDS]      every target in turn, SECONDS each
#   scripts/fuzz.sh --seed N ...       libFuzzer's random seed (default: a new one each
#                                      run); scripts/test.sh runs `--seed 1 all 10`, so the
#                                      smoke run mutates the same way on every machine
# Seeds are written fresh by build-fuzz/make_seeds; the corpus grows in
# build-fuzz/corpus/TARGET; tests/fuzz_regressions/TARGET is read too. A crash
# leaves its input in build-fuzz/findings/TARGET/ and makes the script fail:
# fix the bug, then check the input in under tests/fuzz_regressions/TARGET/.
# Only inputs written during this run count; older ones are kept, not counted.
# One line per target (runs, execs/s, corpus, crashes) goes to stdout and
# build-fuzz/summary.tsv.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
dir=$root/build-fuzz
mapfile -t all_targets < fuzz/targets.txt

usage() { echo "usage: scripts/fuzz.sh --list | [--seed N] TARGET|all [SECONDS]" >&2; exit 2; }
seed_option=()
if [ "${1:-}" = --seed ]; then
  [[ "${2:-}" =~ ^[0-9]+$ ]] || usage
  seed_option=(-seed="$2")
  shift 2
fi
[ $# -ge 1 ] || usage
if [ "$1" = --list ]; then printf '%s\n' "${all_targets[@]}"; exit 0; fi
seconds=${2:-60}
[[ "$seconds" =~ ^[0-9]+$ ]] || usage
if [ "$1" = all ]; then
  targets=("${all_targets[@]}")
else
  printf '%s\n' "${all_targets[@]}" | grep -qx -- "$1" ||
    { echo "fuzz.sh: unknown target '$1' (scripts/fuzz.sh --list)" >&2; exit 2; }
  targets=("$1")
fi

command -v clang++ >/dev/null ||
  { echo "fuzz.sh: needs clang++ and libFuzzer (apt-get install clang libclang-rt-dev)" >&2; exit 1; }
if [ ! -f "$dir/CMakeCache.txt" ]; then
  generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  log=$(mktemp)
  cmake -S fuzz -B "$dir" "${generator[@]}" -DCMAKE_CXX_COMPILER=clang++ >"$log" 2>&1 ||
    { cat "$log" >&2; rm -f "$log"; exit 1; }
  rm -f "$log"
fi
cmake --build "$dir" -j "$(nproc)"

rm -rf "$dir/seeds"
OMP_NUM_THREADS=1 "$dir/make_seeds" "$dir/seeds" "$root/configs"
cp fuzz/dict/safetensors.dict "$dir/seeds/safetensors.dict"

# LibTorch, OpenCV and OpenBLAS are not instrumented; scripts/sanitize.supp holds
# the leak suppressions for them (LSan reads it; ASan would refuse its lines).
export ASAN_OPTIONS="detect_odr_violation=0"
export LSAN_OPTIONS="suppressions=$root/scripts/sanitize.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1"
export OMP_NUM_THREADS=1

stat() {  # NAME LOG -> the value of libFuzzer's final stat::NAME
  sed -n "s/^stat::$1: *//p" "$2" | tail -n 1
}

failed=()
printf 'target\tseconds\truns\texecs_per_s\tcorpus\tpeak_rss_mb\tcrashes\n' >"$dir/summary.tsv"
for t in "${targets[@]}"; do
  corpus=$dir/corpus/$t findings=$dir/findings/$t log=$dir/logs/$t.log
  mkdir -p "$corpus" "$findings" "$dir/logs"
  inputs=("$corpus" "$dir/seeds/$t")
  [ -d "tests/fuzz_regressions/$t" ] && inputs+=("tests/fuzz_regressions/$t")
  options=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536
           -print_final_stats=1 -artifact_prefix="$findings/" "${seed_option[@]}")
  for dict in "$dir/seeds/$t.dict" "fuzz/dict/$t.dict"; do
    [ -f "$dict" ] && options+=(-dict="$dict") && break
  done
  echo "fuzz.sh: $t for $seconds s (log: $log)"
  started=$dir/logs/$t.started
  touch "$started"
  rc=0
  "$dir/fuzz_$t" "${options[@]}" "${inputs[@]}" >"$log" 2>&1 || rc=$?
  crashes=$(find "$findings" -type f -newer "$started" | wc -l)
  line="$t	$seconds	$(stat number_of_executed_units "$log")	$(stat average_exec_per_sec "$log")	$(find "$corpus" -type f | wc -l)	$(stat peak_rss_mb "$log")	$crashes"
  echo "$line" >>"$dir/summary.tsv"
  echo "fuzz.sh: $line" | tr '\t' ' '
  if [ "$rc" -ne 0 ] || [ "$crashes" -gt 0 ]; then
    failed+=("$t")
    grep -m 3 -E '^==[0-9]+==ERROR|runtime error|deadly signal|uncaught|out-of-memory|malloc\(' "$log" || true
  fi
done
# The summary as aligned columns (awk: a minimal Debian has no `column`).
awk -F'\t' '{ for (i = 1; i <= NF; i++) { cell[NR, i] = $i; if (length($i) > width[i]) width[i] = length($i) }
              if (NF > fields) fields = NF }
     END { for (r = 1; r <= NR; r++) { line = ""
             for (i = 1; i <= fields; i++) line = line sprintf("%-" width[i] + 2 "s", cell[r, i])
             sub(/ +$/, "", line); print line } }' "$dir/summary.tsv"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz.sh: findings in ${failed[*]}: inputs in $dir/findings/, logs in $dir/logs/" >&2
  exit 1
fi
