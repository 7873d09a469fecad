#!/usr/bin/env bash
# Times the analyses on a finished run, for docs/benchmarks.md:
# each analysis on 128 validation images (rollout, attention distance, the three
# saliency methods), the image-free ones (filters, pos-embed, one image's
# attention), the layer-by-layer ones (lens, probe, ablate, cka, faithfulness),
# integrated gradients, SmoothGrad, patching and the sparse autoencoder (on the
# last-but-one layer, then its features) with their defaults, and `vit report`
# of the whole run. Wall time of the whole
# command, LibTorch start-up and the checkpoint load included.
# Usage: scripts/bench/analyses.sh RUN_DIR
# Env:   VIT=build/vit  THREADS=2  SAMPLES=128  OUT=/tmp/vit-bench-analyses
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -eq 1 ] || { echo "usage: scripts/bench/analyses.sh RUN_DIR" >&2; exit 2; }
run=$1
VIT=${VIT:-build/vit}
THREADS=${THREADS:-2}
SAMPLES=${SAMPLES:-128}
OUT=${OUT:-/tmp/vit-bench-analyses}
[[ -x $VIT ]] || { echo "missing $VIT: run scripts/build.sh first" >&2; exit 1; }
[[ -f $run/best.pt || -f $run/best.safetensors ]] || { echo "$run/best.pt: missing; pass a finished run folder" >&2; exit 1; }
rm -rf "$OUT"
ckpt=$run/best.pt; [[ -f $ckpt ]] || ckpt=$run/best.safetensors
common=(--checkpoint "$ckpt" --device cpu --threads "$THREADS" --quiet)

timed() {  # LABEL ARGS...
  local label=$1 start end
  shift
  start=$(date +%s.%N)
  "$VIT" "$@" >/dev/null
  end=$(date +%s.%N)
  printf '%-44s %6.2f s\n' "$label" "$(echo "$end - $start" | bc)"
}

echo "vit analyses on $run ($SAMPLES images where images are used, $THREADS threads)"
timed "rollout --samples $SAMPLES" rollout "${common[@]}" --samples "$SAMPLES" --out "$OUT/rollout"
timed "attn-distance --samples $SAMPLES" attn-distance "${common[@]}" --samples "$SAMPLES" --out "$OUT/distance"
for method in grad grad-x-input grad-rollout; do
  timed "saliency --method $method --samples $SAMPLES" saliency "${common[@]}" --samples "$SAMPLES" \
    --method "$method" --out "$OUT/saliency-$method"
done
timed "filters" filters "${common[@]}" --out "$OUT/filters"
timed "pos-embed" pos-embed "${common[@]}" --out "$OUT/pos-embed"
timed "attention (one image)" attention "${common[@]}" --out "$OUT/attention"
# The layer-by-layer analyses, with their own default sample counts.
for command in lens probe ablate cka faithfulness; do
  timed "$command (default samples)" "$command" "${common[@]}" --out "$OUT/$command"
done
for method in integrated-gradients smoothgrad; do
  timed "saliency --method $method (defaults)" saliency "${common[@]}" --method "$method" \
    --out "$OUT/saliency-$method"
done
timed "patch (defaults: 16 pairs, activation)" patch "${common[@]}" --out "$OUT/patch"
layer=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["model"]["depth"] - 1)' \
  "$run/config.json")
timed "sae train --layer $layer (defaults)" sae train "${common[@]}" --layer "$layer" --out "$OUT/sae"
timed "sae features (defaults)" sae features "${common[@]}" --sae "$OUT/sae/sae.safetensors"
timed "report (whole run)" report --run "$run" --device cpu --threads "$THREADS" --quiet
