#!/usr/bin/env bash
# Training throughput of `vit train` on the real Fashion-MNIST: images per
# second (training steps only, from metrics.jsonl) and peak memory, for each
# precision and thread count. Run it on a quiet machine.
#   scripts/bench/train.sh [CONFIG] [IMAGES]
set -euo pipefail
cd "$(dirname "$0")/../.."
config=${1:-configs/fashion-mnist.json}
images=${2:-12800}
vit=./build/vit
[ -x "$vit" ] || scripts/build.sh >/dev/null
source scripts/bench/common.sh
bench_scratch
printf '%-6s %-8s %12s %10s\n' precision threads "images/s" "peak MiB"
for precision in fp32 bf16; do
  for threads in 1 $(nproc); do
    dir="$out/$precision-$threads"
    "$vit" train --config "$config" --threads "$threads" --out "$dir" \
      --set train.epochs=1 --set data.limit_train="$images" --set data.val_size=1000 \
      --set data.limit_test=1000 --set train.precision="$precision" 2>"$dir.log" || { cat "$dir.log"; exit 1; }
    ips=$(sed -n 's/.*"images_per_sec":\([0-9.]*\).*/\1/p' "$dir/metrics.jsonl" | tail -1)
    mib=$(sed -n 's/.*peak memory \([0-9]*\) MiB.*/\1/p' "$dir/train.log" | tail -1)
    printf '%-9s %-8s %12.0f %10s\n' "$precision" "$threads" "$ips" "$mib"
  done
done
