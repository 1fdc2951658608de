#!/usr/bin/env bash
# The README's first command on a fresh clone and a fresh virtual environment, timed, with pip's cache off (as a
# new machine has it), then the Space's fine-tuned local agent playing: issue 33, item D (the goal: the install
# within 10 minutes on 2 cores).
#
#     bash perf/first_install.sh [WORKDIR]        # WORKDIR: where the clone and the venv go (default: a temp dir)
#
# Prints the install's seconds, then one holdout step of every environment's shipped local model (llama.cpp,
# the committed adapter) through the Space's own agent code. Run it on an idle machine: llama.cpp compiles from
# source, which is most of the time.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="${1:-$(mktemp -d)}"
git clone --quiet "$repo" "$work/aaos"
cd "$work/aaos"
python -m venv "$work/venv"
# shellcheck disable=SC1091
source "$work/venv/bin/activate"
started=$(date +%s)
pip install --quiet --no-cache-dir -r requirements.txt -e .
echo "install: $(( $(date +%s) - started )) s (pip install --no-cache-dir -r requirements.txt -e ., fresh venv)"
python - <<'EOF'
import time

import aaos
from aaos.agents.local_model import trained_adapter
from aaos.ui import agents

for env_id in aaos.env_ids():
    started = time.monotonic()
    config = agents.start_local("local", env_id, "per_role")
    policy = agents.build("local", 10_000, env_id, config)
    env = aaos.make(seed=10_000, env=env_id)
    result = env.step(policy.act(env.reset()))
    policy.close()
    statuses = sorted({r["status"] for r in result.info["action_results"].values()})
    print(f"{env_id}: the local agent ({'fine-tuned: ' + trained_adapter(env_id).name if trained_adapter(env_id) else 'untrained'}, "
          f"{config.mode} mode) played a step in {time.monotonic() - started:.0f} s, server start included: {statuses}")
EOF
