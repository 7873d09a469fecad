#!/usr/bin/env bash
# Sets everything up from a bare Debian 12, builds, and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --python-check
scripts/build.sh
cd build
ctest --output-on-failure --timeout 900 -j "$(nproc)"
