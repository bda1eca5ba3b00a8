"""How `pytest --nbval` runs the regression notebooks.

- Each notebook's kernel starts with its own empty ``CO_HOME`` and without the Co and
  provider variables of the environment that runs pytest (API keys, tokens, ``CO_*``
  overrides; only the sandbox settings pass, so CI can name its sandbox image). No user
  settings, session store, memory or secret reaches the run, the run leaves nothing in
  the user's real Co directories, and it is repeatable: memory ids start at 1 every time.
- Outputs that vary from run to run (times, ids, temporary paths, token estimates) pass
  through the regexes in ``nbval-sanitize.cfg`` on both sides of the comparison, unless
  ``--nbval-sanitize-with`` names another file.

``scripts/record_notebook.py`` records reference outputs with the same environment.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Generator, Mapping
from pathlib import Path

import pytest

from tests.support.kernel_forkserver import ForkServer, forking

SANITIZE = Path(__file__).with_name("nbval-sanitize.cfg")

# Variables Co reads besides CO_*: provider keys and hosts, integration credentials.
_FOREIGN = (
    "GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OLLAMA_HOST",
    "BRAVE_SEARCH_API_KEY", "BRAVE_API_KEY", "SLACK_BOT_TOKEN", "GOOGLE_APPLICATION_CREDENTIALS",
)  # fmt: skip


def notebook_env(environ: Mapping[str, str], co_home: str) -> dict[str, str]:
    """The environment a notebook's kernel starts with: ``environ`` cleaned, a fresh home."""
    env = {
        key: value
        for key, value in environ.items()
        if key not in _FOREIGN and not (key.startswith("CO_") and not key.startswith("CO_SANDBOX"))
    }
    env["CO_HOME"] = co_home
    # The regression notebooks' folder is ours: trusted the way a headless run trusts one
    # (`.co/settings.json` points the notes tools at `vault/`).
    env["CO_TRUSTED_FOLDERS"] = json.dumps([str(Path(__file__).parent)])
    return env


def new_co_home(notebook: str) -> str:
    """An empty Co home for one run of one notebook (sanitised as CO_HOME in outputs)."""
    return tempfile.mkdtemp(prefix=f"co-home-{notebook}-")


def pytest_configure(config: pytest.Config) -> None:
    option = config.option
    # Only when nobody chose a file (nbval reads one); `--sanitize-with` is its old name.
    if getattr(option, "nbval_sanitize_with", "") is None and not option.sanitize_with:
        option.nbval_sanitize_with = str(SANITIZE)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    notebook = item.parent
    # nbval starts a notebook's kernel while setting up its first cell, and the kernel
    # inherits os.environ at that moment: swap the environment only around that setup.
    if (
        notebook is None
        or not str(notebook.path).endswith(".ipynb")
        or getattr(notebook, "kernel", None) is not None
    ):
        return (yield)
    home = new_co_home(notebook.path.stem)
    item.config.add_cleanup(lambda: shutil.rmtree(home, ignore_errors=True))
    saved = dict(os.environ)
    env = notebook_env(saved, home)
    # The kernel forks from this process's server (tests/support/kernel_forkserver.py).
    if forking():
        server = ForkServer.shared()
        env = server.client_environment(env)
        if str(server.entry_points) not in sys.path:  # where jupyter_client finds its provisioner
            sys.path.append(str(server.entry_points))
    os.environ.clear()
    os.environ.update(env)
    try:
        return (yield)
    finally:
        os.environ.clear()
        os.environ.update(saved)
