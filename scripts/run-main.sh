#!/usr/bin/env bash
# Sets everything up, then runs the main job (examples/main_job.py).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
exec .venv/bin/python examples/main_job.py "$@"
