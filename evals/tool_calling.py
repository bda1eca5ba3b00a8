"""Evals of tool calling: does a model call the right tool with the right arguments.

Runs golden cases (``evals/tool_calling.jsonl``) against any configured model with every
tool deferred, so nothing runs: each tool call comes back as a request for approval and
is scored, never executed. Four scores, each 0-100:

- ``tool_selection``: the first call uses the expected tool;
- ``arg_extraction``: when it does, its arguments match (``exact`` or ``subset``);
- ``refusal``: requests no tool should serve get no tool call;
- ``error_recovery``: after the expected call fails, the model's next step recovers
  (calls the recovery tool, or answers with the expected words).

The model and agent are built by the kernel's own code path (``build_session_agent``), so
a case is sent with the request settings the kernel would use for that provider (a local
model's generation cap and long timeout, its short prompt). The cases run in a temporary
workspace holding the files and notes they name (``evals/workspace/``), so a model that
reads or edits them finds them.

The result is written as JSON tagged with the model and compared in a matrix with every
``evals/baseline-*.json``; the run fails (exit 1) when a score drops more than
``--max-degradation`` points below the baseline of the same model.

    python -m evals.tool_calling --model gemini:gemini-2.5-flash
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import shutil
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
WORKSPACE = HERE / "workspace"
"""What every case's workspace starts with: the files and notes (``vault/``) cases name, and
the skill and subagent (``.co/``) the skills and delegate_task cases name."""
DIMENSIONS = ("tool_selection", "arg_extraction", "refusal", "error_recovery")
CATEGORIES = ("tool_selection", "refusal", "error_recovery")


@dataclass
class Case:
    """One golden case."""

    id: str
    """Stable name, unique in the file."""
    category: str
    """tool_selection, refusal or error_recovery."""
    prompt: str
    """What the user asks."""
    expect_tool: str | None = None
    """The tool the first call must use; None for refusals."""
    expect_args: dict[str, Any] = field(default_factory=dict)
    """Arguments the call must carry."""
    arg_match: str = "subset"
    """exact: the arguments equal expect_args; subset: they contain them."""
    tool_error: str | None = None
    """For error_recovery: the error the expected call fails with."""
    expect_recovery: dict[str, Any] = field(default_factory=dict)
    """For error_recovery: {"tool": name} and/or {"text_contains": [words]}."""


@dataclass
class CaseResult:
    """What the model did on one case, and the verdicts."""

    id: str
    category: str
    called: str | None = None
    args: dict[str, Any] | None = None
    selected: bool | None = None
    args_ok: bool | None = None
    refused: bool | None = None
    recovered: bool | None = None
    detail: str = ""


def load_cases(path: Path) -> list[Case]:
    """Read and validate the golden cases; a bad line is an error naming it."""
    cases, seen = [], set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("//"):
            continue
        try:
            data = json.loads(line)
            case = Case(**data)
        except (json.JSONDecodeError, TypeError) as exc:
            raise SystemExit(f"{path}:{number}: invalid case: {exc}") from exc
        if case.category not in CATEGORIES:
            raise SystemExit(f"{path}:{number}: category must be one of {CATEGORIES}")
        if case.id in seen:
            raise SystemExit(f"{path}:{number}: duplicate id {case.id!r}")
        if case.category != "refusal" and not case.expect_tool:
            raise SystemExit(f"{path}:{number}: {case.category} needs expect_tool")
        seen.add(case.id)
        cases.append(case)
    return cases


def _norm(value: Any) -> Any:
    if isinstance(value, str):
        return re.sub(r"\s+", " ", value.strip()).lower()
    if isinstance(value, dict):
        return {k: _norm(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_norm(v) for v in value]
    return value


def args_match(expected: dict[str, Any], actual: dict[str, Any], mode: str) -> bool:
    """exact: same keys and values; subset: every expected key has the expected value.
    Strings compare case- and whitespace-insensitively."""
    exp, act = _norm(expected), _norm(actual)
    if mode == "exact":
        return exp == act
    return all(k in act and act[k] == v for k, v in exp.items())


def prepare_workspace(workspace: Path) -> Path:
    """Copy the eval workspace (files, and notes under ``vault/``) into ``workspace``."""
    shutil.copytree(WORKSPACE, workspace, dirs_exist_ok=True)
    return workspace


def eval_settings(workspace: Path) -> Any:
    """Settings that register every integration; nothing runs, so placeholders do."""
    from co_kernel.config import load_settings

    base = load_settings(workspace).settings
    token = workspace / "google_token.json"
    token.write_text(
        json.dumps(
            {"token": "eval", "refresh_token": "eval", "client_id": "eval", "client_secret": "eval"}
        )
    )
    vault = workspace / "vault"
    vault.mkdir(exist_ok=True)
    updates: dict[str, Any] = {}
    placeholders = {
        "google_token_path": token,
        "slack_bot_token": "xoxb-eval",
        "obsidian_vault_path": vault,
        "brave_search_api_key": "eval",
    }
    for name, value in placeholders.items():
        if name in type(base).model_fields:
            updates[name] = value
    return type(base)(**{**base.model_dump(), **updates})


class Runner:
    """Builds Co's agent with every tool deferred and plays the cases."""

    def __init__(self, model: str, workspace: Path) -> None:
        from pydantic_ai.toolsets.approval_required import ApprovalRequiredToolset

        from co_kernel.session_state import CoDeps
        from co_kernel.turn import build_session_agent

        prepare_workspace(workspace)
        settings = eval_settings(workspace)
        # The kernel's path: the same model, request settings, prompt and toolsets, with
        # every toolset deferred so that no call runs.
        built = build_session_agent(
            settings, model, base_dir=workspace, wrap_toolset=ApprovalRequiredToolset
        )
        self.handle = built.handle
        self.agent = built.agent
        self.model_settings: dict[str, Any] = dict(built.agent.model_settings or {})
        """The per-request settings every case is sent with."""
        self.tool_names = {
            name for b in built.toolsets if b.toolset is not None for name in b.approval
        }
        self.deps = CoDeps(
            settings=settings, session_id="eval", kernel_id="eval", workspace=workspace
        )
        self.deps.notebook = _notebook_with_a_page()

    async def _run(self, prompt: str | None, **kwargs: Any) -> Any:
        from pydantic_ai.usage import UsageLimits

        return await self.agent.run(
            prompt, deps=self.deps, usage_limits=UsageLimits(request_limit=4), **kwargs
        )

    async def play(self, case: Case) -> CaseResult:
        from pydantic_ai import DeferredToolRequests, DeferredToolResults, ToolDenied

        from co_kernel.permissions import normalise_args

        out = CaseResult(case.id, case.category)
        if case.expect_tool and case.expect_tool not in self.tool_names:
            out.detail = f"tool {case.expect_tool!r} is not registered"
        result = await self._run(case.prompt)
        calls = result.output.approvals if isinstance(result.output, DeferredToolRequests) else []
        if calls:
            out.called, out.args = calls[0].tool_name, normalise_args(calls[0].args)
        if case.category == "refusal":
            out.refused = not calls
            return out
        out.selected = out.called == case.expect_tool
        if out.selected and case.expect_args:
            out.args_ok = args_match(case.expect_args, out.args or {}, case.arg_match)
        elif out.selected:
            out.args_ok = True
        if case.category == "error_recovery":
            out.recovered = False
            if calls:
                denied = {c.tool_call_id: ToolDenied(f"Error: {case.tool_error}") for c in calls}
                follow = await self._run(
                    None,
                    message_history=result.all_messages(),
                    deferred_tool_results=DeferredToolResults(approvals=denied),
                )
                out.recovered = _recovered(case, follow.output)
        return out

    def close(self) -> None:
        self.handle.close()


class _StandInComm:
    """A page's ``co.notebook`` comm that is never asked: every call is deferred."""

    comm_id = "eval"

    def on_msg(self, callback: Any) -> None: ...

    def on_close(self, callback: Any) -> None: ...

    def send(self, data: Any) -> None: ...


def _notebook_with_a_page() -> Any:
    """A notebook that a page shows, so the cell-editing tools are offered as in JupyterLab."""
    from co_kernel.notebook import NotebookContext

    notebook = NotebookContext(shell=None)
    opened: list[Any] = []
    manager = type("CommManager", (), {"register_target": lambda _s, _t, f: opened.append(f)})
    notebook.page.register(manager())
    opened[0](_StandInComm(), {})
    return notebook


def _recovered(case: Case, output: Any) -> bool:
    from pydantic_ai import DeferredToolRequests

    want_tool = case.expect_recovery.get("tool")
    words = [w.lower() for w in case.expect_recovery.get("text_contains", [])]
    if isinstance(output, DeferredToolRequests):
        names = [c.tool_name for c in output.approvals]
        return bool(want_tool) and want_tool in names
    text = str(output).lower()
    return bool(words) and all(w in text for w in words)


def score(results: list[CaseResult]) -> dict[str, float | None]:
    """Percentages per dimension; None where no case measures it."""

    def pct(values: list[bool]) -> float | None:
        return round(100.0 * sum(values) / len(values), 1) if values else None

    return {
        "tool_selection": pct([r.selected for r in results if r.selected is not None]),
        "arg_extraction": pct([r.args_ok for r in results if r.selected and r.args_ok is not None]),
        "refusal": pct([r.refused for r in results if r.refused is not None]),
        "error_recovery": pct([r.recovered for r in results if r.recovered is not None]),
    }


def compare(
    current: dict[str, Any], baselines: list[dict[str, Any]], max_degradation: float
) -> tuple[str, list[str]]:
    """A matrix of scores (rows: dimensions; columns: baselines, then this run) and the
    regressions against the baseline of the same model."""
    columns = [(f"{b['model']} (baseline)", b["scores"]) for b in baselines]
    columns.append((f"{current['model']} (now)", current["scores"]))
    width = max(len(d) for d in DIMENSIONS)
    header = " | ".join([f"{'dimension':<{width}}", *[name for name, _ in columns]])
    lines = [header, "-" * len(header)]
    for dim in DIMENSIONS:
        cells = []
        for name, scores in columns:
            value = scores.get(dim)
            cells.append(f"{'-' if value is None else f'{value:.1f}':>{len(name)}}")
        lines.append(" | ".join([f"{dim:<{width}}", *cells]))
    regressions = []
    for base in baselines:
        if base["model"] != current["model"]:
            continue
        for dim in DIMENSIONS:
            old, new = base["scores"].get(dim), current["scores"].get(dim)
            if old is not None and new is not None and old - new > max_degradation:
                regressions.append(
                    f"{dim}: {new:.1f} is {old - new:.1f} points below the baseline {old:.1f}"
                )
    return "\n".join(lines), regressions


def _slug(model: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", model)


async def run_cases(model: str, cases: list[Case]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        runner = Runner(model, Path(tmp))
        model_settings = runner.model_settings
        try:
            results = []
            for case in cases:
                try:
                    results.append(await runner.play(case))
                except Exception as exc:  # one broken case must not hide the others
                    results.append(
                        CaseResult(case.id, case.category, detail=f"{type(exc).__name__}: {exc}")
                    )
                    if case.category == "refusal":
                        results[-1].refused = False
                    else:
                        results[-1].selected = False
                        if case.category == "error_recovery":
                            results[-1].recovered = False
        finally:
            runner.close()
    return {
        "model": model,
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "model_settings": model_settings,
        "scores": score(results),
        "cases": [asdict(r) for r in results],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m evals.tool_calling", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--model", required=True, help="provider:model, as for %%model")
    parser.add_argument("--cases", type=Path, default=HERE / "tool_calling.jsonl")
    parser.add_argument("--baselines", type=Path, default=HERE, help="folder with baseline-*.json")
    parser.add_argument(
        "--output", type=Path, default=HERE / "results", help="folder for the result JSON"
    )
    parser.add_argument(
        "--max-degradation", type=float, default=10.0, help="points a score may drop"
    )
    parser.add_argument(
        "--save-baseline", action="store_true", help="also write baseline-<model>.json"
    )
    args = parser.parse_args(argv)

    cases = load_cases(args.cases)
    current = asyncio.run(run_cases(args.model, cases))
    args.output.mkdir(parents=True, exist_ok=True)
    out_file = args.output / f"{_slug(args.model)}.json"
    out_file.write_text(json.dumps(current, indent=2))
    baselines = [json.loads(p.read_text()) for p in sorted(args.baselines.glob("baseline-*.json"))]
    matrix, regressions = compare(current, baselines, args.max_degradation)
    print(matrix)
    failed = [c for c in current["cases"] if c["detail"]]
    for case in failed:
        print(f"  note: {case['id']}: {case['detail']}")
    print(f"\n{len(cases)} cases; result written to {out_file}")
    if args.save_baseline:
        target = args.baselines / f"baseline-{_slug(args.model)}.json"
        target.write_text(json.dumps(current, indent=2))
        print(f"baseline written to {target}")
    if regressions:
        print(f"REGRESSIONS (more than {args.max_degradation:.0f} points):")
        for line in regressions:
            print(f"  {line}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
