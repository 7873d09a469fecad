#!/usr/bin/env bash
# The main job: set up, build, train a ViT on the real Fashion-MNIST that
# Debian installs, then draw its attention rollout maps and attention distances.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
./build/vit train --config configs/fashion-mnist.json "$@"
./build/vit rollout --out runs/latest/rollout --samples 16
./build/vit attn-distance --out runs/latest/attn-distance --samples 128
echo "demo: run folder $(readlink -f runs/latest)"
