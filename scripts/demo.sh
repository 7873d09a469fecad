#!/usr/bin/env bash
# The main job: set up, build, train a ViT on the real Fashion-MNIST that
# Debian installs, then draw its attention rollout maps and attention distances.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
# Where train.precision "auto" picks fp32 (a CPU without bf16 instructions,
# such as an AVX2-only AMD EPYC), an epoch takes about 43 s on 2 cores, so the
# demo trains 20 epochs there instead of 45: about 14 minutes, 90.2% test
# (docs/benchmarks.md, "The demo"). Another train.epochs in "$@" wins.
epochs=()
if ./build/vit info --config configs/fashion-mnist.json --json | grep -Eq '"precision": *"fp32"'; then
  epochs=(--set train.epochs=20)
fi
./build/vit train --config configs/fashion-mnist.json "${epochs[@]}" "$@"
./build/vit rollout --out runs/latest/rollout --samples 16
./build/vit attn-distance --out runs/latest/attn-distance --samples 128
echo "demo: run folder $(readlink -f runs/latest)"
