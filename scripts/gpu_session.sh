#!/usr/bin/env bash
# vit's GPU checks and benchmarks for a GPU machine, built elsewhere: build
# vit and vit_tests on a machine without a GPU against the LibTorch of pip's
# torch wheel, pack them with what the GPU machine lacks into a bundle
# folder, copy the source tree and the bundle there, and run the stages on
# it. Each stage prints its exit status as it ends; a run ends with a table
# of its stages and writes every log and result into $OUT/logs.tar.xz.
#
# Usage: scripts/gpu_session.sh STAGE...     (no stage, -h or --help: this text)
#
# On the build machine (Debian 12 with the packages of scripts/setup.sh and
# access to Debian's archive and PyPI; about 9 minutes on 2 cores):
#   scripts/gpu_session.sh prepare build-here
#   `prepare` fills $BUNDLE from Debian's archive: a pruned OpenCV source and
#   static zlib, libpng and libjpeg (kit() below), Gloo's headers,
#   GoogleTest's sources, Fashion-MNIST's four .gz files (30 MB) in
#   $BUNDLE/data and 300 photographs (15 MB) in $BUNDLE/photos.
#   `build-here` builds vit and vit_tests against pip's torch==$DEVICE_TORCH
#   (CUDA 13, only its LibTorch files, fetched from PyPI) and packs them into
#   $BUNDLE/bin, with the two shared libraries a GPU machine may lack (spdlog,
#   fmt) in $BUNDLE/lib. A build over 3 hours old that it replaces moves to
#   $BUNDLE/before: copy that too, and CONTENDERS="vit vit-before ..." times
#   the two builds side by side.
# Copy the source tree with $BUNDLE/bin, lib, data and photos (and before) to
# the GPU machine; there, in the copy's root:
#   scripts/gpu_session.sh unpack diagnose test test profile bench config
#   `unpack` puts $BUNDLE/bin's binaries in $BUILD and points the loader at
#   the LibTorch and CUDA libraries of the machine's pip torch.
# Where nothing can be built on another machine, build on the GPU machine
# (about 6 minutes; a compiler, CMake and Ninja there), with the whole of
# $BUNDLE from prepare:
#   scripts/gpu_session.sh build pack diagnose ...
#   and, to keep those binaries, copy $OUT's bin.tar.xz.* parts back and run
#   on the build machine:  scripts/gpu_session.sh unpack DIR
# The GPU machine needs an NVIDIA driver, xz, and a python3 with pip's
# torch==$DEVICE_TORCH and its nvidia-* libraries; `bench` also timm.
#
# Stages:
#   prepare    build machine: the kit in $BUNDLE (above)
#   build-here build machine: vit and vit_tests for the GPU machine, into
#              $BUNDLE/bin and $BUNDLE/lib
#   build      GPU machine: OpenCV + vit + vit_tests into $BUILD
#   pack       $BUILD's vit and vit_tests, xz-compressed, in parts of 15 MiB,
#              to $OUT
#   unpack DIR build machine: DIR's bin.tar.xz.* parts (from pack) to
#              $BUNDLE/bin
#   unpack     GPU machine: $BUNDLE/bin's parts back into $BUILD (and
#              $BUNDLE/before's vit into $BUILD/before)
#   diagnose   the CUDA-graph crash, most decisive first: one graph test alone,
#              its exit status and whether it passed before dying; where it
#              failed, cuda-gdb's backtrace of every thread, the test again
#              without the autograd engine's shutdown wait and with vit's malloc
#              settings, and compute-sanitizer; then `vit train` on the tests'
#              shapes with and without the graph, with their exit statuses
#   test       every Cuda and Device test, each in a process of its own (as
#              ctest runs them), JOBS at a time, with its exit status
#   profile    the step's GPU kernels, grouped (scripts/bench/gpu_kernels.py), for
#              each of PROFILE's rows
#   stream     ViT-S/16 on 300 streamed photographs ($BUNDLE/photos, from
#              prepare): vit data --bench and vit train, images/s, to compare
#              with the bench's vits16 row on synthetic data
#   config     configs/fashion-mnist-gpu.json (with CONFIG_SET's overrides), timed
#              (at most CONFIG_LIMIT s), its curve and summary
#   bench      scripts/bench/gpu.sh (ROWS, RUNS, CONTENDERS), then vit's rows
#              again without the graph (EAGER_RUNS); each of the two, every row
#              and contender, stops after BENCH_LIMIT s
#   memory     activation checkpointing: scripts/bench/gpu.sh on MEMORY_ROWS
#              (vits16/256) with vit, vit-ckpt, timm and timm-ckpt, MEMORY_RUNS
#              (1) times: peak memory and step time with and without it
#
# Settings (environment), with their defaults:
#   BUNDLE=build-gpu-bundle  the bundle folder, relative to the source tree
#   BUILD=build-device       where build builds and unpack unpacks; the same
#                            path under the source tree on both machines
#   OUT=/tmp/vit-gpu-out     pack's parts and logs.tar.xz
#   LOGS=/tmp/vit-gpu-logs   every stage's logs and results
#   DEVICE_TORCH=2.11.0      the pip torch version of the GPU machine
#   VIT_CACHE=~/.cache/vit   build-here's downloads (the wheel, OpenCV's build)
#   DEADLINE                 seconds: a stage that would start later is skipped
#   JOBS=4                   test: tests at a time
#   ROWS, RUNS=3, CONTENDERS bench: scripts/bench/gpu.sh's rows, runs, contenders
#   EAGER_RUNS=RUNS          bench: runs of vit's rows without the graph
#   BENCH_LIMIT=420          bench: seconds for each of its two parts
#   PROFILE=p4d384/512       profile: rows (MODEL/BATCH of gpu.sh), space-separated
#   STREAM_SECONDS=90, STREAM_STEPS=60, STREAM_BATCHES=60   stream's training
#                            time, steps between its records, and bench batches
#   CONFIG_LIMIT=240, CONFIG_SET="key=value ..."   config's time and overrides
set -uo pipefail
cd "$(dirname "$0")/.." || exit
usage() { awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "$0"; }
case "${1:-}" in
  "") usage; exit 2 ;;
  -h | --help) usage; exit 0 ;;
esac
OUT=${OUT:-/tmp/vit-gpu-out}
# The build's folder is the same path under the source tree on both machines:
# the tests find vit by the path it was built at (unpack links that path).
BUILD=${BUILD:-$PWD/build-device}
LOGS=${LOGS:-/tmp/vit-gpu-logs}
BUNDLE=${BUNDLE:-build-gpu-bundle}
[[ $BUNDLE == /* ]] || BUNDLE=$PWD/$BUNDLE
export BUILD
mkdir -p "$OUT" "$LOGS"
# An earlier run's unpack found the GPU machine's libraries.
# shellcheck disable=SC1091
[ -f "$BUILD/loader-path.sh" ] && . "$BUILD/loader-path.sh"
DEVICE_TORCH=${DEVICE_TORCH:-2.11.0}  # the GPU machine's pip torch (CUDA 13.0)
results=()  # "stage|status|seconds"
last_status=0
test_round=0

# What a GPU machine may lack, from Debian's archive (about 5 MB): a pruned
# OpenCV 4.6 source (core, imgproc, imgcodecs) in $BUNDLE/ocv.tar.xz, and the
# static zlib, libpng and libjpeg-turbo with their headers in $BUNDLE/deps
# (the libraries that a static OpenCV and vit link).
kit() {
  local work source
  work=$(mktemp -d)
  if [ ! -s "$BUNDLE/ocv.tar.xz" ]; then
    (cd "$work" && apt-get source --download-only opencv >/dev/null 2>&1) ||
      { echo "kit: apt-get source opencv failed (a deb-src line in /etc/apt/sources.list.d?)"; return 1; }
    mkdir -p "$work/x" "$work/ocv/modules"
    tar -xJf "$work"/opencv_*+dfsg.orig.tar.xz -C "$work/x" || return
    source=$(echo "$work"/x/opencv-*)
    cp -a "$source"/{CMakeLists.txt,cmake,include,platforms,LICENSE} "$work/ocv/"
    for module in core imgproc imgcodecs; do
      cp -a "$source/modules/$module" "$work/ocv/modules/"
      rm -rf "$work/ocv/modules/$module"/{test,perf,doc,misc}
    done
    for empty in doc data apps samples; do  # folders OpenCV's CMakeLists.txt expects
      mkdir -p "$work/ocv/$empty" && touch "$work/ocv/$empty/CMakeLists.txt"
    done
    (cd "$work" && tar -cJf "$BUNDLE/ocv.tar.xz" ocv) || return
  fi
  if [ ! -f "$BUNDLE/deps/usr/lib/x86_64-linux-gnu/libjpeg.a" ]; then
    (cd "$work" && apt-get download libpng-dev libjpeg62-turbo-dev zlib1g-dev >/dev/null 2>&1) ||
      { echo "kit: apt-get download of the static libraries failed"; return 1; }
    for deb in "$work"/*.deb; do dpkg-deb -x "$deb" "$BUNDLE/deps"; done
    find "$BUNDLE/deps" -name '*.so*' -delete
  fi
  rm -rf "$work"
}

prepare() {
  mkdir -p "$BUNDLE"
  kit || return
  rm -rf "${BUNDLE:?}/gloo-include" "$BUNDLE/googletest"
  mkdir -p "$BUNDLE/gloo-include" "$BUNDLE/data"
  cp -r /usr/include/gloo "$BUNDLE/gloo-include/" &&
    cp -r /usr/src/googletest "$BUNDLE/googletest" &&
    cp /usr/share/datasets/fashion-mnist/*.gz "$BUNDLE/data/" || return
  # 300 real photographs of 280-520 px (15 MB) for the stream stage: crops of
  # Debian's opencv-doc sample photographs (scripts/bench/make_photos.py).
  local docs=${VIT_CACHE:-$HOME/.cache/vit}/opencv-doc
  if [ ! -f "$docs/usr/share/doc/opencv-doc/examples/data/baboon.jpg" ]; then
    mkdir -p "$docs" && (cd "$docs" && apt-get download opencv-doc >/dev/null 2>&1) &&
      dpkg -x "$docs"/opencv-doc_*.deb "$docs" || { echo "prepare: no opencv-doc"; return 1; }
  fi
  rm -rf "${BUNDLE:?}/photos"
  /usr/bin/python3 scripts/bench/make_photos.py "$docs/usr/share/doc/opencv-doc/examples/data" \
    "$BUNDLE/photos" --train 300 --val 50 || return
  du -sh "$BUNDLE"
}

# A static OpenCV (core, imgproc, imgcodecs) from the kit's pruned source:
# the GPU machine needs no OpenCV of its own.
static_opencv() {  # PREFIX
  local kit=$BUNDLE/deps/usr src build w
  local libs=$kit/lib/x86_64-linux-gnu flags=()
  src=$(mktemp -d) build=$(mktemp -d)
  tar -xJf "$BUNDLE/ocv.tar.xz" -C "$src" || return
  for w in TIFF WEBP OPENJPEG JASPER OPENEXR SPNG IMGCODEC_HDR IMGCODEC_SUNRASTER IMGCODEC_PXM \
    IMGCODEC_PFM IPP ITT OPENCL CUDA EIGEN LAPACK PROTOBUF GTK QT GDAL GDCM ADE FFMPEG GSTREAMER \
    V4L 1394 VA VA_INTEL TBB OPENMP QUIRC CAROTENE; do
    flags+=("-DWITH_$w=OFF")
  done
  cmake -S "$src/ocv" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$1" \
    -DCMAKE_POLICY_VERSION_MINIMUM=3.5 \
    -DBUILD_SHARED_LIBS=OFF -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DBUILD_LIST=core,imgproc,imgcodecs \
    -DBUILD_TESTS=OFF -DBUILD_PERF_TESTS=OFF -DBUILD_EXAMPLES=OFF -DBUILD_opencv_apps=OFF \
    -DBUILD_JAVA=OFF -DBUILD_opencv_python3=OFF -DBUILD_ZLIB=OFF -DBUILD_PNG=OFF -DBUILD_JPEG=OFF \
    -DWITH_PNG=ON -DWITH_JPEG=ON -DWITH_PTHREADS_PF=ON "${flags[@]}" -DOPENCV_GENERATE_PKGCONFIG=OFF \
    -DZLIB_INCLUDE_DIR="$kit/include" -DZLIB_LIBRARY="$libs/libz.a" \
    -DPNG_PNG_INCLUDE_DIR="$kit/include/libpng16" -DPNG_LIBRARY="$libs/libpng16.a" \
    -DJPEG_INCLUDE_DIR="$kit/include;$kit/include/x86_64-linux-gnu" -DJPEG_LIBRARY="$libs/libjpeg.a" \
    >"$build.log" 2>&1 && cmake --build "$build" >>"$build.log" 2>&1 &&
    cmake --install "$build" >>"$build.log" 2>&1 || { tail -30 "$build.log"; return 1; }
  rm -rf "$src" "$build" "$build.log"
}

# On the build machine: vit and vit_tests for the GPU machine, built against
# the LibTorch of the pip wheel it has (only the wheel's torch/ folder: the
# CUDA libraries it loads are the GPU machine's own, hence
# --allow-shlib-undefined: the wheel's libraries need cuDNN, cuSPARSELt and
# NVSHMEM, which the build machine need not have), a static OpenCV, and no
# downloads (a GPU machine may lack libcurl, libarchive and libcrypto). Needs
# no GPU.
build_here() {
  local cache=${VIT_CACHE:-$HOME/.cache/vit} dir=$BUILD wheels
  local torch=$cache/torch-$DEVICE_TORCH-wheel ocv=$cache/opencv-static kit=$BUNDLE/deps/usr
  [ -f "$BUNDLE/ocv.tar.xz" ] || { echo "build-here: no kit in $BUNDLE (run prepare first)"; return 1; }
  if [ ! -f "$torch/torch/share/cmake/Torch/TorchConfig.cmake" ]; then
    wheels=$(mktemp -d)
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
      --platform manylinux_2_28_x86_64 -d "$wheels" "torch==$DEVICE_TORCH" &&
      mkdir -p "$torch" &&
      unzip -q -o "$wheels"/torch-*.whl 'torch/lib/*' 'torch/include/*' 'torch/share/*' -d "$torch" ||
      return
    rm -rf "$wheels"
  fi
  ls "$ocv"/lib*/libopencv_core.a >/dev/null 2>&1 || static_opencv "$ocv" || return
  # A build over 3 hours old stays as $BUNDLE/before, for the bench's
  # vit-before contender: an A/B of the changes since, in one run. Rebuilds
  # within 3 hours keep the same before.
  if [ -n "$(find "$BUNDLE/bin" -name 'bin.tar.xz.00' -mmin +180 2>/dev/null)" ]; then
    rm -rf "${BUNDLE:?}/before" && mv "$BUNDLE/bin" "$BUNDLE/before"
  fi
  mkdir -p "$dir" "$BUNDLE/bin"
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$torch/torch" \
    -DOpenCV_DIR="$(dirname "$(find "$ocv" -name OpenCVConfig.cmake | head -1)")" \
    -DZLIB_INCLUDE_DIR="$kit/include" -DZLIB_LIBRARY="$kit/lib/x86_64-linux-gnu/libz.a" \
    -DJPEG_INCLUDE_DIR="$kit/include;$kit/include/x86_64-linux-gnu" \
    -DJPEG_LIBRARY="$kit/lib/x86_64-linux-gnu/libjpeg.a" \
    -DCMAKE_DISABLE_FIND_PACKAGE_CURL=TRUE -DCMAKE_DISABLE_FIND_PACKAGE_LibArchive=TRUE \
    -DCMAKE_DISABLE_FIND_PACKAGE_OpenSSL=TRUE -DCMAKE_EXE_LINKER_FLAGS=-Wl,--allow-shlib-undefined \
    >"$dir/build-here.log" 2>&1 || { tail -30 "$dir/build-here.log"; return 1; }
  cmake --build "$dir" -j "$(nproc)" --target vit vit_tests >>"$dir/build-here.log" 2>&1 ||
    { grep -m10 -A6 "error" "$dir/build-here.log"; return 1; }
  BUILD=$dir OUT=$BUNDLE/bin pack || return
  # The shared libraries of Debian's that a GPU machine may lack.
  rm -rf "${BUNDLE:?}/lib" && mkdir -p "$BUNDLE/lib" &&
    ldd "$dir/vit" "$dir/vit_tests" | awk '/libspdlog|libfmt/ {print $3}' | sort -u |
    xargs -r cp -L -t "$BUNDLE/lib" && ls "$BUNDLE/lib"
}

build() {
  # Gloo's headers for train/distributed (find_path reads CMAKE_INCLUDE_PATH),
  # and GoogleTest when the image has only its headers.
  export CMAKE_INCLUDE_PATH=$BUNDLE/gloo-include
  if ! ls /usr/lib/x86_64-linux-gnu/libgtest.a /usr/local/lib*/libgtest.a >/dev/null 2>&1; then
    cmake -S "$BUNDLE/googletest" -B /tmp/gtest-build -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_INSTALL_PREFIX=/tmp/gtest-install >/tmp/gtest.log 2>&1 &&
      cmake --build /tmp/gtest-build >>/tmp/gtest.log 2>&1 &&
      cmake --install /tmp/gtest-build >>/tmp/gtest.log 2>&1 || { tail -20 /tmp/gtest.log; return 1; }
    export CMAKE_PREFIX_PATH=/tmp/gtest-install${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}
  fi
  local kit=$BUNDLE/deps/usr torch
  ls /tmp/ocv-install/lib*/libopencv_core.a >/dev/null 2>&1 || static_opencv /tmp/ocv-install || return
  torch=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)') || return
  mkdir -p "$BUILD"
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$torch" \
    -DOpenCV_DIR="$(dirname "$(find /tmp/ocv-install -name OpenCVConfig.cmake | head -1)")" \
    -DZLIB_INCLUDE_DIR="$kit/include" -DZLIB_LIBRARY="$kit/lib/x86_64-linux-gnu/libz.a" \
    -DJPEG_INCLUDE_DIR="$kit/include;$kit/include/x86_64-linux-gnu" \
    -DJPEG_LIBRARY="$kit/lib/x86_64-linux-gnu/libjpeg.a" >"$LOGS/build.log" 2>&1 ||
    { tail -30 "$LOGS/build.log"; return 1; }
  cmake --build "$BUILD" -j "$(nproc)" --target vit vit_tests >>"$LOGS/build.log" 2>&1 ||
    { grep -m10 -A6 "error" "$LOGS/build.log"; return 1; }
}

# The two binaries, compressed and cut into parts of 15 MiB (for copies that
# limit a file's size). The tests find the source tree by its path at build
# time, which pack records.
pack() {
  [ -x "$BUILD/vit" ] && [ -x "$BUILD/vit_tests" ] || { echo "pack: no build in $BUILD"; return 1; }
  rm -f "$OUT"/bin.tar.xz.*
  pwd > "$BUILD/source-dir.txt"
  sed -n 's/^set(PACKAGE_VERSION "\(.*\)")$/\1/p' "$(sed -n 's/^Torch_DIR:PATH=//p' \
    "$BUILD/CMakeCache.txt")/TorchConfigVersion.cmake" 2>/dev/null >"$BUILD/torch-version.txt"
  tar -C "$BUILD" -cf - vit vit_tests source-dir.txt torch-version.txt | xz -T0 -6 |
    split -b 15M -d - "$OUT/bin.tar.xz."
  ls -l "$OUT"/bin.tar.xz.*
}

unpack() {
  if [ -n "${1:-}" ]; then  # on the build machine: the folder holding pack's parts
    rm -rf "${BUNDLE:?}/bin" && mkdir -p "$BUNDLE/bin" && cp "$1"/bin.tar.xz.* "$BUNDLE/bin/" &&
      ls -l "$BUNDLE/bin"
    return
  fi
  ls "$BUNDLE"/bin/bin.tar.xz.* >/dev/null 2>&1 || { echo "unpack: no $BUNDLE/bin/ (run build-here or build pack)"; return 1; }
  mkdir -p "$BUILD"
  cat "$BUNDLE"/bin/bin.tar.xz.* | xz -d | tar -C "$BUILD" -xf - || return
  if ls "$BUNDLE"/before/bin.tar.xz.* >/dev/null 2>&1; then  # the bench's vit-before
    mkdir -p "$BUILD/before" && cat "$BUNDLE"/before/bin.tar.xz.* | xz -d | tar -C "$BUILD/before" -xf - vit
  fi
  # The tests look for the configs and scripts where the source tree was.
  local built_in
  built_in=$(cat "$BUILD/source-dir.txt")
  [ "$built_in" = "$PWD" ] || { mkdir -p "$(dirname "$built_in")" && ln -sfn "$PWD" "$built_in"; }
  # Binaries from build-here find the machine's LibTorch, its CUDA libraries
  # and $BUNDLE/lib's through the loader's path.
  local site built_for there
  site=$(python3 -c 'import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))') || return
  # LibTorch's C++ ABI changes between versions: binaries built for another
  # one fail in ways that look like our bugs.
  built_for=$(cat "$BUILD/torch-version.txt" 2>/dev/null)
  there=$(python3 -c 'import torch; print(torch.__version__.split("+")[0])')
  if [ -n "$built_for" ] && [ "$built_for" != "$there" ]; then
    echo "unpack: the binaries were built for LibTorch $built_for, this machine has $there:" \
      "rebuild on the build machine with DEVICE_TORCH=$there scripts/gpu_session.sh build-here"
    return 1
  fi
  LD_LIBRARY_PATH=$BUNDLE/lib:$site/torch/lib:$(find "$site/nvidia" -maxdepth 3 -name lib -type d |
    paste -sd:)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export LD_LIBRARY_PATH
  echo "export LD_LIBRARY_PATH=$LD_LIBRARY_PATH" >"$BUILD/loader-path.sh"  # for commands after this script
  ! ldd "$BUILD/vit" "$BUILD/vit_tests" | grep "not found" || return
  "$BUILD/vit" --version
}

# Runs the command, prints and records its exit status (128 + N: signal N).
step() {  # NAME COMMAND...
  local name=$1 start=$SECONDS status
  shift
  echo "== $name: $*"
  "$@"
  status=$?
  last_status=$status
  echo "== $name: exit status $status ($((SECONDS - start)) s)"
  results+=("$name|$status|$((SECONDS - start))")
  return 0
}

# One gtest test in a process of its own; prints whether it reported a pass
# before the process ended.
one_test() {  # TEST [ENV=VALUE...]
  local test=$1 log status
  shift
  log=$LOGS/test-$(echo "$test" | tr -c 'A-Za-z0-9\n' '_')-$test_round.log
  env "$@" "$BUILD/vit_tests" --gtest_filter="$test" >"$log" 2>&1
  status=$?
  if grep -q "^\[  SKIPPED \] 1 test" "$log"; then
    echo "   $test: skipped ($(grep -m1 -A1 'Skipped$' "$log" | tail -1)), exit status $status"
  elif grep -q "^\[  PASSED  \] 1 test" "$log"; then
    echo "   $test: passed, then exit status $status"
  else
    echo "   $test: did not pass, exit status $status"
    tail -15 "$log"
  fi
  return $status
}

# The tests' model and data shapes in `vit train`: depth 1, fp32, class token.
tiny_train() {  # GRAPH(true|false)
  local run=/tmp/vit-tiny-$1
  rm -rf "$run"
  "$BUILD/vit" train --config configs/fashion-mnist.json --device cuda --out "$run" \
    --set "data.root=$BUNDLE/data" --set data.limit_train=2000 --set data.limit_test=500 \
    --set data.val_size=500 --set model.depth=1 --set model.pool=cls --set train.precision=fp32 \
    --set train.epochs=2 --set train.batch_size=64 --set "train.cuda_graph=$1" >"$LOGS/tiny-$1.log" 2>&1
}

diagnose() {
  local graph_test=CudaTest.TheCudaGraphTrainsLikeTheEagerStep
  step "alone" one_test "$graph_test"
  if [ "$last_status" -ne 0 ]; then  # the crash is there: find where
    if command -v cuda-gdb >/dev/null; then
      # The stack's words, named: a frame gdb cannot unwind (a jump to 0,
      # say) still shows who called it.
      step "cuda-gdb" timeout 240 cuda-gdb -batch -ex "set pagination off" -ex run -ex bt \
        -ex 'x/24a $sp' -ex 'info symbol *(void**)$sp' -ex "thread apply all bt 12" \
        --args "$BUILD/vit_tests" --gtest_filter="$graph_test" >"$LOGS/cuda-gdb.log" 2>&1
      grep -A40 "received signal" "$LOGS/cuda-gdb.log" | head -80
    fi
    step "no-shutdown-wait" one_test "$graph_test" TORCH_AUTOGRAD_SHUTDOWN_WAIT_LIMIT=0
    # vit's own settings (src/allocator.cpp), which the tests' process lacks.
    step "vit-malloc" one_test "$graph_test" MALLOC_MMAP_THRESHOLD_=33554432 \
      MALLOC_TRIM_THRESHOLD_=1073741824
    if command -v compute-sanitizer >/dev/null; then
      step "memcheck" timeout 150 compute-sanitizer --tool memcheck --print-limit 20 \
        "$BUILD/vit_tests" --gtest_filter="$graph_test" >"$LOGS/memcheck.log" 2>&1
      grep -m20 "ERROR SUMMARY\|Invalid\|========= " "$LOGS/memcheck.log"
    fi
  fi
  step "vit-train-graph" tiny_train true
  step "vit-train-eager" tiny_train false
  tail -4 "$LOGS/tiny-true.log" "$LOGS/tiny-false.log"
}

# Every Cuda and Device test, each in a process of its own, JOBS at a time
# (small models: several share the GPU well); their lines print in order.
gpu_tests() {
  local failed=0 i=0 j test round
  test_round=$((test_round + 1))
  round=$LOGS/round-$test_round
  mkdir -p "$round"
  for test in $("$BUILD/vit_tests" --gtest_list_tests --gtest_filter='Cuda*:Device*' |
    awk '/^[^ ]/ {suite=$1} /^  / {print suite $1}'); do
    while [ "$(jobs -rp | wc -l)" -ge "${JOBS:-4}" ]; do wait -n; done
    (one_test "$test" >"$round/$i.txt" 2>&1; echo $? >"$round/$i.status") &
    i=$((i + 1))
  done
  wait
  for ((j = 0; j < i; j++)); do
    cat "$round/$j.txt"
    [ "$(cat "$round/$j.status")" = 0 ] || failed=$((failed + 1))
  done
  echo "tests, round $test_round: $i run, $failed failed"
  return $failed
}

bench() {
  nvidia-smi | tee "$LOGS/nvidia-smi.txt"
  # shellcheck disable=SC2086
  DATA=$BUNDLE/data VIT=$BUILD/vit RUNS=${RUNS:-3} WORK=/tmp/vit-bench-gpu \
    timeout -s INT "${BENCH_LIMIT:-420}" scripts/bench/gpu.sh ${ROWS:-} 2>&1 | tee "$LOGS/bench.log"
  local status=$?
  cp /tmp/vit-bench-gpu/results.jsonl "$LOGS/bench-results.jsonl"
  # vit's rows with the step launched op by op: what the graph is worth.
  # shellcheck disable=SC2086
  DATA=$BUNDLE/data VIT=$BUILD/vit RUNS=${EAGER_RUNS:-${RUNS:-3}} WORK=/tmp/vit-bench-gpu-eager \
    CONTENDERS=vit VIT_SET="train.cuda_graph=false" \
    timeout -s INT "${BENCH_LIMIT:-420}" scripts/bench/gpu.sh ${ROWS:-} 2>&1 | tee "$LOGS/bench-eager.log"
  cp /tmp/vit-bench-gpu-eager/results.jsonl "$LOGS/bench-eager-results.jsonl"
  return $((status + $?))
}

# Activation checkpointing beside timm's: MEMORY_ROWS (default vits16/256)
# with vit and timm eager, each with and without checkpointing every block;
# the peak memory is the point, and the step times say what it costs.
memory() {
  # shellcheck disable=SC2086
  DATA=$BUNDLE/data VIT=$BUILD/vit RUNS=${MEMORY_RUNS:-1} WORK=/tmp/vit-bench-memory \
    CONTENDERS="vit vit-ckpt timm timm-ckpt" \
    timeout -s INT "${BENCH_LIMIT:-420}" scripts/bench/gpu.sh ${MEMORY_ROWS:-vits16/256} 2>&1 |
    tee "$LOGS/memory.log"
  local status=$?
  cp /tmp/vit-bench-memory/results.jsonl "$LOGS/memory-results.jsonl"
  return $status
}

# Where each PROFILE row's step goes (MODEL/BATCH of scripts/bench/gpu.sh;
# default p4d384/512): its kernels, grouped (eager: a profiled step runs
# without the graph).
profile() {
  local row model batch sets args status=0
  for row in ${PROFILE:-p4d384/512}; do
    model=${row%/*} batch=${row#*/} args=()
    sets=$(scripts/bench/gpu.sh --sets "$model") || return
    for s in $sets; do args+=(--set "$s"); done
    "$BUILD/vit" train --config configs/fashion-mnist.json --device cuda --out "/tmp/vit-gpu-profile-$model" \
      --set "data.root=$BUNDLE/data" "${args[@]}" --set "train.batch_size=$batch" \
      --set "data.limit_train=$((30 * batch))" --set data.val_size=256 --set data.limit_test=256 \
      --set train.epochs=1 --profile "$LOGS/$model.json" --profile-steps 5 >"$LOGS/profile-$model.log" 2>&1 ||
      { tail -5 "$LOGS/profile-$model.log"; status=1; continue; }
    echo "$row:"
    python3 scripts/bench/gpu_kernels.py "$LOGS/$model.json" --top 12
  done
  return $status
}

# The streamed pipeline feeding the GPU: $BUNDLE/photos (300 photographs) at
# 224 px with ViT-S/16's augmentation, on every core. First `vit data --bench`
# alone (images/s from the files to the batch on the GPU), then `vit train` of
# ViT-S/16 on them for STREAM_STEPS steps: its images/s against the bench's
# vits16 row on synthetic data in memory says whether the step waits for
# its input.
stream() {
  local sets=(--set "data.root=$BUNDLE/photos" --set model.num_classes=10
              --set data.val_size=10 --set train.batch_size=256)
  "$BUILD/vit" data --config configs/imagenet-vit-s16.json "${sets[@]}" --device cuda \
    --bench "${STREAM_BATCHES:-60}" -q 2>&1 | tee "$LOGS/stream-bench.log"
  rm -rf /tmp/vit-gpu-stream
  "$BUILD/vit" train --config configs/imagenet-vit-s16.json "${sets[@]}" --set model.pool=mean \
    --set train.epochs=200 --set "train.validate_every=${STREAM_STEPS:-60}" \
    --set train.early_stop_patience=0 --device cuda --out /tmp/vit-gpu-stream \
    >"$LOGS/stream-train.log" 2>&1 &
  local pid=$!
  sleep "${STREAM_SECONDS:-90}"
  kill -INT "$pid" 2>/dev/null
  wait "$pid"
  cp /tmp/vit-gpu-stream/metrics.jsonl "$LOGS/stream-metrics.jsonl" 2>/dev/null
  grep -E "img/s|peak" "$LOGS/stream-train.log" | tail -4
}

# The GPU recipe, stopped (as Ctrl-C stops it: a checkpoint and the summary)
# after CONFIG_LIMIT seconds; CONFIG_SET="key=value ..." overrides its settings.
config() {
  local run=/tmp/vit-gpu-config sets=() s
  # shellcheck disable=SC2086
  for s in ${CONFIG_SET:-}; do sets+=(--set "$s"); done
  rm -rf "$run"
  timeout -s INT -k 30 "${CONFIG_LIMIT:-240}" "$BUILD/vit" train --config configs/fashion-mnist-gpu.json \
    --set "data.root=$BUNDLE/data" "${sets[@]}" --device cuda --out "$run" 2>&1 | tee "$LOGS/config.log"
  local status=$?
  cp "$run/metrics.csv" "$run/metrics.jsonl" "$run/summary.json" "$LOGS/" 2>/dev/null
  return $status
}

while [ $# -gt 0 ]; do
  stage=$1
  shift
  # DEADLINE (seconds since the start): later stages are skipped, so a run
  # with a time limit still ends with its logs and table.
  if [ -n "${DEADLINE:-}" ] && [ "$SECONDS" -ge "$DEADLINE" ]; then
    echo "== $stage: skipped, past DEADLINE=$DEADLINE s"
    results+=("$stage|skipped|0")
    continue
  fi
  case "$stage" in
    prepare) step prepare prepare ;;
    build-here) step build-here build_here ;;
    build) step build build ;;
    pack) step pack pack ;;
    unpack)
      if [ $# -gt 0 ] && [ -d "$1" ]; then
        step unpack unpack "$1"
        shift
      else
        step unpack unpack
      fi
      ;;
    diagnose) diagnose ;;
    test) step test gpu_tests ;;
    bench) step bench bench ;;
    memory) step memory memory ;;
    config) step config config ;;
    stream) step stream stream ;;
    profile) step profile profile ;;
    *) echo "gpu_session: unknown stage '$stage' (known: prepare build-here build pack unpack diagnose test bench memory config profile stream)" >&2
       exit 2 ;;
  esac
done

tar -C "$(dirname "$LOGS")" -cJf "$OUT/logs.tar.xz" "$(basename "$LOGS")" 2>/dev/null
echo
printf '%-18s %12s %9s\n' stage "exit status" seconds
for r in "${results[@]}"; do
  IFS='|' read -r name status seconds <<<"$r"
  printf '%-18s %12s %9s\n' "$name" "$status" "$seconds"
done
