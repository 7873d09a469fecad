#!/usr/bin/env bash
# What does not fit, measured: ViT-S/16 at 224 px in fp32 on the CPU, the
# optimizer step's time and the steps' peak resident memory, with and
# without gradient checkpointing, at batch 64 and at batch 256 as 4 x 64;
# vit and timm (scripts/bench/timm_fit.py, its own set_grad_checkpointing)
# interleaved, RUNS runs each, medians. vit's figures come from
# metrics.jsonl, one record a step (train.validate_every 1, on 8 images):
# the median step after the first (images_per_sec -> seconds a step), and
# the highest peak_memory_mib, on synthetic images held in memory, so no
# decoding runs beside the steps. timm's step time leaves out the first
# step too.
# Run it on a quiet machine.
#   scripts/bench/fit.sh
#   Env: RUNS=3 STEPS=4 PYTHON=python3 (one with torch and timm)
#        SHAPES="64x1 256x4" (batch x micro-batches a step)
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${RUNS:-3} steps=${STEPS:-4} python=${PYTHON:-python3} shapes=${SHAPES:-64x1 256x4}
vit=./build/vit
[ -x "$vit" ] || scripts/build.sh >/dev/null
source scripts/bench/common.sh
bench_scratch

vit_run() {  # BATCH ACCUM CHECKPOINTING DIR -> "step_s peak_mib"
  local images=$(($1 * steps))
  "$vit" train --config configs/imagenet-vit-s16.json --out "$4" \
    --set data.dataset=synthetic --set data.limit_train="$images" --set data.val_size=8 \
    --set data.limit_test=8 --set data.augment.random_resized_crop=null \
    --set data.augment.crop_padding=0 --set data.augment.randaugment_ops=0 \
    --set data.augment.mixup_alpha=0 --set data.augment.cutmix_alpha=0 \
    --set data.augment.random_erasing=0 --set train.precision=fp32 --set train.epochs=1 \
    --set train.batch_size="$1" --set train.accum_steps="$2" \
    --set train.grad_checkpointing="$3" --set train.eval_batch_size=8 \
    --set train.validate_every=1 2>"$4.log" || { cat "$4.log" >&2; exit 1; }
  "$python" - "$4/metrics.jsonl" "$1" <<'PY'
import json, statistics, sys
records = [json.loads(line) for line in open(sys.argv[1])]
batch = int(sys.argv[2])
step_s = statistics.median(batch / r["images_per_sec"] for r in records[1:])
print(f"{step_s:.3f} {max(r['peak_memory_mib'] for r in records):.0f}")
PY
}
timm_run() {  # BATCH ACCUM CHECKPOINTING -> "step_s peak_mib"
  local flag=""
  [ "$3" = true ] && flag=--checkpointing
  "$python" scripts/bench/timm_fit.py --batch "$1" --accum "$2" --steps "$steps" $flag |
    "$python" -c 'import json, sys; r = json.load(sys.stdin); print("%.3f %.0f" % (r["step_s"], r["peak_mib"]))'
}

printf '%-8s %-13s %-5s %10s %10s\n' batch checkpointing who "s/step" "peak MiB"
for shape in $shapes; do
  set -- ${shape/x/ }
  for ckpt in false true; do
    : >"$out/vit" && : >"$out/timm"
    for i in $(seq "$runs"); do
      vit_run "$1" "$2" "$ckpt" "$out/run$i" >>"$out/vit"
      timm_run "$1" "$2" "$ckpt" >>"$out/timm"
    done
    label=$1
    [ "$2" -gt 1 ] && label="$(($1 / $2))x$2"
    for who in vit timm; do
      printf '%-8s %-13s %-5s %10s %10s\n' "$label" "$ckpt" "$who" \
        "$(cut -d' ' -f1 <"$out/$who" | median)" "$(cut -d' ' -f2 <"$out/$who" | median)"
    done
  done
done
