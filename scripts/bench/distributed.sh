#!/usr/bin/env bash
# One process against two data-parallel ranks (Gloo, loopback) on this
# machine's cores, on the same job, interleaved, median of RUNS runs:
#   alone-T      one process with T = all cores threads
#   alone-1      one process with 1 thread (what each rank gets)
#   ranks-2      two ranks of 1 thread each, started with torchrun's variables
# The job: configs/fashion-mnist-long.json (depth 6, global batch 64, bf16)
# for EPOCHS epoch(s) on LIMIT training images.
# Usage: scripts/bench/distributed.sh     Env: VIT=build/vit RUNS=3 LIMIT=12000 EPOCHS=1
set -euo pipefail
cd "$(dirname "$0")/../.."
VIT=${VIT:-build/vit}
RUNS=${RUNS:-3}
LIMIT=${LIMIT:-12000}
EPOCHS=${EPOCHS:-1}
cores=$(nproc)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
[[ -x $VIT ]] || { echo "bench_distributed: missing $VIT: run scripts/build.sh first" >&2; exit 1; }
args=(train --config configs/fashion-mnist-long.json --set "data.limit_train=$LIMIT"
      --set "train.epochs=$EPOCHS" --set data.limit_test=1000 --device cpu -q)

train_rate() {  # run folder -> the last validation's training images/s
  python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).read().splitlines()[-1])["images_per_sec"])' \
    "$1/metrics.jsonl"
}

run_alone() {  # threads out
  "$VIT" "${args[@]}" --threads "$1" --out "$2" 2>/dev/null
}

run_ranks() {  # out
  local port=$((29000 + RANDOM % 1000))
  for r in 1 0; do
    RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
      "$VIT" "${args[@]}" --threads 1 --out "$1" 2>/dev/null &
  done
  wait
}

declare -A rates walls
for run in $(seq "$RUNS"); do
  for contender in "alone-$cores" alone-1 ranks-2; do
    out=$work/$contender-$run
    start=$(date +%s.%N)
    case $contender in
      alone-1) run_alone 1 "$out" ;;
      alone-*) run_alone 0 "$out" ;;
      ranks-2) run_ranks "$out" ;;
    esac
    wall=$(echo "$(date +%s.%N) - $start" | bc)
    rates[$contender]+="$(train_rate "$out") "
    walls[$contender]+="$wall "
  done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "$(lscpu | sed -n 's/^Model name: *//p'), $cores cores; $LIMIT images x $EPOCHS epoch(s), median of $RUNS"
printf '%-10s %12s %10s %14s\n' contender "train img/s" "wall s" "vs alone-$cores"
base=$(echo "${rates[alone-$cores]}" | median)
for contender in "alone-$cores" alone-1 ranks-2; do
  rate=$(echo "${rates[$contender]}" | median)
  wall=$(echo "${walls[$contender]}" | median)
  printf '%-10s %12.0f %10.1f %13.2fx\n' "$contender" "$rate" "$wall" "$(echo "$rate / $base" | bc -l)"
done
