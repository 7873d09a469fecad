#!/usr/bin/env bash
# Benchmarks of the data pipeline, printing the numbers that go into
# docs/benchmarks.md:
#   1. the in-memory batch pipeline (index, augment, normalise) on CIFAR-sized
#      images: `vit data --bench N` on a synthetic CIFAR-10 binary set;
#   2. Tiny-ImageNet load time, cold (decode + write the cache) and cached, on
#      a synthetic tree of the real size (200 classes x 500 train JPEGs of
#      64 x 64, 10,000 val JPEGs), generated once under $WORK;
#   3. the streamed pipeline at 224 px against torchvision (--streamed-only):
#      600 real photographs of ImageNet's size (500 x 333-400, at their own
#      scale: scripts/bench/make_photos.py, from Debian's opencv-doc), as a
#      folder and as WebDataset shards, through RandomResizedCrop(224), flip
#      and normalisation, on one core (taskset): `vit data --bench` with
#      data.workers=1 and --threads 1, against torchvision as a careful user
#      runs it there (scripts/bench/torchvision_loader.py: num_workers 0,
#      uint8 batches normalised per batch): Debian's torchvision 0.14 with
#      PIL; the same with pillow-simd (PyPI) where it builds; torchvision.io's
#      decode_jpeg with transforms v2 (pip's torch line, torchvision >= 0.15);
#      and pip's webdataset for the shards. Interleaved, median of RUNS; the
#      ratio is against the fastest torchvision. Then the peak resident
#      memory of `vit train` (ViT-Ti/16 at 224, batch 64, streamed, stopped
#      after MEMORY_SECONDS) on 1,000 and on 16,000 photographs
#      (--memory-only runs that part alone).
# Usage: scripts/bench/pipeline.sh [--pipeline-only | --tiny-only | --streamed-only | --memory-only]
# Env:   VIT=build/vit  WORK=/tmp/vit-bench  BATCHES=400  THREADS="1 2"
#        STREAM_BATCHES=40  RUNS=3  MEMORY_SECONDS=60
#        TORCH2_PYTHON=~/.cache/vit/torch-*/bin/python (pip's torch line, for v2)
set -euo pipefail
cd "$(dirname "$0")/../.."
VIT=${VIT:-build/vit}
WORK=${WORK:-/tmp/vit-bench}
BATCHES=${BATCHES:-400}
THREADS=${THREADS:-"1 2"}
MODE=${1:-all}
[[ -x $VIT ]] || { echo "missing $VIT: run scripts/build.sh first" >&2; exit 1; }
mkdir -p "$WORK"

if [[ $MODE == --pipeline-only || $MODE == all ]]; then
  cifar=$WORK/cifar-10-batches-bin
  if [[ ! -f $cifar/test_batch.bin ]]; then
    echo "writing a synthetic CIFAR-10 binary set to $cifar"
    /usr/bin/python3 - "$cifar" <<'PY'
import os, sys
root = sys.argv[1]
os.makedirs(root, exist_ok=True)
for name, n in [(f"data_batch_{i}.bin", 10000) for i in range(1, 6)] + [("test_batch.bin", 10000)]:
    with open(os.path.join(root, name), "wb") as f:
        f.write(b"".join(bytes([i % 10]) + os.urandom(3072) for i in range(n)))
PY
  fi
  echo "== batch pipeline: CIFAR-sized 3x32x32, batch 128, $BATCHES batches =="
  for threads in $THREADS; do
    for variant in "reflect crop 4 + flip" "zeros crop 4 + flip" "+ RandAugment 2x9" "+ mixup/cutmix"; do
      sets=(--set data.root="$cifar" --set train.batch_size=128 --set data.augment.crop_padding=4
            --set data.augment.hflip=true)
      case $variant in
        reflect*) sets+=(--set data.augment.padding_mode=reflect) ;;
        zeros*) sets+=(--set data.augment.padding_mode=zeros) ;;
        *RandAugment*) sets+=(--set data.augment.randaugment_ops=2) ;;
        *mixup*) sets+=(--set data.augment.mixup_alpha=0.8 --set data.augment.cutmix_alpha=1.0) ;;
      esac
      printf '%-24s ' "$variant"
      "$VIT" data --config configs/cifar10.json "${sets[@]}" --device cpu --threads "$threads" \
        --bench "$BATCHES" -q
    done
  done
fi

if [[ $MODE == --tiny-only || $MODE == all ]]; then
  tiny=$WORK/tiny-imagenet-200
  if [[ ! -f $tiny/val/val_annotations.txt ]]; then
    echo "writing a synthetic Tiny-ImageNet-200 tree to $tiny (110,000 JPEGs; takes a minute)"
    cat > "$WORK/make_tiny.cpp" <<'CPP'
// Synthetic Tiny-ImageNet-200: smooth colour fields plus noise, so the JPEGs
// have about the real files' size; every 50th image is gray, as in the real set.
#include <filesystem>
#include <fstream>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
namespace fs = std::filesystem;
static cv::Mat picture(cv::RNG& rng, bool gray) {
  cv::Mat small(8, 8, CV_8UC3), big, noise(64, 64, CV_8UC3);
  rng.fill(small, cv::RNG::UNIFORM, 0, 256);
  cv::resize(small, big, {64, 64}, 0, 0, cv::INTER_CUBIC);
  rng.fill(noise, cv::RNG::NORMAL, 0, 12);
  big += noise;
  if (gray) cv::cvtColor(big, big, cv::COLOR_BGR2GRAY);
  return big;
}
int main(int, char** argv) {
  const fs::path root = argv[1];
  cv::RNG rng(42);
  std::ofstream wnids(root / "wnids.txt"), words(root / "words.txt");
  int count = 0;
  for (int k = 0; k < 200; ++k) {
    char wnid[16];
    std::snprintf(wnid, sizeof wnid, "n%08d", 1000000 + k);
    wnids << wnid << "\n";
    words << wnid << "\tclass " << k << ", synthetic\n";
    const fs::path dir = root / "train" / wnid / "images";
    fs::create_directories(dir);
    std::ofstream boxes(root / "train" / wnid / (std::string(wnid) + "_boxes.txt"));
    for (int i = 0; i < 500; ++i, ++count) {
      const std::string name = std::string(wnid) + "_" + std::to_string(i) + ".JPEG";
      cv::imwrite((dir / name).string(), picture(rng, count % 50 == 0));
      boxes << name << "\t0\t0\t63\t63\n";
    }
  }
  fs::create_directories(root / "val" / "images");
  std::ofstream annotations(root / "val" / "val_annotations.txt");
  for (int i = 0; i < 10000; ++i, ++count) {
    const std::string name = "val_" + std::to_string(i) + ".JPEG";
    cv::imwrite((root / "val" / "images" / name).string(), picture(rng, count % 50 == 0));
    char wnid[16];
    std::snprintf(wnid, sizeof wnid, "n%08d", 1000000 + i % 200);
    annotations << name << "\t" << wnid << "\t0\t0\t63\t63\n";
  }
}
CPP
    g++ -O2 -std=c++17 "$WORK/make_tiny.cpp" -o "$WORK/make_tiny" \
      $(pkg-config --cflags --libs opencv4 | tr ' ' '\n' | grep -E '^-I|core$|imgproc$|imgcodecs$' | tr '\n' ' ')
    mkdir -p "$tiny"
    "$WORK/make_tiny" "$tiny"
  fi
  echo "== Tiny-ImageNet load: $(du -sh "$tiny" | cut -f1) in $(find "$tiny" -name '*.JPEG' | wc -l) JPEGs =="
  rm -f "$tiny"/.vit-cache-*.bin
  for run in cold cached; do
    start=$(date +%s.%N)
    "$VIT" data --config configs/tiny-imagenet.json --set data.root="$tiny" --device cpu -q >/dev/null
    end=$(date +%s.%N)
    printf '%-7s %6.1f s  (vit data, whole command)\n' "$run" "$(echo "$end - $start" | bc)"
  done
  ls -l "$tiny"/.vit-cache-*.bin
fi

# Real photographs: OpenCV's sample photos (Debian's opencv-doc), cut and
# resized by make_photos.py into PHOTOS_N training images.
photos() {  # DIR TRAIN_IMAGES
  [[ -d $1/train ]] && return
  local source=$WORK/opencv-doc/usr/share/doc/opencv-doc/examples/data
  if [[ ! -f $source/baboon.jpg ]]; then
    (cd "$WORK" && apt-get download opencv-doc >/dev/null 2>&1) ||
      { echo "pipeline.sh: cannot download Debian's opencv-doc (its photographs)" >&2; exit 1; }
    dpkg -x "$WORK"/opencv-doc_*.deb "$WORK/opencv-doc"
  fi
  echo "writing $2 photographs to $1"
  /usr/bin/python3 scripts/bench/make_photos.py "$source" "$1" --train "$2" --val 100
}

stream_sets() {  # ROOT: vit's --set overrides for the benchmark's transforms
  echo "--set data.root=$1 --set model.num_classes=10 --set data.val_size=10"
  echo "--set data.augment.randaugment_ops=0 --set data.augment.mixup_alpha=0"
  echo "--set data.augment.cutmix_alpha=0 --set data.augment.random_erasing=0"
  echo "--set train.batch_size=64 --set data.workers=1"
}

if [[ $MODE == --streamed-only || $MODE == all ]]; then
  folder=$WORK/imagenet-size-photos-600 shards=$WORK/imagenet-size-shards
  photos "$folder" 600
  if [[ ! -f $shards/classes.txt ]]; then
    "$VIT" data --config configs/imagenet-vit-s16.json $(stream_sets "$folder") \
      --write-shards "$shards" --shard-size 100 -q >/dev/null
  fi
  train_shards="train-{000000..$(printf '%06d' $(($(ls "$shards"/train-*.tar | wc -l) - 1)))}.tar"
  val_shards="val-{000000..$(printf '%06d' $(($(ls "$shards"/val-*.tar | wc -l) - 1)))}.tar"
  cores=0
  python=/usr/bin/python3
  tv() {  # PYTHON NAME ARGS...: one torchvision contender's images/s into the results
    local py=$1 name=$2
    shift 2
    local line
    line=$(taskset -c "$cores" "$py" scripts/bench/torchvision_loader.py "$@" \
      --batches "${STREAM_BATCHES:-40}") || { echo "pipeline.sh: $name failed" >&2; return; }
    echo "$name	$(echo "$line" | "$python" -c 'import json,sys; print(round(json.load(sys.stdin)["images_per_sec"]))')	-" >>"$results"
    echo "$name: $line" >>"$WORK/streamed-versions.txt"
  }
  venv_with() {  # DIR PACKAGE: a venv over Debian's Python packages with PACKAGE from PyPI
    [[ -x $1/bin/python ]] && "$1/bin/python" -c "import ${3:-$2}" 2>/dev/null && return 0
    rm -rf "$1"
    /usr/bin/python3 -m venv --system-site-packages "$1" >/dev/null 2>&1 &&
      "$1/bin/pip" install -q "$2" >/dev/null 2>&1 && return 0
    rm -rf "$1"
    return 1
  }
  have_wds=0 have_simd=0
  venv_with "$WORK/webdataset-venv" webdataset && have_wds=1 ||
    echo "pipeline.sh: no webdataset package (pip): torchvision's shard row is skipped"
  venv_with "$WORK/pillow-simd-venv" pillow-simd PIL && have_simd=1 ||
    echo "pipeline.sh: pillow-simd did not build here: its row is skipped"
  torch2=${TORCH2_PYTHON:-$(ls -d "$HOME"/.cache/vit/torch-*/bin/python 2>/dev/null | tail -1)}
  [[ -x $torch2 ]] && "$torch2" -c 'from torchvision.transforms import v2' 2>/dev/null ||
    { torch2=; echo "pipeline.sh: no torchvision >= 0.15 (scripts/setup.sh --torch pip --bench): the v2 row is skipped"; }
  echo "== streamed, RandomResizedCrop(224) + flip + normalise, batch 64, one core ($cores) =="
  echo "   $(lscpu | sed -n 's/^Model name: *//p')"
  results=$WORK/streamed.tsv
  : >"$results" && : >"$WORK/streamed-versions.txt"
  for run in $(seq 1 "${RUNS:-3}"); do
    line=$(taskset -c "$cores" "$VIT" data --config configs/imagenet-vit-s16.json $(stream_sets "$folder") \
      --device cpu --threads 1 --bench "${STREAM_BATCHES:-40}" -q)
    echo "vit-folder	$(echo "$line" | sed -n 's/^pipeline: \([0-9]*\) images.*peak resident memory \([0-9]*\) MiB/\1	\2/p')" >>"$results"
    line=$(taskset -c "$cores" "$VIT" data --config configs/imagenet-vit-s16.json $(stream_sets "$shards") \
      --set data.dataset=webdataset --set data.train_shards="$train_shards" \
      --set data.val_shards="$val_shards" --device cpu --threads 1 \
      --bench "${STREAM_BATCHES:-40}" -q)
    echo "vit-shards	$(echo "$line" | sed -n 's/^pipeline: \([0-9]*\) images.*peak resident memory \([0-9]*\) MiB/\1	\2/p')" >>"$results"
    tv "$python" torchvision-pil-folder --folder "$folder/train"
    [[ $have_simd == 1 ]] &&
      tv "$WORK/pillow-simd-venv/bin/python" torchvision-simd-folder --folder "$folder/train"
    [[ -n $torch2 ]] && tv "$torch2" torchvision-v2-folder --variant v2 --folder "$folder/train"
    [[ $have_wds == 1 ]] &&
      tv "$WORK/webdataset-venv/bin/python" torchvision-pil-shards --shards "$shards/$train_shards"
  done
  "$python" - "$results" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    who, ips, rss = line.rstrip("\n").split("\t")
    rows.setdefault(who, []).append(float(ips))
med = {who: statistics.median(v) for who, v in rows.items()}
print(f"{'contender':<26}{'img/s':>8}  runs")
for who, v in rows.items():
    print(f"{who:<26}{med[who]:>8.0f}  {' '.join(f'{x:.0f}' for x in v)}")
for source in ("folder", "shards"):
    theirs = {who: m for who, m in med.items() if who.startswith("torchvision") and who.endswith(source)}
    if f"vit-{source}" in med and theirs:
        best = max(theirs, key=theirs.get)
        print(f"vit / the fastest torchvision ({best}), {source}: {med[f'vit-{source}'] / theirs[best]:.2f}")
PY
  cat "$WORK/streamed-versions.txt" | sort -u -t: -k1,1
fi

if [[ $MODE == --memory-only || $MODE == all ]]; then
  echo "== vit train, ViT-Ti/16 at 224, batch 64, streamed: peak resident memory =="
  for n in 1000 16000; do
    folder=$WORK/imagenet-size-photos-$n
    photos "$folder" "$n"
    out=$WORK/memory-run-$n
    rm -rf "$out"
    timeout -s INT "${MEMORY_SECONDS:-60}" "$VIT" train --config configs/imagenet-vit-s16.json \
      $(stream_sets "$folder") --set model.dim=192 --set model.heads=3 --set model.mlp_dim=768 \
      --set train.epochs=1 --set data.workers=0 --device cpu --out "$out" >"$out.log" 2>&1 || true
    printf '%6d photographs: %s\n' "$n" "$(grep -o 'peak memory [0-9]* MiB' "$out.log" || echo 'no peak memory line')"
  done
fi
