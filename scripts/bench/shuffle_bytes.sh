#!/usr/bin/env bash
# The shards' shuffle buffer bounded in bytes: one epoch streamed from 1.25 GiB
# of WebDataset shards whose every image member is 8 MiB, with the default
# data.shuffle_buffer (2,000 samples, which alone would hold all 160), at
# data.shuffle_buffer_mb 4096 (above the data: the count binds), 1024 (the
# default) and 256. GNU time gives each run's peak resident memory.
#  The samples: 16 train shards of 10, each image a 64 x 64 JPEG followed by
#  padding up to 8 MiB after its end marker (decoders stop there), so the
#  bytes are large and the decoding cheap; the model is tiny.
# Usage: scripts/bench/shuffle_bytes.sh   Env: WORK=/tmp/vit-shuffle-bytes (kept)
set -euo pipefail
cd "$(dirname "$0")/../.."
work=${WORK:-/tmp/vit-shuffle-bytes}
vit=./build/vit
[ -x "$vit" ] || scripts/build.sh >/dev/null
[ -x /usr/bin/time ] || { echo "needs GNU time (Debian: apt-get install time)" >&2; exit 1; }
source scripts/bench/common.sh
bench_scratch

if [ ! -f "$work/train-000015.tar" ]; then
  mkdir -p "$work"
  /usr/bin/python3 - "$work" <<'PY'
import io, random, sys, tarfile
from pathlib import Path
from PIL import Image
work = Path(sys.argv[1])
rng = random.Random(0)

def jpeg(size):
    image = Image.frombytes("RGB", (64, 64), bytes(rng.randrange(256) for _ in range(64 * 64 * 3)))
    out = io.BytesIO()
    image.save(out, "JPEG", quality=90)
    data = out.getvalue()
    return data + b"\0" * (size - len(data))

def shard(path, count, member_bytes, first):
    with tarfile.open(path, "w") as tar:
        for i in range(first, first + count):
            for name, data in ((f"{i:06d}.jpg", jpeg(member_bytes)), (f"{i:06d}.cls", str(i % 2).encode())):
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))

for s in range(16):
    shard(work / f"train-{s:06d}.tar", 10, 8 << 20, 10 * s)
shard(work / "val-000000.tar", 4, 4096, 1000)
print(f"{work}: 160 samples of 8 MiB in 16 shards")
PY
fi

echo "== one epoch from 1.25 GiB of shards, 8 MiB members, shuffle_buffer 2000 =="
for cap in 4096 1024 256; do
  /usr/bin/time -f "%M %e" -o "$out/time" "$vit" train --config configs/cifar10.json \
    --device cpu --threads 2 \
    --set data.dataset=webdataset --set data.root="$work" \
    --set "data.train_shards=train-{000000..000015}.tar" --set "data.val_shards=val-000000.tar" \
    --set model.num_classes=2 --set model.image_size=32 \
    --set model.patch_size=8 --set model.dim=32 --set model.depth=1 --set model.heads=2 \
    --set model.mlp_dim=64 --set train.batch_size=16 --set train.epochs=1 \
    --set train.precision=fp32 --set data.shuffle_buffer_mb=$cap --out "$out/run" \
    >"$out/train.log" 2>&1
  read -r kb seconds <"$out/time"
  echo "shuffle_buffer_mb $cap: peak $((kb / 1024)) MiB, $seconds s"
  rm -rf "$out/run"
done
