#!/usr/bin/env bash
# Opening a large timm model, and predicting with a base one, beside timm.
#  1. timm writes each model's hub folder with random weights
#     (timm.models._hub.save_for_hf, safetensors), as the hub serves it;
#  2. `vit info --checkpoint DIR --json` of the large one: wall time and peak
#     RSS (/usr/bin/time), RUNS runs, the median, against the file's size;
#  3. `vit predict` of the base one on 32 photographs at fp32, against timm's
#     forward of the same 32 images (eager, torch.inference_mode, the same
#     threads), RUNS runs each, interleaved, the medians. vit's figure is the
#     whole command (opening, decoding, classifying); timm's the forward alone.
# Needs pip's torch and timm (scripts/setup.sh --python-check), Debian's
# opencv-doc and python3-pil (the photographs), and a built vit.
#   scripts/bench/open_model.sh [VIT]
#   Env: RUNS=3 THREADS=$(nproc) LARGE=vit_large_patch14_dinov2 BASE=vit_base_patch16_224
set -euo pipefail
cd "$(dirname "$0")/../.."
vit=$(realpath "${1:-build/vit}")
source scripts/torch_line.sh
python=$VIT_TORCH2_VENV/bin/python
[ -x "$python" ] || { echo "open_model.sh: no pip torch in $VIT_TORCH2_VENV; run scripts/setup.sh --python-check" >&2; exit 1; }
runs=${RUNS:-3} threads=${THREADS:-$(nproc)}
large=${LARGE:-vit_large_patch14_dinov2} base=${BASE:-vit_base_patch16_224}
source scripts/bench/common.sh
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

"$python" - "$out" "$large" "$base" <<'EOF'
import sys, timm, torch
from timm.models._hub import save_for_hf
out, names = sys.argv[1], sys.argv[2:]
for name in names:
    model = timm.create_model(name, pretrained=False).eval()
    save_for_hf(model, f"{out}/{name}", safe_serialization=True)
EOF
/usr/bin/python3 scripts/bench/make_photos.py /usr/share/doc/opencv-doc/examples/data \
  "$out/photos" --train 32 --val 0 --classes 1 >/dev/null

file_mb=$(( $(stat -c %s "$out/$large/model.safetensors") / 1000000 ))
: >"$out/open_s" && : >"$out/open_kb"
for i in $(seq "$runs"); do
  /usr/bin/time -f "%e %M" -o "$out/time" "$vit" info --checkpoint "$out/$large" --json -q \
    --threads "$threads" >/dev/null
  read -r seconds kb <"$out/time"
  echo "$seconds" >>"$out/open_s" && echo "$kb" >>"$out/open_kb"
done
open_s=$(median <"$out/open_s") open_mb=$(( $(median <"$out/open_kb") / 1000 ))
echo "open $large ($file_mb MB file): $(tr '\n' ' ' <"$out/open_s")s -> median $open_s s," \
  "peak RSS $open_mb MB ($(awk -v a="$open_mb" -v b="$file_mb" 'BEGIN {printf "%.2f", a / b}')x the file)"

photos=("$out"/photos/train/*/*)
: >"$out/vit" && : >"$out/timm"
for i in $(seq "$runs"); do
  start=$(date +%s.%N)
  "$vit" predict --checkpoint "$out/$base" --images "${photos[@]}" --precision fp32 \
    --threads "$threads" --json -q >/dev/null
  echo "$(date +%s.%N) - $start" | bc >>"$out/vit"
  "$python" - "$out/$base" "$threads" <<'EOF' >>"$out/timm"
import sys, time, timm, torch
folder, threads = sys.argv[1], int(sys.argv[2])
torch.set_num_threads(threads)
model = timm.create_model(f"local-dir:{folder}", pretrained=True).eval()
x = torch.randn(32, 3, 224, 224)
with torch.inference_mode():
    model(x[:2])  # warm-up
    start = time.perf_counter()
    model(x)
    print(time.perf_counter() - start)
EOF
done
vit_s=$(median <"$out/vit") timm_s=$(median <"$out/timm")
echo "predict $base, 32 images, fp32, $threads threads: vit $(tr '\n' ' ' <"$out/vit")s -> median" \
  "$vit_s s (the whole command); timm $(tr '\n' ' ' <"$out/timm")s -> median $timm_s s (the forward)"
