#!/usr/bin/env bash
# Installs everything the test suite needs on a fresh machine: Debian's Chromium for the browser tests
# (never a browser download) and the pinned Python packages.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v chromium >/dev/null 2>&1; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
python -m pip install --quiet -r requirements-dev.txt -e .
