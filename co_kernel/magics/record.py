"""Record the model's answers into a replay script, so the notebook runs again without the model.

`%record start` records into `<notebook name>.replay.jsonl` beside the notebook
(`co-session.replay.jsonl` when the notebook is unknown), `%record PATH` into PATH; either
starts a new script. `%record stop` ends it, `%record` alone says what is being recorded.
Each model request becomes a step: the answer, its tool calls, and the prompt or tool
result it answered; your approval decisions are kept with their calls, and secrets are
redacted before anything is written. Run the notebook again with `CO_MODEL=replay:PATH`
(or `%model replay:PATH`), e.g. under `pytest --nbval`; `replay_mode = record-missing`
records only what changed. The setting `record_path` records from the first cell.
"""

from __future__ import annotations

from pathlib import Path

from ..inert import inert_code
from . import MagicContext, MagicError

USAGE = "%record [start | PATH | stop]"


def _default_path(ctx: MagicContext) -> Path:
    session = ctx.session
    name = Path(session.notebook_path).stem if session.notebook_path else "co-session"
    return session.workspace / f"{name}.replay.jsonl"


def _shown(ctx: MagicContext, path: Path) -> str:
    """The path as the person would type it: relative to the notebook's folder when inside."""
    try:
        return str(path.relative_to(ctx.session.workspace))
    except ValueError:
        return str(path)


async def run(ctx: MagicContext, args: str) -> str:
    recorder = ctx.session.recorder
    if recorder is None:  # pragma: no cover - every kernel session has one
        raise MagicError("This session cannot record.")
    word = args.strip()
    if not word:
        if recorder.path is None:
            return (
                "Not recording. `%record start` records the model's answers into "
                f"{inert_code(_shown(ctx, _default_path(ctx)))}, `%record PATH` into another file."
            )
        return (
            f"Recording into {inert_code(_shown(ctx, recorder.path))}: {recorder.steps} step(s) so far. "
            "`%record stop` ends it."
        )
    if word.lower() == "stop":
        path = recorder.stop()
        if path is None:
            return "Not recording; nothing to stop."
        shown = _shown(ctx, path)
        return (
            f"Stopped recording: {recorder.steps} step(s) in {inert_code(shown)}. Run the "
            f"notebook again without the model with {inert_code(f'CO_MODEL=replay:{shown}')} "
            f"or {inert_code(f'%model replay:{shown}')}."
        )
    path = (
        _default_path(ctx)
        if word.lower() == "start"
        else ctx.session.workspace / Path(word).expanduser()
    )
    from ..replay import replayed_script

    if replayed_script(ctx.session.model.name, ctx.session.workspace) == path.resolve():
        raise MagicError(
            f"`{word}` is the script this session replays; record into another file "
            "(or set `replay_mode` to `record-missing` to add what it lacks)."
        )
    try:
        recorder.start(path)
    except OSError as exc:
        raise MagicError(f"Cannot record into `{path}`: {exc.strerror or exc}.") from None
    shown = _shown(ctx, path)
    return (
        f"Recording the model's answers into {inert_code(shown)} (a new script). "
        f"`%record stop` ends it; {inert_code(f'CO_MODEL=replay:{shown}')} runs the notebook "
        "again from it."
    )


def complete(ctx: MagicContext, arg_text: str) -> list[str]:
    return [v for v in ("start", "stop") if v.startswith(arg_text.strip().lower())]
