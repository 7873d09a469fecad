# Sourced by setup.sh, build.sh and test.sh: the two LibTorch lines vit builds on.
#   debian  Debian's libtorch-dev 1.13.1 (CPU), with the OpenMP OpenBLAS
#   pip     pip's torch wheel (LibTorch 2.x with CUDA), in a virtual environment
# The default line builds into build/, the other into build-<line>/.
VIT_DEFAULT_TORCH=debian
VIT_PIP_TORCH_VERSION=2.15.0
# Outside the checkout, so a second clone or CI run on the same machine finds it.
VIT_TORCH2_VENV=${VIT_TORCH2_VENV:-$HOME/.cache/vit/torch-$VIT_PIP_TORCH_VERSION}

torch_line_check() {  # LINE -> exits with a one-line error unless it is a known line
  case "$1" in
    debian | pip) ;;
    *) echo "$(basename "$0"): unknown LibTorch line '$1' (known: debian, pip)" >&2; exit 2 ;;
  esac
}

torch_line_other() { [ "$1" = debian ] && echo pip || echo debian; }

torch_line_build_dir() { [ "$1" = "$VIT_DEFAULT_TORCH" ] && echo build || echo "build-$1"; }

# The CUDA toolkit's nvcc, which the pip LibTorch's CMake config needs; empty
# if there is none that runs. The toolkit's own folder comes first: an nvcc on
# PATH may be a wrapper script, from which CMake cannot find the toolkit.
torch_line_nvcc() {
  local candidate
  for candidate in /usr/local/cuda/bin/nvcc "$(command -v nvcc 2>/dev/null)"; do
    if [ -n "$candidate" ] && "$candidate" --version >/dev/null 2>&1; then
      echo "$candidate"
      return
    fi
  done
}
