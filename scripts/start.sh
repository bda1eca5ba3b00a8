#!/usr/bin/env bash
# README command 1: set everything up, then open JupyterLab on the tour notebook.
# Extra arguments go to `jupyter lab` (e.g. --no-browser, --port 8899).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# `!` cells: a Docker engine and the sandbox image. Never fatal: without Docker, Co
# still runs and says so in the cell.
scripts/setup-sandbox.sh || true
extra=()
[ "$(id -u)" -eq 0 ] && extra+=(--allow-root)
# The file is resolved against the current directory, not --notebook-dir.
exec .venv/bin/jupyter lab --notebook-dir=notebooks "${extra[@]}" "$@" notebooks/00-tour.ipynb
