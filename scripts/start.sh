#!/usr/bin/env bash
# README command 1: set everything up, then open JupyterLab on the tour notebook.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
extra=()
[ "$(id -u)" -eq 0 ] && extra+=(--allow-root)
exec .venv/bin/jupyter lab --notebook-dir=notebooks "${extra[@]}" "$@" 00-tour.ipynb
