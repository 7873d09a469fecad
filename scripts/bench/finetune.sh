#!/usr/bin/env bash
# Does pre-training help? The depth-6 model of configs/fashion-mnist-long.json
#   1. pre-trained on printed digits (scripts/bench/make_font_digits.py; MNIST
#      itself is not installed on our machines),
#   2. fine-tuned on 1,000 Fashion-MNIST images with --init, against the same
#      model trained from scratch on the same images for the same epochs,
#   3. the same at 56 px: the 4x4 grid of 7 px patches becomes 8x8, and
#      --init resizes the position embedding bicubically.
# Prints test accuracy (the full 10,000-image test set) and training time.
#   scripts/bench/finetune.sh   (env: PRETRAIN_EPOCHS=3 EPOCHS=40 SEEDS="0 1" SIZES="28 56" THREADS=1 OUT=runs/bench-finetune)
set -euo pipefail
cd "$(dirname "$0")/../.."
vit=${VIT:-./build/vit}
out=${OUT:-runs/bench-finetune}
pretrain_epochs=${PRETRAIN_EPOCHS:-3}
epochs=${EPOCHS:-40}
seeds=${SEEDS:-"0 1"}
sizes=${SIZES:-"28 56"}
threads=${THREADS:-1}  # 1: a busy 2-core machine slows --threads 2 by 10x or more (docs/benchmarks.md, "Method")
[ -x "$vit" ] || scripts/build.sh >/dev/null
digits=data/font-digits
[ -f "$digits/train-images-idx3-ubyte.gz" ] || /usr/bin/python3 scripts/bench/make_font_digits.py "$digits"
latest=$(readlink runs/latest 2>/dev/null || true)
restore() { if [ -n "$latest" ]; then ln -sfn "$latest" runs/latest; else rm -f runs/latest; fi; }
trap restore EXIT

train() {  # train RUN_NAME ARGS...
  local dir=$out/$1; shift
  [ -f "$dir/summary.json" ] && return 0  # finished earlier: keep it
  "$vit" train --config configs/fashion-mnist-long.json --out "$dir" --threads "$threads" -q "$@" 2>"$dir.log" || { cat "$dir.log"; exit 1; }
}
field() { sed -n "s/.*\"$2\": \([0-9.e-]*\).*/\1/p" "$out/$1/summary.json"; }

mkdir -p "$out"
train pretrain --set name=font-digits --set data.dataset=mnist --set data.root="$digits" \
  --set 'data.mean=[0.1307]' --set 'data.std=[0.3081]' --set data.augment.hflip=false \
  --set train.epochs="$pretrain_epochs"
printf 'pre-training on printed digits: test acc %.4f, %.0f s\n' "$(field pretrain test_acc)" "$(field pretrain train_seconds)"

few=(--set data.limit_train=1000 --set data.val_size=2000 --set train.epochs="$epochs"
     --set train.early_stop_patience=0)
printf '%-5s %-5s %-12s %9s %8s\n' size seed start test_acc train_s
for size in $sizes; do
  for seed in $seeds; do
    train "scratch-$size-s$seed" "${few[@]}" --set model.image_size="$size" --seed "$seed"
    train "finetune-$size-s$seed" "${few[@]}" --set model.image_size="$size" --seed "$seed" \
      --init "$out/pretrain/best.pt" --set train.init_new_head=true
    for start in scratch finetune; do
      printf '%-5s %-5s %-12s %9.4f %8.0f\n' "$size" "$seed" "$start" \
        "$(field "$start-$size-s$seed" test_acc)" "$(field "$start-$size-s$seed" train_seconds)"
    done
  done
done
