#!/usr/bin/env bash
# README command 2: set everything up and run the whole test suite.
#
# Installs what the tests need on a fresh Debian/Ubuntu machine (root or sudo):
# Chromium for the browser tests, Node.js for pyright and the labextension's unit tests,
# a Docker engine, and the local sandbox image (built with debootstrap: no image registry
# is needed). Before any test, ruff (lint and format) and pyright (types) must pass.
# Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
say() { printf 'test: %s\n' "$*" >&2; }

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"
    elif command -v sudo >/dev/null 2>&1; then sudo "$@"
    else say "error: need root for: $*"; exit 1; fi
}

scripts/setup.sh
# JupyterLab with real-time collaboration, in .venv-rtc: for its one test, apart from .venv.
scripts/setup-rtc.sh

missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
# The credential store's tests run the freedesktop Secret Service in a private D-Bus session.
command -v gnome-keyring-daemon >/dev/null 2>&1 || missing+=(gnome-keyring)
command -v dbus-daemon >/dev/null 2>&1 || missing+=(dbus-daemon)
if [ ${#missing[@]} -gt 0 ]; then
    say "installing ${missing[*]} with apt-get"
    export DEBIAN_FRONTEND=noninteractive
    as_root apt-get update -q
    as_root apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# Lint, format and types first: a run fails on any of them before a test starts.
# pyright (a PyPI wheel that carries pyright itself) runs on the Node.js installed above:
# never a downloaded one, and no look-up of newer versions.
say "ruff check, ruff format --check, pyright"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
PYRIGHT_PYTHON_GLOBAL_NODE=1 PYRIGHT_PYTHON_IGNORE_WARNINGS=1 .venv/bin/pyright

# tests/hub runs a real JupyterHub, whose proxy is an npm package.
if ! command -v configurable-http-proxy >/dev/null 2>&1; then
    say "installing configurable-http-proxy (npm) for the JupyterHub test"
    as_root npm install -g --no-audit --no-fund --loglevel=error configurable-http-proxy
fi

scripts/start-docker.sh
scripts/build-sandbox-image.sh co-sandbox-test:bookworm

# The labextension's TypeScript: lint, type-check and unit tests (Node.js >= 20.19).
# `npm ci` installs exactly the lock and never rewrites it; skipped while node_modules is
# newer than the lock (npm's own record of the install, .package-lock.json).
if [ ! -f labextension/node_modules/.package-lock.json ] \
    || [ labextension/package-lock.json -nt labextension/node_modules/.package-lock.json ]; then
    say "installing the labextension's locked npm packages (about a minute)"
    (cd labextension && npm ci --no-audit --no-fund --loglevel=error)
fi
(cd labextension && npm run --silent lint:check && npm test)

# npm and node_modules are there now: the extension's own build test must run, not skip.
export CO_TEST_REQUIRE_NODE=1
export CO_TEST_SANDBOX_IMAGE=co-sandbox-test:bookworm
# The regression notebooks' kernels use it too (no registry here for python:3.12-slim).
export CO_SANDBOX_IMAGE=co-sandbox-test:bookworm

# Tests run in parallel (pytest-xdist): most of their time is spent waiting for kernels,
# containers and browsers, so more workers than cores pays. CO_TEST_WORKERS overrides
# (0: one process); a notebook's cells, and the tests of a module that share a
# module-scoped fixture, stay on one worker (tests/conftest.py).
workers="${CO_TEST_WORKERS:-$(( $(nproc) * 2 ))}"

# The run must leave the checkout as it found it: compare git's view before and after.
status_of_checkout() { git status --porcelain --untracked-files=all 2>/dev/null || true; }
before="$(status_of_checkout)"
set +e
# No reruns: a flaky test fails the run, and gets fixed.
.venv/bin/python -m pytest --nbval tests notebooks -n "$workers" --dist loadgroup "$@"
code=$?
set -e
after="$(status_of_checkout)"
if [ "$before" != "$after" ]; then
    say "error: the test run changed the checkout (git status before and after):"
    diff <(printf '%s\n' "$before") <(printf '%s\n' "$after") >&2 || true
    [ "$code" -ne 0 ] || code=1
fi
exit "$code"
