#!/usr/bin/env bash
# Two builds of vit on the same training job, interleaved (A, B, A, B, ...),
# RUNS runs each: the median images per second of each (training steps only,
# from metrics.jsonl), and the median of the pairs' ratios B_i / A_i, the
# figure to quote: a VM that shifts between speeds (seen: 1.4x apart, for
# minutes) moves both runs of a pair together, and the medians of the two
# sides apart. For a change's effect on speed: build the
# commit before it into another folder (git worktree add ../before COMMIT;
# scripts/build.sh there) and compare. Run it on a quiet machine.
#   scripts/bench/compare_builds.sh VIT_A VIT_B [CONFIG] [IMAGES]
#   Env: RUNS=5 THREADS=$(nproc) PRECISION=auto
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 VIT_A VIT_B [CONFIG] [IMAGES]" >&2; exit 2; }
a=$(realpath "$1") b=$(realpath "$2")
cd "$(dirname "$0")/../.."
config=${3:-configs/fashion-mnist.json}
images=${4:-12800}
runs=${RUNS:-5} threads=${THREADS:-$(nproc)} precision=${PRECISION:-auto}
source scripts/bench/common.sh
bench_scratch
one_run() {  # VIT DIR -> images/s
  "$1" train --config "$config" --threads "$threads" --out "$2" --set train.epochs=1 \
    --set data.limit_train="$images" --set data.val_size=1000 --set data.limit_test=1000 \
    --set train.precision="$precision" 2>"$2.log" || { cat "$2.log" >&2; exit 1; }
  sed -n 's/.*"images_per_sec":\([0-9.]*\).*/\1/p' "$2/metrics.jsonl" | tail -1
}
: >"$out/a" && : >"$out/b"
for i in $(seq "$runs"); do
  one_run "$a" "$out/a$i" >>"$out/a"
  one_run "$b" "$out/b$i" >>"$out/b"
done
ma=$(median <"$out/a") mb=$(median <"$out/b")
echo "A $a: $(tr '\n' ' ' <"$out/a")-> median $ma img/s"
echo "B $b: $(tr '\n' ' ' <"$out/b")-> median $mb img/s"
ratio=$(paste "$out/a" "$out/b" | awk '{print $2 / $1}' | median)
echo "pairs' B / A: $(paste "$out/a" "$out/b" | awk '{printf "%.3f ", $2 / $1}')-> median $ratio"
