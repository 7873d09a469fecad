#!/usr/bin/env bash
# Installs everything vit needs on Debian 12, from a bare machine: compiler,
# CMake, LibTorch, the header libraries, OpenCV, GoogleTest and the
# Fashion-MNIST data. Idempotent and quiet when nothing is missing; uses sudo
# when not root.
#   scripts/setup.sh                 build + runtime dependencies, default LibTorch line
#   scripts/setup.sh --torch pip     LibTorch 2.x: pip's torch (pinned) in a virtual
#                                    environment under ~/.cache/vit (see torch_line.sh)
#   scripts/setup.sh --torch debian  LibTorch 1.13: Debian's libtorch-dev with OpenBLAS
#   scripts/setup.sh --python-check  also python3-torch, for the cross-check tests, and
#                                    the tensorboard package in a virtual environment
#                                    under ~/.cache/vit, to read vit's events files back
#   scripts/setup.sh --browser-check also chromium, for the report's browser test
#                                    (scripts/report_screenshot.sh); required once asked for
#   scripts/setup.sh --fuzz          also clang and libFuzzer, for scripts/fuzz.sh
#   scripts/setup.sh --bench         also timm in the pip line's environment (benchmarks)
set -euo pipefail
here=$(dirname "$0")
source "$here/torch_line.sh"

line=$VIT_DEFAULT_TORCH
optional=()
bench=false
python_check=false
browser=false
fuzz=false
while [ $# -gt 0 ]; do
  case "$1" in
    --python-check) optional+=(python3-torch python3-numpy python3-torchvision python3-pil); python_check=true ;;
    --torch) [ $# -ge 2 ] || { echo "setup.sh: --torch needs a line (debian or pip)" >&2; exit 2; }
             line=$2; shift ;;
    --bench) bench=true ;;
    --browser-check) browser=true ;;
    --fuzz) fuzz=true ;;
    *) echo "setup.sh: unknown option '$1' (known: --torch debian|pip, --python-check, --browser-check, --fuzz, --bench)" >&2
       exit 2 ;;
  esac
  shift
done
torch_line_check "$line"

packages=(
  g++ cmake ninja-build make pkg-config git ca-certificates
  libcli11-dev nlohmann-json3-dev libspdlog-dev libfmt-dev libopencv-dev libgtest-dev zlib1g-dev
  libjpeg-dev  # libjpeg-turbo, for the streamed pipeline's partial decodes (src/io/jpeg_region.cpp)
  libgloo-dev
  libcurl4-openssl-dev libarchive-dev libssl-dev  # dataset downloads (src/data/)
  dataset-fashion-mnist
  dpkg-dev file  # dpkg-shlibdeps and file: the Debian package's Depends (cpack -G DEB)
)
if [ "$line" = debian ]; then
  packages+=(libtorch-dev libopenblas0-openmp libdnnl-dev)
else
  packages+=(python3 python3-venv)
fi
$python_check && packages+=(python3 python3-venv)
$browser && packages+=(chromium)
$fuzz && packages+=(clang libclang-rt-dev)
$bench && packages+=(python3 python3-venv time python3-torch python3-numpy)

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "ok installed"; }
if [ "$(id -u)" -eq 0 ]; then sudo=(); else sudo=(sudo); fi

missing=()
for p in "${packages[@]}" "${optional[@]}"; do installed "$p" || missing+=("$p"); done

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup.sh: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq
  # Required packages must install; the cross-check ones too on CI (CI=true),
  # whose Python cross-checks fail without them. Elsewhere they may be absent.
  required_missing=()
  for p in "${missing[@]}"; do
    [[ " ${optional[*]} " == *" $p "* ]] || required_missing+=("$p")
  done
  if [ ${#required_missing[@]} -gt 0 ]; then
    "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${required_missing[@]}" >/dev/null
  fi
  for p in "${optional[@]}"; do
    installed "$p" || "${sudo[@]}" apt-get install -y -qq --no-install-recommends "$p" >/dev/null || {
      if [ "${CI:-}" = true ]; then
        echo "setup.sh: CI runs the Python cross-checks, and Debian's $p did not install" >&2
        exit 1
      fi
      echo "setup.sh: optional package $p is not available; the Python cross-checks that need it will be skipped"
    }
  done
fi

# Debian's LibTorch links whatever libblas.so.3 is selected; the reference
# BLAS is far slower than OpenBLAS, so make sure the OpenMP OpenBLAS is the
# one in use.
blas=$(update-alternatives --query libblas.so.3-x86_64-linux-gnu 2>/dev/null | awk '/^Value:/ {print $2}')
if [ -n "$blas" ] && [[ "$blas" != *openblas-openmp* ]] &&
   [ -e /usr/lib/x86_64-linux-gnu/openblas-openmp/libblas.so.3 ]; then
  "${sudo[@]}" update-alternatives --quiet --set libblas.so.3-x86_64-linux-gnu \
    /usr/lib/x86_64-linux-gnu/openblas-openmp/libblas.so.3
  "${sudo[@]}" update-alternatives --quiet --set liblapack.so.3-x86_64-linux-gnu \
    /usr/lib/x86_64-linux-gnu/openblas-openmp/liblapack.so.3 || true
fi

# pip's torch wheel (5.5 GB installed with its CUDA libraries) goes
# into a virtual environment that lives outside the checkout, so every clone
# and every later run on this machine reuses it.
venv_has() {  # PACKAGE VERSION
  "$VIT_TORCH2_VENV/bin/python" -c "import importlib.metadata as m, sys; \
sys.exit(m.version('$1').split('+')[0] != '$2')" 2>/dev/null
}
if [ "$line" = pip ] || $bench; then
  if ! venv_has torch "$VIT_PIP_TORCH_VERSION"; then
    echo "setup.sh: installing torch==$VIT_PIP_TORCH_VERSION from PyPI into $VIT_TORCH2_VENV"
    python3 -m venv "$VIT_TORCH2_VENV"
    "$VIT_TORCH2_VENV/bin/pip" install -q "torch==$VIT_PIP_TORCH_VERSION"
  fi
fi
# A cross-check's packages from PyPI, into a virtual environment of their
# own. On CI (CI=true) they must install. Elsewhere, when PyPI cannot be
# reached, this says so in one line and goes on: the tests that need them
# skip, each naming what is missing.
# VENV_OPTION: "" or --system-site-packages (to use Debian's python3-torch).
pypi_cross_check() {  # WHAT VENV VENV_OPTION PACKAGE...
  local what=$1 venv=$2 option=$3 log
  shift 3
  echo "setup.sh: installing $* from PyPI into $venv ($what)"
  log=$(mktemp)
  if python3 -m venv $option "$venv" >"$log" 2>&1 && "$venv/bin/pip" install -q "$@" >>"$log" 2>&1; then
    rm -f "$log"
    return
  fi
  if [ "${CI:-}" = true ]; then
    cat "$log" >&2
    echo "setup.sh: CI runs $what, and $* did not install from PyPI" >&2
    exit 1
  fi
  echo "setup.sh: skipped $what: $* did not install from PyPI ($(grep -v '^ *$' "$log" | tail -n 1))"
  rm -f "$log"
}
# The TensorBoard cross-check reads vit's events files with the tensorboard
# package's own reader, from an environment of its own (178 MB).
tensorboard_venv=${VIT_TENSORBOARD_VENV:-$HOME/.cache/vit/tensorboard}
if $python_check && ! "$tensorboard_venv/bin/python" -c 'import tensorboard' 2>/dev/null; then
  pypi_cross_check "the TensorBoard cross-check" "$tensorboard_venv" "" "tensorboard==2.21.0"
fi
# The Captum cross-check runs Captum's integrated gradients on Debian's
# python3-torch (so the environment sees the system's packages, and pip
# installs no torch of its own); matplotlib 3.7 keeps numpy at 1.x.
captum_venv=${VIT_CAPTUM_VENV:-$HOME/.cache/vit/captum}
if $python_check && ! "$captum_venv/bin/python" -c 'import captum.attr' 2>/dev/null; then
  pypi_cross_check "the Captum cross-check" "$captum_venv" --system-site-packages \
    "captum==0.7.0" "matplotlib==3.7.*"
fi
# The timm cross-check (timm's register models give vit's logits) runs in pip's
# torch line's environment, whose torch timm needs; torch stays pinned.
if [ "$line" = pip ] && ! "$VIT_TORCH2_VENV/bin/python" -c 'import timm' 2>/dev/null; then
  pypi_cross_check "the timm cross-check" "$VIT_TORCH2_VENV" "" "timm==1.0.31" \
    "torch==$VIT_PIP_TORCH_VERSION"
fi
if $bench && ! "$VIT_TORCH2_VENV/bin/python" -c 'import timm' 2>/dev/null; then
  echo "setup.sh: installing timm into $VIT_TORCH2_VENV"
  "$VIT_TORCH2_VENV/bin/pip" install -q timm "torch==$VIT_PIP_TORCH_VERSION"
fi
