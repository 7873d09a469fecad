#!/usr/bin/env bash
# vit info --batch's estimate beside the peak `vit train` measures, on the
# CPU in fp32: ViT-Ti/16 (dim 192, 3 heads, MLP 768) and ViT-S/16
# (configs/imagenet-vit-s16.json) at 224 px, on synthetic images held in
# memory, for STEPS optimizer steps; the peak is the highest
# peak_memory_mib in metrics.jsonl (one record a step, as scripts/bench/fit.sh
# takes it). Prints one row a shape: the estimate, the measured peak and
# their ratio.
#   scripts/bench/memory_estimate.sh
#   Env: STEPS=2, SHAPES="ti:64x1:false ti:64x1:true s:64x1:false s:64x1:true"
#        (model:batch x micro-batches a step:train.grad_checkpointing)
set -euo pipefail
cd "$(dirname "$0")/../.."
steps=${STEPS:-2}
shapes=${SHAPES:-ti:64x1:false ti:64x1:true s:64x1:false s:64x1:true}
vit=./build/vit
[ -x "$vit" ] || scripts/build.sh >/dev/null
source scripts/bench/common.sh
bench_scratch

model_sets() {  # ti | s
  case "$1" in
    ti) echo "--set model.dim=192 --set model.heads=3 --set model.mlp_dim=768" ;;
    s) echo "" ;;
    *) echo "memory_estimate.sh: unknown model '$1' (ti or s)" >&2; exit 2 ;;
  esac
}

printf '%-6s %-8s %-13s %14s %14s %7s\n' model batch checkpointing "estimate MiB" "measured MiB" ratio
for shape in $shapes; do
  IFS=: read -r model steps_shape ckpt <<<"$shape"
  batch=${steps_shape%x*} accum=${steps_shape#*x}
  # shellcheck disable=SC2207
  sets=($(model_sets "$model") --set train.precision=fp32 --set train.accum_steps="$accum"
        --set train.grad_checkpointing="$ckpt")
  estimate=$("$vit" info --config configs/imagenet-vit-s16.json --device cpu "${sets[@]}" \
    --batch "$batch" --json | python3 -c 'import json, sys; print("%.0f" % json.load(sys.stdin)["memory_estimate"]["total_mib"])')
  run="$out/$model-$batch-$accum-$ckpt"
  "$vit" train --config configs/imagenet-vit-s16.json --device cpu --out "$run" "${sets[@]}" \
    --set data.dataset=synthetic --set data.limit_train=$((batch * steps)) --set data.val_size=8 \
    --set data.limit_test=8 --set data.augment.random_resized_crop=null \
    --set data.augment.crop_padding=0 --set data.augment.randaugment_ops=0 \
    --set data.augment.mixup_alpha=0 --set data.augment.cutmix_alpha=0 \
    --set data.augment.random_erasing=0 --set train.epochs=1 --set train.batch_size="$batch" \
    --set train.eval_batch_size=8 --set train.validate_every=1 2>"$run.log" ||
    { cat "$run.log" >&2; exit 1; }
  measured=$(python3 -c 'import json, sys; print("%.0f" % max(json.loads(l)["peak_memory_mib"] for l in open(sys.argv[1])))' "$run/metrics.jsonl")
  label=$batch
  [ "$accum" -gt 1 ] && label="$((batch / accum))x$accum"
  printf '%-6s %-8s %-13s %14s %14s %7.2f\n' "$model" "$label" "$ckpt" "$estimate" "$measured" \
    "$(python3 -c "print($estimate / $measured)")"
done
