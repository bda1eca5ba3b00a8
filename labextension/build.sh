#!/usr/bin/env bash
# Rebuild the prebuilt JupyterLab extension that ships inside the Python package
# (co_kernel/labextension/), then record the hash of its sources in
# labextension/sources.sha256 (outside the output folder, which every build empties).
#
# Run it after changing anything in labextension/src, style, schema, package.json or
# webpack.config.js,
# and commit the result: `pip install` never needs Node.js
# because the build is committed, and tests/labextension/test_build.py fails when
# it is older than its sources.
#
# Needs Node.js >= 20.19 with npm, and `jupyter-builder` (installed with
# JupyterLab) on PATH or in the project's .venv.
# Usage: labextension/build.sh
set -euo pipefail
cd "$(dirname "$0")"
say() { printf 'labextension/build: %s\n' "$*" >&2; }

if ! command -v jupyter-builder >/dev/null 2>&1; then
    [ -x ../.venv/bin/jupyter-builder ] \
        || { say "error: jupyter-builder not found; run scripts/setup.sh or activate a venv with JupyterLab"; exit 1; }
    PATH="$(cd ../.venv/bin && pwd):$PATH"
fi
command -v npm >/dev/null 2>&1 || { say "error: npm not found; install Node.js 20.19 or newer"; exit 1; }

say "installing the locked npm dependencies"
# The lock lists every platform's optional bindings (rspack, rollup), so `npm ci` installs
# exactly it and never rewrites it (scripts/test.sh does the same).
npm ci --no-audit --no-fund --loglevel=error
rm -rf ../co_kernel/labextension
say "building (tsc, then jupyter-builder build)"
npm run --silent build:prod
python3 source_hash.py --write >/dev/null
say "done: co_kernel/labextension/ and labextension/sources.sha256 (commit them with the sources)"
