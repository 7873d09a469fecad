#!/usr/bin/env bash
# vit against timm on one GPU: the same model, data and recipe,
# each contender its own process, interleaved, median of RUNS.
#
# The job: bf16, AdamW (weight decay on weights), warmup + cosine, label
# smoothing 0.1, gradient clipping 1.0, crop (padding 1) and flip as batched
# GPU ops, on Fashion-MNIST (demo, p4d384) or on synthetic 224 px images
# (vits16: seeded random bytes and labels, made in memory, never read from
# disk). WARMUP untimed steps, then STEPS timed ones.
#   vit                  $VIT train, validating every WARMUP steps on 1,024
#                        images (256 for vits16); its images/s is the median
#                        of metrics.jsonl's records after the first (training
#                        time only, as vit measures it); bf16 end to end, the
#                        step replayed as one CUDA graph
#   vit-autocast         vit with train.bf16_activations=false: autocast, with
#                        LayerNorm and the residual stream in fp32, as timm runs
#   vit-before           $VIT_BEFORE, another build of vit (the one before a
#                        change), run exactly as vit: an A/B in the same run
#   vit-ckpt             vit with train.grad_checkpointing=true: every block
#                        recomputed in the backward pass (its peak memory)
#   timm                 scripts/bench/timm_gpu_train.py: timm's VisionTransformer
#                        in eager PyTorch, fused AdamW, dataset and augmentation
#                        on the GPU, no host sync in the step
#   timm-compile         the same under torch.compile(model) (default mode)
#   timm-compile-graphs  torch.compile(model, mode="reduce-overhead"): the
#                        compiled forward and backward replayed as CUDA graphs;
#                        the fastest timm a careful user runs, the anchor
#   timm-autotune        mode="max-autotune" (plus Triton's GEMM search); its
#                        compile takes minutes, so it is not in the default set
#   timm-ckpt            timm eager with model.set_grad_checkpointing(True),
#                        vit-ckpt's peer
# Compilation happens in the WARMUP steps, outside the timed window.
#
# Rows (ROW = MODEL/BATCH):
#   demo/64 demo/512   the demo model: patch 7, dim 128, depth 6, 4 heads, MLP 256
#   p4d384/512         patch 4, dim 384, depth 12, 6 heads, MLP 1536 (28 px, 50 tokens)
#   vits16/256         ViT-S/16 at 224 px: patch 16, dim 384, depth 12, 6 heads,
#                      MLP 1536, 3 channels, 1,000 classes, 197 tokens, mean pooling
#
# It prints, per row and contender, the median images/s, ms per step, peak
# GPU memory (MiB), model FLOP utilisation (3 x forward FLOPs per image x
# images/s over the GPU's dense bf16 peak; every row pools the mean, so each
# side computes every token's rows in every block) and vit's ratio to each.
# Raw results go to $WORK/results.jsonl. A benchmark, never a timed test.
#
# Usage: scripts/bench/gpu.sh [ROW...]   (default: demo/64 demo/512 p4d384/512 vits16/256)
#        scripts/bench/gpu.sh --sets MODEL  (vit's --set overrides of MODEL's shape and data)
# Env:   VIT=build-pip/vit  PYTHON=python3 (a Python with torch and timm)
#        DATA=/usr/share/datasets/fashion-mnist  RUNS=3  WARMUP=30  STEPS=210
#        CONTENDERS="vit vit-autocast timm timm-compile-graphs"  DEVICE=cuda
#        WORK=/tmp/vit-bench-gpu
#        PEAK_TFLOPS (default: 989 for an H100 SXM or H200, 756 for an H100 PCIe)
#        VIT_SET="key=value ..."  extra --set overrides for vit (train.cuda_graph=false, say)
#        VIT_BEFORE=$(dirname $VIT)/before/vit  (scripts/gpu_session.sh unpack puts it there)
set -euo pipefail
cd "$(dirname "$0")/../.."
VIT=${VIT:-build-pip/vit}
VIT_BEFORE=${VIT_BEFORE:-$(dirname "$VIT")/before/vit}
PYTHON=${PYTHON:-python3}
DATA=${DATA:-/usr/share/datasets/fashion-mnist}
RUNS=${RUNS:-3}
WARMUP=${WARMUP:-30}
STEPS=${STEPS:-210}
CONTENDERS=${CONTENDERS:-"vit vit-autocast timm timm-compile-graphs"}
DEVICE=${DEVICE:-cuda}
WORK=${WORK:-/tmp/vit-bench-gpu}
rows=("$@")
[ ${#rows[@]} -gt 0 ] || rows=(demo/64 demo/512 p4d384/512 vits16/256)

die() { echo "bench_gpu: $*" >&2; exit 1; }
# MODEL -> "patch dim depth heads mlp side channels classes source"
model_shape() {
  case "$1" in
    demo) echo "7 128 6 4 256 28 1 10 fashion-mnist" ;;
    p4d384) echo "4 384 12 6 1536 28 1 10 fashion-mnist" ;;
    vits16) echo "16 384 12 6 1536 224 3 1000 synthetic" ;;
    *) die "unknown model '$1' (known: demo, p4d384, vits16)" ;;
  esac
}

# The synthetic rows' training images: 20 batches, an epoch of 20 steps (the
# images are random, so repeating them changes nothing that is timed).
synthetic_images() { echo $((20 * $1)); }

# MODEL -> vit's --set overrides of its shape and data
model_sets() {
  local patch dim depth heads mlp side channels classes source shape
  shape=$(model_shape "$1") || exit 1
  read -r patch dim depth heads mlp side channels classes source <<<"$shape"
  echo "model.patch_size=$patch model.dim=$dim model.depth=$depth model.heads=$heads" \
    "model.mlp_dim=$mlp model.image_size=$side model.channels=$channels model.num_classes=$classes"
  if [[ $source == synthetic ]]; then
    echo "data.dataset=synthetic data.mean=[0.5,0.5,0.5] data.std=[0.2898,0.2898,0.2898]"
  fi
}

# `gpu.sh --sets MODEL` prints vit's overrides for MODEL and stops (for
# scripts/gpu_session.sh's profile, which trains the rows' models).
if [[ ${rows[0]:-} == --sets ]]; then
  model_sets "${rows[1]:?--sets needs a model}"
  exit
fi
[[ -x $VIT ]] || die "missing $VIT: run scripts/build.sh --torch pip first (or set VIT)"
[[ -f $DATA/train-images-idx3-ubyte.gz ]] || die "no Fashion-MNIST in $DATA (set DATA)"
[[ $WARMUP -ge 1 && $STEPS -ge $((2 * WARMUP)) ]] || die "need WARMUP >= 1 and STEPS >= 2 x WARMUP"
for row in "${rows[@]}"; do
  (model_shape "${row%/*}" >/dev/null) || exit 1
  [[ ${row#*/} =~ ^[1-9][0-9]*$ ]] || die "row '$row': expected MODEL/BATCH, e.g. p4d384/512"
done
have_timm=1
"$PYTHON" -c 'import torch, timm' 2>/dev/null || {
  have_timm=0
  echo "bench_gpu: $PYTHON cannot import torch and timm: timing vit alone" >&2
}

peak_tflops() {
  if [[ -n ${PEAK_TFLOPS:-} ]]; then echo "$PEAK_TFLOPS"; return; fi
  local name
  name=$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0 2>/dev/null || true)
  case "$name" in
    *H100*PCIe*) echo 756 ;;
    *H100* | *H200* | *GH200*) echo 989 ;;
    *) echo 0 ;;  # unknown: no MFU column
  esac
}

# CONTENDER ROW RUN -> one JSON line on stdout
run_one() {
  local who=$1 model=${2%/*} batch=${2#*/} run=$3
  local patch dim depth heads mlp side channels classes source
  read -r patch dim depth heads mlp side channels classes source <<<"$(model_shape "$model")"
  case "$who" in
    vit | vit-autocast | vit-before | vit-ckpt)
      local out=$WORK/$who-$model-$batch-$run
      rm -rf "$out"
      # As many steps as timm's (WARMUP + STEPS): Fashion-MNIST's 60,000
      # training images less the 1,024 held out are one epoch of 115 steps at
      # batch 512, so a large batch trains several epochs.
      local images=$(((WARMUP + STEPS) * batch)) train_images=58976 val=1024
      if [[ $source == synthetic ]]; then
        train_images=$(synthetic_images "$batch") val=256
      fi
      local epochs=$(((images + train_images - 1) / train_images))
      # shellcheck disable=SC2207
      local sets=($(model_sets "$model")
                  train.batch_size=$batch train.epochs=$epochs
                  train.validate_every=$WARMUP train.early_stop_patience=0
                  train.warmup_epochs=0.1 data.root=$DATA data.val_size=$val
                  data.limit_train=$((images < train_images ? images : train_images))
                  data.limit_test=$val)
      # shellcheck disable=SC2206
      sets+=(${VIT_SET:-})
      [[ $who == vit-autocast ]] && sets+=(train.bf16_activations=false)
      [[ $who == vit-ckpt ]] && sets+=(train.grad_checkpointing=true)
      local args=()
      for s in "${sets[@]}"; do args+=(--set "$s"); done
      local binary=$VIT
      [[ $who == vit-before ]] && binary=$VIT_BEFORE
      "$binary" train --config configs/fashion-mnist.json "${args[@]}" --device "$DEVICE" \
        --out "$out" -q >"$out.log" 2>&1 || { cat "$out.log" >&2; die "vit train failed"; }
      "$PYTHON" - "$out" "$batch" <<'PY'
import json, statistics, sys
out, batch = sys.argv[1], int(sys.argv[2])
records = [json.loads(l) for l in open(out + "/metrics.jsonl")][1:]  # the first holds the warmup
summary = json.load(open(out + "/summary.json"))
ips = statistics.median(r["images_per_sec"] for r in records)
print(json.dumps({"model": "vit", "images_per_sec": ips, "ms_per_step": 1e3 * batch / ips,
                  "peak_gpu_mib": summary.get("peak_gpu_memory_mib"), "records": len(records)}))
PY
      ;;
    timm | timm-compile | timm-compile-graphs | timm-autotune | timm-ckpt)
      local extra=()
      case "$who" in
        timm-ckpt) extra=(--grad-checkpointing) ;;
        timm-compile) extra=(--compile default) ;;
        timm-compile-graphs) extra=(--compile reduce-overhead) ;;
        timm-autotune) extra=(--compile max-autotune) ;;
      esac
      [[ $source == synthetic ]] && extra+=(--synthetic "$(synthetic_images "$batch")")
      "$PYTHON" scripts/bench/timm_gpu_train.py --data "$DATA" --device "$DEVICE" \
        --batch "$batch" --warmup "$WARMUP" --steps "$STEPS" --patch-size "$patch" --dim "$dim" \
        --depth "$depth" --heads "$heads" --mlp-dim "$mlp" --image-size "$side" \
        --channels "$channels" --num-classes "$classes" "${extra[@]}" 2>"$WORK/$who.err" |
        tail -n 1 || { cat "$WORK/$who.err" >&2; die "$who failed"; }
      ;;
    *) die "unknown contender '$who' (known: vit, vit-autocast, vit-before, vit-ckpt, timm," \
         "timm-compile, timm-compile-graphs, timm-autotune, timm-ckpt)" ;;
  esac
}

mkdir -p "$WORK"
results=$WORK/results.jsonl
: >"$results"
contenders=()
for who in $CONTENDERS; do
  [[ $who != vit-before || -x $VIT_BEFORE ]] || die "vit-before: no $VIT_BEFORE (set VIT_BEFORE)"
  [[ $who == vit* || $have_timm == 1 ]] && contenders+=("$who")
done
echo "bench_gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader -i 0 2>/dev/null || echo "$DEVICE"), $(date -u +%F)" >&2
for row in "${rows[@]}"; do
  for run in $(seq 1 "$RUNS"); do
    for who in "${contenders[@]}"; do  # interleaved: each run visits every contender
      line=$(run_one "$who" "$row" "$run")
      echo "{\"row\": \"$row\", \"contender\": \"$who\", \"run\": $run, \"result\": $line}" >>"$results"
      echo "  $row run $run $who (at $SECONDS s): $line" >&2
    done
  done
done

# Forward multiply-adds per image of each row's model, from vit's own count
# (`vit info`'s flops_per_image counts multiply-adds, as timm's tables do).
macs=()
for row in "${rows[@]}"; do
  args=()
  # shellcheck disable=SC2207
  for s in $(model_sets "${row%/*}"); do args+=(--set "$s"); done
  macs+=("$row=$("$VIT" info --config configs/fashion-mnist.json "${args[@]}" --json |
    "$PYTHON" -c 'import json, sys; print(json.load(sys.stdin)["flops_per_image"])')")
done

"$PYTHON" - "$results" "$(peak_tflops)" "${macs[@]}" <<'PY'
import json, statistics, sys
results = [json.loads(l) for l in open(sys.argv[1])]
peak = float(sys.argv[2]) * 1e12
macs = {row: int(n) for row, n in (arg.split("=") for arg in sys.argv[3:])}
print(f"{'row':<12}{'contender':<21}{'img/s':>10}{'ms/step':>9}{'peak MiB':>10}"
      f"{'MFU':>7}{'vit/this':>10}")
for row in dict.fromkeys(r["row"] for r in results):
    by = {}
    for r in results:
        if r["row"] == row:
            by.setdefault(r["contender"], []).append(r["result"])
    med = {who: statistics.median(x["images_per_sec"] for x in rs) for who, rs in by.items()}
    flops = 3 * 2 * macs[row]  # training: forward + backward (2x); 2 FLOPs per multiply-add
    for who, rs in by.items():
        mem = max((x["peak_gpu_mib"] or 0) for x in rs)
        mfu = f"{100 * med[who] * flops / peak:.1f}%" if peak > 0 else "-"
        ratio = f"{med['vit'] / med[who]:.2f}" if "vit" in med else "-"
        print(f"{row:<12}{who:<21}{med[who]:>10.0f}{1e3 * int(row.split('/')[1]) / med[who]:>9.2f}"
              f"{mem:>10.0f}{mfu:>7}{ratio:>10}")
PY
