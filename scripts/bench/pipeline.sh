#!/usr/bin/env bash
# Benchmarks of the data pipeline, printing the numbers that go into
# docs/benchmarks.md:
#   1. the in-memory batch pipeline (index, augment, normalise) on CIFAR-sized
#      images: `vit data --bench N` on a synthetic CIFAR-10 binary set;
#   2. Tiny-ImageNet load time, cold (decode + write the cache) and cached, on
#      a synthetic tree of the real size (200 classes x 500 train JPEGs of
#      64 x 64, 10,000 val JPEGs), generated once under $WORK.
# Usage: scripts/bench/pipeline.sh [--pipeline-only | --tiny-only]
# Env:   VIT=build/vit  WORK=/tmp/vit-bench  BATCHES=400  THREADS="1 2"
set -euo pipefail
cd "$(dirname "$0")/../.."
VIT=${VIT:-build/vit}
WORK=${WORK:-/tmp/vit-bench}
BATCHES=${BATCHES:-400}
THREADS=${THREADS:-"1 2"}
MODE=${1:-all}
[[ -x $VIT ]] || { echo "missing $VIT: run scripts/build.sh first" >&2; exit 1; }
mkdir -p "$WORK"

if [[ $MODE != --tiny-only ]]; then
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

if [[ $MODE != --pipeline-only ]]; then
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
