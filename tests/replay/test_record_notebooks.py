"""The recipe in docs/notebooks.md: record a notebook once, replay it under nbval, nbclient, papermill.

`python -m co_kernel.replay.record_notebook` records the model's answers (the scripted
server stands in for a real provider; once the bundled local model, a real LLM) and stores
the outputs nbval compares; `pytest --nbval` then passes with `CO_MODEL=replay:...` and no
model at all, fails with the step, the recorded and the actual prompt when a prompt is
edited, and passes again after a `record-missing` run re-recorded only that step.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest

from co_kernel.replay import ScriptedModelServer

from ..clients import REPO
from ..support.kernel_forkserver import client_environment
from ..support.kernel_harness import ensure_kernelspec
from ..support.notebooks import write_notebook
from ..turn.test_local import needs_smollm2

pytestmark = pytest.mark.slow  # kernels and pytest in subprocesses: some 2 minutes in all

PROMPTS = ["What is the capital of France?", "Create answers.txt.", "And of Spain?"]
ANSWERS: list[dict[str, Any]] = [
    {"text": "Paris."},
    {
        "tool_calls": [
            {"name": "run_shell_command", "arguments": {"cmd": "touch answers.txt"}, "id": "c1"}
        ]
    },
    {"text": "Created answers.txt."},
    {"text": "Madrid."},
]


def _env(home: Path, **settings: str) -> dict[str, str]:
    """A client's environment: this checkout, a Co home of its own, the given settings."""
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CO_")}
    env.update(
        CO_HOME=str(home),
        CO_SANDBOX="subprocess",
        PYTHONPATH=os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p),
        **settings,
    )
    # The kernels the recorder and nbval start fork from the test process's server.
    return client_environment(env)


def _provider(server: ScriptedModelServer) -> dict[str, str]:
    """The scripted server standing in for a real provider."""
    return {"CO_MODEL": "compat:scripted", "CO_BASE_URL": server.base_url}


def _run(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=300
    )


def _record(folder: Path, env: dict[str, str], *extra: str) -> subprocess.CompletedProcess[str]:
    return _run(["-m", "co_kernel.replay.record_notebook", "report.ipynb", *extra], env, folder)


def _nbval(folder: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return _run(
        ["-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval", "report.ipynb"], env, folder
    )


def _steps(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().split("\n") if line.strip()]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A notebook recorded against a scripted provider, with its approval given."""
    ensure_kernelspec()
    folder = tmp_path_factory.mktemp("recorded")
    home = tmp_path_factory.mktemp("co-home")
    write_notebook(folder / "report.ipynb", PROMPTS)
    with ScriptedModelServer(ANSWERS) as server:
        run = _record(folder, _env(home, CO_APPROVAL_MODE="approve", **_provider(server)))
        assert run.returncode == 0, run.stdout + run.stderr[-3000:]
        assert len(server.requests) == len(ANSWERS), "the replay run asked no model"
    (folder / "answers.txt").unlink()
    return folder


def _copy(recorded: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "report"
    shutil.copytree(recorded, folder)
    return folder


def _replay_env(tmp_path: Path, **settings: str) -> dict[str, str]:
    """No provider at all: only the script answers, with the approvals the person recorded
    (they turn recorded approvals on for the run: off by default)."""
    settings = {"CO_REPLAY_APPROVALS": "true", **settings}
    return _env(tmp_path / "home", CO_MODEL="replay:report.replay.jsonl", **settings)


def test_nbval_passes_fails_on_an_edited_prompt_and_passes_after_record_missing(
    recorded: Path, tmp_path: Path
) -> None:
    folder = _copy(recorded, tmp_path)
    script = folder / "report.replay.jsonl"
    steps = _steps(script)
    assert [s["expect"] for s in steps][:2] == [
        {"last_user_is": PROMPTS[0]},
        {"last_user_is": PROMPTS[1]},
    ]
    assert steps[1]["tool_calls"][0]["decision"] == "approved"

    env = _replay_env(tmp_path)
    passed = _nbval(folder, env)
    assert passed.returncode == 0, passed.stdout[-3000:]
    assert "3 passed" in passed.stdout
    # approval_mode is `deny` here: the recorded approval ran the call, and the cell says so.
    assert (folder / "answers.txt").exists()
    saved = json.dumps(nbformat.read(folder / "report.ipynb", as_version=4).cells[1].outputs)
    assert "approved (recorded)" in saved

    edited = nbformat.read(folder / "report.ipynb", as_version=4)
    edited.cells[2].source = "And of Italy?"
    nbformat.write(edited, folder / "report.ipynb")
    failed = _nbval(folder, env)
    assert failed.returncode != 0
    assert "does not match this request at step 4" in failed.stdout
    assert "expected last user message to be 'And of Spain?', got 'And of Italy?'" in failed.stdout

    with ScriptedModelServer([{"text": "Rome."}]) as fallback:
        rerecord = _record(
            folder,
            _env(
                tmp_path / "home",
                CO_REPLAY_MODE="record-missing",
                CO_REPLAY_APPROVALS="true",  # a --replay-only run asks unless told
                CO_REPLAY_FALLBACK_MODEL="compat:scripted",
                CO_BASE_URL=fallback.base_url,
            ),
            "--replay-only",
        )
        assert rerecord.returncode == 0, rerecord.stdout + rerecord.stderr[-3000:]
        assert len(fallback.requests) == 1, "only the edited prompt asked the model"
    after = _steps(script)
    assert after[:3] == steps[:3], "only the edited prompt's step is new"
    assert after[3]["text"] == "Rome." and after[3]["expect"] == {"last_user_is": "And of Italy?"}
    assert len(after) == 4, "the old answer to the edited prompt is gone"
    again = _nbval(folder, env)
    assert again.returncode == 0, again.stdout[-3000:]


def test_nbclient_replays_the_recorded_notebook(recorded: Path, tmp_path: Path) -> None:
    from nbclient import NotebookClient

    folder = _copy(recorded, tmp_path)
    nb = nbformat.read(folder / "report.ipynb", as_version=4)
    client = NotebookClient(nb, kernel_name="co", resources={"metadata": {"path": str(folder)}})
    client.execute(env=_replay_env(tmp_path))
    text = json.dumps([cell.outputs for cell in nb.cells])
    assert "Paris." in text and "Madrid." in text and "approved (recorded)" in text
    assert (folder / "answers.txt").exists()


def test_papermill_replays_the_recorded_notebook(recorded: Path, tmp_path: Path) -> None:
    folder = _copy(recorded, tmp_path)
    papermill = Path(sys.executable).with_name("papermill")
    run = subprocess.run(
        [str(papermill), "-k", "co", "report.ipynb", "out.ipynb"],
        env=_replay_env(tmp_path),
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    text = json.dumps([c.outputs for c in nbformat.read(folder / "out.ipynb", as_version=4).cells])
    assert "Paris." in text and "Madrid." in text


@needs_smollm2
def test_a_notebook_recorded_with_the_local_model_replays_under_nbval(tmp_path: Path) -> None:
    ensure_kernelspec()
    folder = tmp_path / "report"
    folder.mkdir()
    write_notebook(folder / "report.ipynb", ["Say hello in one short sentence."])
    run = _record(
        folder, _env(tmp_path / "home", CO_MODEL="local:smollm2-135m", CO_LOCAL_MAX_TOKENS="24")
    )
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    (step,) = _steps(folder / "report.replay.jsonl")
    assert step["expect"] == {"last_user_is": "Say hello in one short sentence."}
    assert step["text"].strip()
    passed = _nbval(folder, _replay_env(tmp_path))
    assert passed.returncode == 0, passed.stdout[-3000:]


def test_the_data_analysis_notebook_fails_when_its_recorded_edit_differs(tmp_path: Path) -> None:
    """08-data-analysis replays its notebook edits from the recorded page answers (no page
    under nbval); an insert that is not the recorded one fails the prompt's cell, naming
    the change, the cell and what differs."""
    ensure_kernelspec()
    notebooks = REPO / "notebooks"
    folder = tmp_path / "notebooks"
    folder.mkdir()
    for name in ("08-data-analysis.ipynb", "08-data-analysis.replay.jsonl"):
        shutil.copy(notebooks / name, folder / name)
    shutil.copytree(notebooks / "data", folder / "data")
    script = folder / "08-data-analysis.replay.jsonl"
    steps = _steps(script)
    [insert] = [c for s in steps for c in s.get("tool_calls", []) if c["name"] == "insert_cells"]
    [cell] = insert["page"][-1]["proposed"][0]["cells"]
    assert cell["source"].startswith("%%python\n") and "figsize=(7, 3.5)" in cell["source"]
    cell["source"] = cell["source"].replace("figsize=(7, 3.5)", "figsize=(9, 4)")
    script.write_text("".join(json.dumps(step, ensure_ascii=False) + "\n" for step in steps))
    failed = _run(
        ["-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval", "08-data-analysis.ipynb"],
        _env(tmp_path / "home"),
        folder,
    )
    assert failed.returncode != 0
    output = " ".join(failed.stdout.split())  # nbval wraps long lines
    assert (
        "The replayed `insert_cells` call (call_insert) proposes another notebook edit than "
        f"the one recorded in {script}: change 1 (insert), new cell 1, source, line 7: recorded "
        '\'ax = sales.plot.bar(x="label", y="revenue", legend=False, figsize=(9, 4), rot=0)\', '
        'now \'ax = sales.plot.bar(x="label", y="revenue", legend=False, figsize=(7, 3.5), rot=0)\''
    ) in output, failed.stdout[-3000:]
    # The prompt's cell fails; the cell after it, which uses `sales`, fails with it.
    assert "FAILED 08-data-analysis.ipynb::Cell 5" in failed.stdout
