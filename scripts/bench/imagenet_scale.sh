#!/usr/bin/env bash
# ImageNet at its real size: what listing a 1,281,167 + 50,000-image folder
# costs, beside the same on a folder of about 1,000 images, so the list's
# own share shows.
#  1. Two folders in ImageNet's layout (train/<wnid>/<wnid>_N.JPEG,
#     val/<wnid>/ILSVRC2012_val_N.JPEG, 1,000 classes), their files hard
#     links to the JPEGs of PHOTOS (made by scripts/bench/make_photos.py):
#     no disk space beyond the directory entries.
#  2. `vit data --json` on each, RUNS times, warm cache: peak resident memory
#     (GNU time's maximum RSS) and seconds.
#  3. `vit train` of a small model (patch 16, width 64, depth 2, batch 64)
#     streamed from each for TRAIN_SECONDS, stopped by SIGINT: its peak.
#  4. The same run on the large folder as two Gloo ranks on this machine, with
#     LOCAL_WORLD_SIZE=1 (each rank lists the folder itself) and 2 (the ranks
#     share one mapped list, data/shared_listing.hpp): each rank's peak, the
#     list's heap bytes from its log, and the mapped list's resident and
#     proportional share (smaps' Rss and Pss) halfway through.
# Usage: PHOTOS=/tmp/photos scripts/bench/imagenet_scale.sh
#   Env: WORK=/tmp/vit-imagenet-scale (kept, for reruns)  RUNS=3  TRAIN_SECONDS=60
set -euo pipefail
cd "$(dirname "$0")/../.."
photos=${PHOTOS:?PHOTOS must name a folder of JPEGs (scripts/bench/make_photos.py)}
work=${WORK:-/tmp/vit-imagenet-scale} runs=${RUNS:-3} train_seconds=${TRAIN_SECONDS:-60}
vit=./build/vit
[ -x "$vit" ] || scripts/build.sh >/dev/null
[ -x /usr/bin/time ] || { echo "needs GNU time (Debian: apt-get install time)" >&2; exit 1; }
source scripts/bench/common.sh
bench_scratch

links() {  # DIR TRAIN VAL
  [ -d "$1/train" ] && return
  python3 - "$photos" "$@" <<'PY'
import os, sys
from pathlib import Path
photos, root, n_train, n_val = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
sources = sorted(str(p) for p in Path(photos).rglob("*") if p.suffix.lower() in (".jpg", ".jpeg"))
if not sources:
    sys.exit(f"{photos}: no JPEGs")
made = 0
for split, total in (("train", n_train), ("val", n_val)):
    for c in range(1000):
        wnid = "n%08d" % (1440764 + 7919 * c)
        folder = root / split / wnid
        folder.mkdir(parents=True, exist_ok=True)
        for i in range(total // 1000 + (c < total % 1000)):
            name = f"{wnid}_{10000 + 7 * i}.JPEG" if split == "train" else \
                f"ILSVRC2012_val_{c * 50 + i + 1:08d}.JPEG"
            os.link(sources[made % len(sources)], folder / name)
            made += 1
print(f"{root}: {made} links")
PY
}
links "$work/imagenet-1k-images" 1000 50
links "$work/imagenet" 1281167 50000

echo "== vit data --json: peak resident memory, seconds (warm cache) =="
for folder in "$work/imagenet-1k-images" "$work/imagenet"; do
  for i in $(seq "$runs"); do
    /usr/bin/time -f "%M %e" -o "$out/time" "$vit" data --config configs/imagenet-vit-s16.json \
      --set data.root="$folder" --json -q >"$out/data.json"
    read -r kb seconds <"$out/time"
    echo "$(basename "$folder") $((kb / 1024)) MiB $seconds s"
  done
done

echo "== vit train, patch 16, width 64, depth 2, batch 64, streamed for ${train_seconds} s =="
for folder in "$work/imagenet-1k-images" "$work/imagenet"; do
  /usr/bin/time -f "%M" -o "$out/time" timeout -s INT "$train_seconds" "$vit" train \
    --config configs/imagenet-vit-s16.json --set data.root="$folder" --set model.dim=64 \
    --set model.depth=2 --set model.heads=2 --set model.mlp_dim=256 --set train.batch_size=64 \
    --set train.precision=fp32 --device cpu --out "$out/run" >"$out/train.log" 2>&1 || true
  echo "$(basename "$folder") peak $(($(tail -1 "$out/time") / 1024)) MiB"  # the last line: time notes a non-zero exit above it
  rm -rf "$out/run"
done

echo "== two ranks of that run on $(basename "$work/imagenet"), ${train_seconds} s =="
train_args=(train --config configs/imagenet-vit-s16.json --set data.root="$work/imagenet"
  --set model.dim=64 --set model.depth=2 --set model.heads=2 --set model.mlp_dim=256
  --set train.batch_size=64 --set train.precision=fp32 --device cpu --threads 1)
for local in 1 2; do
  port=$((29000 + RANDOM % 1000))
  for r in 0 1; do
    RANK=$r WORLD_SIZE=2 LOCAL_RANK=$((local == 2 ? r : 0)) LOCAL_WORLD_SIZE=$local \
      MASTER_ADDR=127.0.0.1 MASTER_PORT=$port /usr/bin/time -f "%M" -o "$out/time$r" \
      timeout -s INT "$train_seconds" "$vit" "${train_args[@]}" --out "$out/ranks" \
      >"$out/rank$r.log" 2>&1 &
  done
  sleep $((train_seconds / 2))
  rank0=$(pgrep -x vit | head -1)
  mapped=$(awk '/image-folder-list/ {on = 1; next} /^[0-9a-f]+-/ {on = 0}
    on && /^(Rss|Pss):/ {printf "%s %s kB ", $1, $2}' "/proc/$rank0/smaps" 2>/dev/null || true)
  wait || true
  echo "LOCAL_WORLD_SIZE=$local: peaks $(($(tail -1 "$out/time0") / 1024)) and" \
    "$(($(tail -1 "$out/time1") / 1024)) MiB; $(grep -o 'the file list takes [^(]*' "$out/rank0.log" |
      head -1 | sed 's/ *$//'); mapped list: ${mapped:-none}"
  rm -rf "$out/ranks"
done
