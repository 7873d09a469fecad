#!/usr/bin/env bash
# Installs everything vit needs on Debian 12, from a bare machine: compiler,
# CMake, LibTorch with OpenBLAS (OpenMP build), the header libraries, OpenCV,
# GoogleTest and the Fashion-MNIST data. Idempotent and quiet when nothing is
# missing; uses sudo when not root.
#   scripts/setup.sh                 build + runtime dependencies
#   scripts/setup.sh --python-check  also python3-torch, for the cross-check tests
set -euo pipefail

packages=(
  g++ cmake ninja-build make pkg-config git ca-certificates
  libtorch-dev libopenblas0-openmp
  libcli11-dev nlohmann-json3-dev libspdlog-dev libfmt-dev libopencv-dev libgtest-dev zlib1g-dev
  dataset-fashion-mnist
)
optional=()
for arg in "$@"; do
  case "$arg" in
    --python-check) optional+=(python3-torch python3-numpy) ;;
    *) echo "setup.sh: unknown option '$arg' (known: --python-check)" >&2; exit 2 ;;
  esac
done

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "ok installed"; }

missing=()
for p in "${packages[@]}" "${optional[@]}"; do installed "$p" || missing+=("$p"); done

if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ]; then sudo=(); else sudo=(sudo); fi
  echo "setup.sh: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq
  # Required packages must install; the optional cross-check ones may be absent.
  required_missing=()
  for p in "${missing[@]}"; do
    [[ " ${optional[*]} " == *" $p "* ]] || required_missing+=("$p")
  done
  if [ ${#required_missing[@]} -gt 0 ]; then
    "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${required_missing[@]}" >/dev/null
  fi
  for p in "${optional[@]}"; do
    installed "$p" || "${sudo[@]}" apt-get install -y -qq --no-install-recommends "$p" >/dev/null ||
      echo "setup.sh: optional package $p is not available; the Python cross-checks will be skipped"
  done
fi

# LibTorch links whatever libblas.so.3 is selected; the reference BLAS is ~20x
# slower than OpenBLAS, so make sure the OpenMP OpenBLAS is the one in use.
blas=$(update-alternatives --query libblas.so.3-x86_64-linux-gnu 2>/dev/null | awk '/^Value:/ {print $2}')
if [ -n "$blas" ] && [[ "$blas" != *openblas-openmp* ]]; then
  if [ "$(id -u)" -eq 0 ]; then sudo=(); else sudo=(sudo); fi
  "${sudo[@]}" update-alternatives --quiet --set libblas.so.3-x86_64-linux-gnu \
    /usr/lib/x86_64-linux-gnu/openblas-openmp/libblas.so.3
  "${sudo[@]}" update-alternatives --quiet --set liblapack.so.3-x86_64-linux-gnu \
    /usr/lib/x86_64-linux-gnu/openblas-openmp/liblapack.so.3 || true
fi
