#!/usr/bin/env bash
# A second virtual environment, .venv-rtc: Co and JupyterLab with real-time collaboration
# (jupyter-collaboration), for the test of two people in one notebook
# (tests/browser/test_collaboration_browser.py). It stays apart from .venv, so every other
# test and scripts/start.sh run JupyterLab exactly as Co's own install has it.
#
# Idempotent: re-running only reinstalls when pyproject.toml or the extension changed.
# Usage: scripts/setup-rtc.sh        (scripts/test.sh runs it after scripts/setup.sh)
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
VENV=.venv-rtc
# 5.x is the line for JupyterLab 4.6 and jupyter_server 2.19+ (what Co's lab extra installs).
COLLABORATION="jupyter-collaboration>=5.0.4,<6"
say() { printf 'setup-rtc: %s\n' "$*" >&2; }

if [ ! -x "$VENV/bin/python" ]; then
    say "creating $VENV with $("$PYTHON" --version)"
    "$PYTHON" -m venv "$VENV"
fi

stamp="$VENV/.co-installed"
want="$( (cat pyproject.toml; cat labextension/sources.sha256 2>/dev/null || true;
    echo "$COLLABORATION") | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ] \
    || ! "$VENV/bin/python" -c 'import importlib.util as u, sys
sys.exit(not all(u.find_spec(m) for m in ("co_kernel", "jupyter_server_ydoc")))'; then
    say "installing Co, JupyterLab and jupyter-collaboration into $VENV (about a minute)"
    # As a person installs it beside Co: the lab extra, then collaboration. The committed
    # labextension build is used (no Node.js), as in scripts/setup.sh.
    SKIP_JUPYTER_BUILDER=1 "$VENV/bin/python" -m pip install -q -e ".[lab]" "$COLLABORATION"
    echo "$want" > "$stamp"
fi
say "ready: $VENV runs JupyterLab with real-time collaboration"
