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
# The tour runs in a copy, tour/ (ignored by git): running it saves outputs, and the
# regression notebooks in notebooks/ stay as committed. -n keeps what was changed there.
mkdir -p tour
fresh=()
for notebook in notebooks/*.ipynb; do
    [ -e "tour/${notebook#notebooks/}" ] || fresh+=("tour/${notebook#notebooks/}")
done
cp -Rn notebooks/. tour/
# A new copy opens clean: the outputs committed in notebooks/ are what nbval compares a
# run with, and shown in the tour they would make Run All look as if nothing happened.
if [ "${#fresh[@]}" -gt 0 ]; then
    .venv/bin/jupyter nbconvert --clear-output --inplace --log-level=WARN "${fresh[@]}"
fi
# The tour's folder is ours and its .co/settings.json points the notes tools at its vault:
# trusted as it is now (a folder you open yourself asks first; `%trust show` in the tour).
.venv/bin/co-kernel trust --yes tour >/dev/null
# The URL it prints (and the browser it opens) goes to the tour, not the Launcher.
exec .venv/bin/jupyter lab --notebook-dir=tour --LabApp.default_url=/lab/tree/00-tour.ipynb \
    "${extra[@]}" "$@"
