#!/usr/bin/env bash
# Installs everything the test suite needs on a fresh machine (Python packages; system packages once needed).
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install --quiet -r requirements-dev.txt -e .
