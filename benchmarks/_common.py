"""What the benchmarks share: the answer they stream, kernel environments, tables."""

from __future__ import annotations

import os
import random
import statistics
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    # The benchmarks drive kernels with the test harness (tests/support/kernel_harness.py).
    sys.path.insert(0, str(REPO))

__all__ = [
    "REPO",
    "git_worktree",
    "kernel_env",
    "load_average",
    "markdown_answer",
    "median",
    "ms",
    "print_table",
    "shaped_answer",
    "verdict",
    "with_repo_on_pythonpath",
]

_WORDS = (  # noqa: SIM905 - a sentence of words reads better than a column of strings
    "kernel notebook cell output display stream update segment block buffer message "
    "client server socket answer prompt model token rate latency budget render fence "
    "heading paragraph list code table value result error retry session history turn "
    "the a of to and in is that for with as on it by this be are from at or an"
).split()

_CODE = (
    (
        "python",
        'import json\n\n\ndef load(path: str) -> dict:\n    """Read a settings file."""\n'
        "    with open(path) as f:\n        return json.load(f)\n\n\n"
        'settings = load("settings.json")\nprint(settings.get("model", "none"))\n',
    ),
    (
        "bash",
        "python -m venv .venv\n. .venv/bin/activate\npip install -e '.[dev]'\npytest -q tests/\n",
    ),
    (
        "python",
        "async def stream(agent, prompt):\n    async with agent.run_stream_events(prompt) as events:\n"
        "        async for event in events:\n            print(event)\n\n"
        "# A blank line inside a fence is not a block boundary.\n\nresult = None\n",
    ),
    (
        "json",
        '{\n  "model": "ollama:llama3.2",\n  "approval_mode": "ask",\n'
        '  "stream_max_updates_per_second": 20\n}\n',
    ),
)


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(_WORDS) for _ in range(rng.randint(6, 16))]
    if rng.random() < 0.3:
        i = rng.randrange(len(words))
        words[i] = f"`{words[i]}`"
    if rng.random() < 0.2:
        i = rng.randrange(len(words))
        words[i] = f"**{words[i]}**"
    text = " ".join(words)
    return text[0].upper() + text[1:] + "."


def _title(rng: random.Random) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(3, 7))).capitalize()


def _paragraph(rng: random.Random) -> str:
    return " ".join(_sentence(rng) for _ in range(rng.randint(2, 5)))


def markdown_answer(size: int = 20_000, seed: int = 2) -> str:
    """A deterministic, realistic Markdown answer of about ``size`` characters.

    Headings, paragraphs, bullet and numbered lists, fenced code blocks (some with blank
    lines inside, which a segmenter must not split at) and a small table.
    """
    rng = random.Random(seed)
    blocks = ["# " + _title(rng), _paragraph(rng)]
    section = 0
    while sum(len(b) + 2 for b in blocks) < size:
        section += 1
        blocks.append(f"## {section}. {_title(rng)}")
        blocks.append(_paragraph(rng))
        kind = section % 4
        if kind == 0:
            blocks.append("\n".join(f"- {_sentence(rng)}" for _ in range(rng.randint(3, 6))))
        elif kind == 1:
            lang, code = _CODE[section % len(_CODE)]
            blocks.append(f"```{lang}\n{code}```")
        elif kind == 2:
            blocks.append("\n".join(f"{i}. {_sentence(rng)}" for i in range(1, rng.randint(3, 6))))
        else:
            rows = [f"| {rng.choice(_WORDS)} | {rng.randint(1, 999)} ms |" for _ in range(4)]
            blocks.append("| name | time |\n|---|---|\n" + "\n".join(rows))
        blocks.append(_paragraph(rng))
    text = "\n\n".join(blocks)
    # End on a whole block near the target size, always with a newline.
    cut = text.rfind("\n\n", 0, size)
    return text[:cut] + "\n" if cut > size // 2 else text + "\n"


SHAPES = ("lists", "tables", "code", "prose", "mixed")
"""The answer shapes of ``shaped_answer``."""


def _list_block(rng: random.Random, ordered: bool, first: int) -> str:
    items = []
    for n in range(first, first + rng.randint(2, 5)):
        item = f"{n}. {_sentence(rng)}" if ordered else f"- {_sentence(rng)}"
        if ordered and rng.random() < 0.3:  # a numbered step with its own bullets
            item += "".join(f"\n   - {_sentence(rng)}" for _ in range(rng.randint(1, 3)))
        items.append(item)
    return "\n".join(items)


def _shape_block(shape: str, rng: random.Random, n: int) -> list[str]:
    """The next blocks of an answer of ``shape`` (``n`` counts the calls)."""
    if shape == "lists":
        # Bullet groups and numbered groups taking turns, the numbering running on.
        return [_list_block(rng, ordered=n % 2 == 1, first=n * 3 + 1)]
    if shape == "tables":
        rows = [
            f"| {_title(rng)} | {rng.randint(1, 999)} ms | {rng.choice(_WORDS)} |"
            for _ in range(rng.randint(8, 20))
        ]
        table = "| name | time | note |\n|---|---:|---|\n" + "\n".join(rows)
        return [f"## {_title(rng)}", _paragraph(rng), table]
    if shape == "code":
        lang, code = _CODE[n % len(_CODE)]
        return [_paragraph(rng), f"```{lang}\n{code * rng.randint(1, 3)}```"]
    if shape == "prose":
        return [f"## {_title(rng)}"] * (n % 3 == 0) + [_paragraph(rng)]
    raise ValueError(f"unknown shape {shape!r}; one of {', '.join(SHAPES)}")


def shaped_answer(shape: str, size: int, seed: int = 2) -> str:
    """A deterministic Markdown answer of ``shape`` (one of ``SHAPES``), about ``size`` bytes.

    ``lists`` is a heading and then bullet and numbered items taking turns (the shape of
    many model answers); ``tables`` sections of a heading, a paragraph and a table;
    ``code`` paragraphs and fenced code; ``prose`` paragraphs under headings; ``mixed``
    all of these as ``markdown_answer`` writes them.
    """
    if shape == "mixed":
        return markdown_answer(size, seed)
    rng = random.Random(seed)
    blocks = ["# " + _title(rng)]
    n = 0
    while sum(len(b) + 2 for b in blocks) < size:
        blocks += _shape_block(shape, rng, n)
        n += 1
    text = "\n\n".join(blocks)
    cut = text.rfind("\n\n", 0, size)
    return text[:cut] + "\n" if cut > size // 2 else text + "\n"


def git_worktree(ref: str) -> Path:
    """A detached git worktree of ``ref`` beside this checkout (made once, then reused)."""
    commit = subprocess.run(
        ["git", "rev-parse", "--short", ref], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.strip()
    path = REPO.parent / f"{REPO.name}-bench-{commit}"
    if not path.exists():
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(path), commit], cwd=REPO, check=True
        )
    return path


def with_repo_on_pythonpath(env: Mapping[str, str]) -> dict[str, str]:
    """A copy of ``env`` whose PYTHONPATH starts with this checkout, as an absolute path.

    Kernels and servers the benchmarks start run in other folders, where a relative entry
    (the `PYTHONPATH=.` of the run commands) would import whatever co_kernel is installed
    instead of this checkout, or none. Relative entries are made absolute for the same reason.
    """
    out = dict(env)
    entries = [str(REPO)]
    for entry in out.get("PYTHONPATH", "").split(os.pathsep):
        if entry:
            absolute = str(Path(entry).resolve())
            if absolute not in entries:
                entries.append(absolute)
    out["PYTHONPATH"] = os.pathsep.join(entries)
    return out


def kernel_env(
    co_home: Path, base_url: str, base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment a kernel gets: ours (or ``base``) without CO_* variables, plus Co's
    for the run, importing this checkout wherever the kernel runs."""
    source = os.environ if base is None else base
    env = {k: v for k, v in source.items() if not k.startswith("CO_")}
    env.update({"CO_HOME": str(co_home), "CO_MODEL": "compat:scripted", "CO_BASE_URL": base_url})
    return with_repo_on_pythonpath(env)


def load_average() -> str:
    """The load average, for a benchmark to print before and after it runs."""
    one, five, _ = os.getloadavg()
    return f"{one:.2f} (1 min), {five:.2f} (5 min) on {os.cpu_count()} cores"


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def print_table(title: str, headers: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    """A plain-text table, columns as wide as their widest cell."""
    cells = [[str(h) for h in headers], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    line = "  ".join("-" * w for w in widths)
    print(f"\n{title}")
    print(line)
    for n, row in enumerate(cells):
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
        if n == 0:
            print(line)
    print(line)
