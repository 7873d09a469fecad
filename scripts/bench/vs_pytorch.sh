#!/usr/bin/env bash
# vit against PyTorch on the same training job, interleaved, median of N runs.
#
# The job: a ViT of 6 blocks x 192 wide, 3 heads, MLP 768, patch 4,
# on 32-pixel CIFAR-10 records (4,160 train, 500 val), AdamW, label smoothing
# 0.1, grad clip 1.0, reflect crop 4 + flip, one epoch. The records are
# synthetic (the speed does not depend on their content), written once in the
# official binary layout under $WORK.
#
# Contenders, each run as its own process, in turn, RUNS times:
#   vit          ./build/vit train (or $VIT)
#   loop         scripts/bench/pytorch_train.py on the PyTorch of vit's LibTorch
#                line (Debian's python3-torch for a 1.13 build, pip's torch
#                for a 2.x build), with explicit attention: vit's CPU path on
#                both lines
#   loop-debian, loop-pip   the same loop on one line, whatever vit links
#   loop-sdpa    the loop on pip's torch with F.scaled_dot_product_attention
#   timm         timm's ViT, eager, on pip's torch (the pip line's environment),
#                in timm's fastest CPU configuration on the job (measured
#                2026-11-27, docs/benchmarks.md): fused attention TIMM_ATTN,
#                AdamW TIMM_ADAMW
#   timm-compile the same under torch.compile (mode "default"), with 3
#                untimed warm-up steps first: the compile stays outside the
#                timed window
#   timm-autotune    the same with mode "max-autotune" (its compile takes
#                minutes, also untimed)
#                Any timm contender takes suffixes that override one choice:
#                -sdpa or -explicit (timm's fused attention on or off),
#                -adamw-loop, -adamw-foreach or -adamw-fused; e.g.
#                timm-compile-sdpa-adamw-fused
#   gemm-floor   scripts/bench/gemm_floor.py: only the matrix products of
#                vit's step (the last block's for the class token's rows
#                alone, as vit computes them), on the PyTorch of vit's line;
#                the bound they set
#   gemm-floor-cold   the same with every product's operands and output its
#                own, as each layer's are in training: not cache-warm
#   vit@DIR      DIR/vit train, to compare builds (the LibTorch lines, say)
# It prints the median train images/s, whole-process wall seconds and peak RSS
# of each, the first contender's ratio to each, and then each contender's
# exact configuration (library versions, attention, AdamW, compile mode).
#
# Usage: scripts/bench/vs_pytorch.sh [SETTING...]   SETTING = precision/batch,
#        default: bf16/128 fp32/128 fp32/16
# Env:   VIT RUNS=3 THREADS=$(nproc) WORK=/tmp/vit-bench-vs-pytorch
#        CONTENDERS="vit loop timm timm-compile"
#        PROFILE=DIR  instead of timing: one run each of vit and the loop with
#                     their operator profilers on (steps 11-20), the files in
#                     DIR, and a side-by-side table of the top operators
# Set up with scripts/setup.sh --bench (timm in the pip line's environment,
# Debian's python3-torch).
set -euo pipefail
cd "$(dirname "$0")/../.."
VIT=${VIT:-build/vit}
RUNS=${RUNS:-3}
THREADS=${THREADS:-$(nproc)}
WORK=${WORK:-/tmp/vit-bench-vs-pytorch}
venv=${VIT_TORCH2_VENV:-$HOME/.cache/vit/torch-2.15.0}
pip_python=$venv/bin/python
CONTENDERS=${CONTENDERS:-"vit loop timm timm-compile"}
TIMM_ATTN=off TIMM_ADAMW=fused  # timm's fastest on the job: docs/benchmarks.md, 2026-11-27
settings=("$@")
[ ${#settings[@]} -gt 0 ] || settings=(bf16/128 fp32/128 fp32/16)
[[ -x $VIT ]] || { echo "bench_vs_pytorch: missing $VIT: run scripts/build.sh first" >&2; exit 1; }

# `loop` runs on the PyTorch of the LibTorch that vit links.
vit_line=debian
ldd "$VIT" | grep -q 'site-packages/torch' && vit_line=pip

data=$WORK/cifar-10-batches-bin
if [[ ! -f $data/test_batch.bin ]]; then
  mkdir -p "$data"
  python3 - "$data" <<'PY'
import os, sys
rng = __import__("random").Random(0)
for name in [f"data_batch_{i}.bin" for i in range(1, 6)] + ["test_batch.bin"]:
    with open(os.path.join(sys.argv[1], name), "wb") as f:
        f.write(b"".join(bytes([i % 10]) + rng.randbytes(3072) for i in range(1000)))
PY
fi

job_config() {  # precision batch -> a vit config for the job
  cat > "$WORK/job-$1-$2.json" <<JSON
{"name": "bench", "seed": 0,
 "model": {"image_size": 32, "patch_size": 4, "channels": 3, "num_classes": 10,
           "dim": 192, "depth": 6, "heads": 3, "mlp_dim": 768, "pool": "cls", "qkv_bias": true},
 "data": {"dataset": "cifar10", "root": "$data", "val_size": 500, "limit_train": 4160,
          "limit_test": 500, "augment": {"crop_padding": 4, "padding_mode": "reflect", "hflip": true}},
 "train": {"batch_size": $2, "epochs": 1, "lr": 1e-3, "weight_decay": 0.05, "warmup_epochs": 1,
           "label_smoothing": 0.1, "grad_clip": 1.0, "precision": "$1"}}
JSON
  echo "$WORK/job-$1-$2.json"
}

# run_one contender precision batch -> "img/s wall_s peak_mib" on stdout
run_one() {
  local who=$1 precision=$2 batch=$3 log=$WORK/last.log timing=$WORK/time.txt out
  case $who in
    vit | vit@*)
      local binary=$VIT
      [ "$who" = vit ] || binary=${who#vit@}/vit
      out=$WORK/run
      rm -rf "$out"
      /usr/bin/time -f '%e %M' -o "$timing" "$binary" train --config "$(job_config "$precision" "$batch")" \
        --out "$out" --threads "$THREADS" -q ${profile:+--profile "$profile"} >"$log" 2>&1 ||
        { cat "$log" >&2; return 1; }
      ips=$(sed -n 's/.*"images_per_sec":\([0-9.e+]*\).*/\1/p' "$out/metrics.jsonl" | tail -1)
      echo "$binary, LibTorch $("$binary" --version 2>/dev/null | sed -n 's/.*LibTorch \([0-9.]*\).*/\1/p' | head -1)" \
        > "$WORK/config-${who//\//_}.txt" ;;
    *)
      local py=$pip_python model=timm extra=() script=scripts/bench/pytorch_train.py
      [ "$who" = loop ] && who=loop-$vit_line
      [ "$who" = loop-debian ] && { py=/usr/bin/python3; model=manual; }
      [ "$who" = loop-pip ] && model=manual
      [ "$who" = loop-sdpa ] && model=sdpa
      if [[ $who = timm* ]]; then  # timm[-compile|-autotune][-sdpa|-explicit][-adamw-KIND]
        local attn=$TIMM_ATTN adamw=$TIMM_ADAMW
        [[ $who = *-sdpa* ]] && attn=on
        [[ $who = *-explicit* ]] && attn=off
        [[ $who =~ -adamw-(loop|foreach|fused) ]] && adamw=${BASH_REMATCH[1]}
        [ "$adamw" = loop ] && adamw=for-loop
        extra=(--fused-attn "$attn" --optimizer "$adamw")
        [[ $who = timm-compile* ]] && extra+=(--compile default --warmup 3)
        [[ $who = timm-autotune* ]] && extra+=(--compile max-autotune --warmup 3)
      fi
      local job=(--root "$data" --model "$model" "${extra[@]}" ${profile:+--profile "$profile"})
      if [[ $who = gemm-floor* ]]; then  # the products alone, on the PyTorch of vit's line
        [ "$vit_line" = debian ] && py=/usr/bin/python3
        script=scripts/bench/gemm_floor.py job=()
        [ "$who" = gemm-floor-cold ] && job=(--operands distinct)
      fi
      /usr/bin/time -f '%e %M' -o "$timing" "$py" "$script" "${job[@]}" --precision "$precision" \
        --batch "$batch" --threads "$THREADS" >"$log" 2>&1 || { cat "$log" >&2; return 1; }
      ips=$(sed -n 's/.*"images_per_sec": \([0-9.e+]*\).*/\1/p' "$log" | tail -1)
      sed -n 's/.*"config": "\([^"]*\)".*/\1/p' "$log" | tail -1 > "$WORK/config-${1//\//_}.txt" ;;
  esac
  read -r wall kib < "$timing"
  echo "$ips $wall $((kib / 1024))"
}

median() { tr ' ' '\n' | sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }

# Latest run folder: vit train repoints runs/latest; put the user's link back.
latest=$(readlink runs/latest 2>/dev/null || true)
trap 'if [ -n "$latest" ]; then ln -sfn "$latest" runs/latest; else rm -f runs/latest; fi' EXIT

echo "# $(lscpu | sed -n 's/^Model name: *//p'), $THREADS threads, $(date -u +%F)"
echo "# OPENBLAS_CORETYPE: ${OPENBLAS_CORETYPE:-(unset: OpenBLAS picks its kernels)}"
echo "# vit: $VIT ($(ldd "$VIT" | awk '/libtorch_cpu/ {print $3}'))"
echo "# Debian's PyTorch: $(/usr/bin/python3 -c 'import torch; print(torch.__version__)' 2>/dev/null || echo absent)"
echo "# pip's PyTorch: $("$pip_python" -c 'import torch, timm; print(torch.__version__, "timm", timm.__version__)' 2>/dev/null || echo absent)"
if [ -n "${PROFILE:-}" ]; then
  mkdir -p "$PROFILE"
  for setting in "${settings[@]}"; do
    precision=${setting%/*} batch=${setting#*/}
    for who in vit loop; do
      profile=$PROFILE/$who-$precision-$batch.json
      run_one "$who" "$precision" "$batch" >/dev/null
    done
    echo; echo "## $setting: self time per training step (steps 11-20)"
    python3 scripts/bench/profile_table.py "$PROFILE/vit-$precision-$batch.json" \
      "$PROFILE/loop-$precision-$batch.json"
  done
  exit 0
fi
profile=""
first=${CONTENDERS%% *}
printf '%-10s %-16s %10s %8s %9s %14s %14s\n' setting contender "img/s" "wall s" "peak MiB" \
  "first/it img/s" "it/first wall"
for setting in "${settings[@]}"; do
  precision=${setting%/*} batch=${setting#*/}
  declare -A ips=() wall=() mib=()
  for run in $(seq "$RUNS"); do
    for who in $CONTENDERS; do
      read -r i w m < <(run_one "$who" "$precision" "$batch")
      ips[$who]+="$i " wall[$who]+="$w " mib[$who]+="$m "
    done
  done
  first_ips=$(echo ${ips[$first]} | median) first_wall=$(echo ${wall[$first]} | median)
  for who in $CONTENDERS; do
    i=$(echo ${ips[$who]} | median) w=$(echo ${wall[$who]} | median) m=$(echo ${mib[$who]} | median)
    printf '%-10s %-16s %10.0f %8.1f %9.0f %14.2f %14.2f   (img/s: %s)\n' "$setting" "$who" "$i" "$w" \
      "$m" "$(awk -v a="$first_ips" -v b="$i" 'BEGIN {print a / b}')" \
      "$(awk -v a="$w" -v b="$first_wall" 'BEGIN {print a / b}')" "${ips[$who]% }"
  done
  unset ips wall mib
done
echo
for who in $CONTENDERS; do  # each contender's exact configuration, as its last run reported it
  printf '# %-16s %s\n' "$who:" "$(cat "$WORK/config-${who//\//_}.txt" 2>/dev/null || echo '(not reported)')"
done
