"""Generated Obsidian vaults for tests and benchmarks: realistic, deterministic notes.

Notes have YAML front matter (tags as a list or a string, sometimes a title), headings,
paragraphs, bullet lists, wiki links, inline ``#tags`` (nested ones too), and code blocks
whose ``#include`` lines must not count as tags. Same seed, same vault.
"""

from __future__ import annotations

import random
from pathlib import Path

__all__ = ["TAGS", "WORDS", "generate_vault"]

WORDS = (  # noqa: SIM905 - a sentence of words reads better than 90 quoted ones
    "analysis archive backlog baseline budget calendar checklist client cluster commit "
    "compiler dashboard dataset deadline decision deploy design draft estimate experiment "
    "feedback forecast garden habit hypothesis insight interview invoice journal kernel "
    "kickoff ledger library lecture meeting metric milestone model notebook outline paper "
    "pipeline planning prototype query reading recipe release research retrospective review "
    "roadmap sample schedule schema seminar server sketch sprint summary survey syllabus "
    "teaching template thesis timeline tracker training travel vendor weekly workshop "
    "alpha beta gamma delta mountain river forest ocean coffee bicycle violin harbour"
).split()
TAGS = (
    "project/alpha", "project/beta", "project/gamma", "area/health", "area/finance",
    "area/learning", "meeting", "idea", "reading", "journal", "todo", "reference",
)  # fmt: skip
_FOLDERS = ("Projects", "Areas", "Journal", "Reading", "Inbox", "Archive/2023", "Archive/2024")


_COMMON = (  # noqa: SIM905
    "the of and to in a is that for it as was with be by on not he this are or his from "
    "at which but have an they you were her she there been one all we their has would when "
    "if so no will can more about said up out what some into them could time only then new"
).split()
_SYLLABLES = (  # noqa: SIM905
    "ka ri to mu sen lo va dre pin tal or ex quo bri fen gal hu im jo ker lun mar nel "
    "pol rus sta tem ul vin wex yor zan ab ce di ef gi"
).split()


class _Vocabulary:
    """Common words plus a long Zipf-distributed tail, as real prose has."""

    def __init__(self, rng: random.Random, size: int = 20_000) -> None:
        words: dict[str, None] = dict.fromkeys(WORDS)
        while len(words) < size:
            words["".join(rng.choices(_SYLLABLES, k=rng.randint(2, 4)))] = None
        self.words = list(words)
        total = 0.0
        self.cum: list[float] = []
        for rank in range(1, len(self.words) + 1):
            total += 1.0 / rank
            self.cum.append(total)

    def sentence(self, rng: random.Random) -> str:
        n = rng.randint(6, 16)
        content = rng.choices(self.words, cum_weights=self.cum, k=n)
        common = rng.choices(_COMMON, k=n)
        words = [c if rng.random() < 0.45 else w for c, w in zip(common, content, strict=True)]
        words[0] = words[0].capitalize()
        return " ".join(words) + "."


def _note(rng: random.Random, vocab: _Vocabulary, index: int, target_chars: int) -> tuple[str, str]:
    folder = rng.choice(_FOLDERS)
    name = f"{rng.choice(WORDS).capitalize()} {rng.choice(WORDS)} {index:05d}"
    tags = rng.sample(TAGS, k=rng.randint(0, 3))
    front = ["---"]
    if rng.random() < 0.3:
        front.append(f"title: {name.title()}")
    if tags and rng.random() < 0.5:
        front.append("tags:")
        front.extend(f"  - {t}" for t in tags[:-1] or tags)
    elif tags:
        front.append(f"tags: {', '.join(tags[:-1] or tags)}")
    front.append(f"created: 2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}")
    front.append("---")
    body = [f"# {name}", ""]
    if len(tags) > 1:
        body.append(f"Filed under #{tags[-1]} for now.")
        body.append("")
    while sum(len(line) + 1 for line in body) < target_chars:
        kind = rng.random()
        if kind < 0.15:
            body += [f"## {rng.choice(WORDS).capitalize()} {rng.choice(WORDS)}", ""]
        elif kind < 0.3:
            body += [f"- {vocab.sentence(rng)}" for _ in range(rng.randint(2, 5))] + [""]
        elif kind < 0.35:
            body += ["```c", "#include <stdio.h>", "int main(void) { return 0; }", "```", ""]
        elif kind < 0.45:
            body += [f"See [[{rng.choice(WORDS).capitalize()} note]] and {vocab.sentence(rng)}", ""]
        else:
            body += [" ".join(vocab.sentence(rng) for _ in range(rng.randint(2, 6))), ""]
    return f"{folder}/{name}.md", "\n".join(front + body) + "\n"


def generate_vault(root: Path, notes: int, *, seed: int = 7, note_chars: int = 5000) -> int:
    """Write ``notes`` notes under ``root``; returns the total bytes written."""
    rng = random.Random(seed)
    vocab = _Vocabulary(rng)
    total = 0
    for i in range(notes):
        rel, text = _note(rng, vocab, i, int(note_chars * rng.uniform(0.5, 1.5)))
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        data = text.encode("utf-8")
        path.write_bytes(data)
        total += len(data)
    (root / ".obsidian").mkdir(parents=True, exist_ok=True)
    (root / ".obsidian" / "app.json").write_text("{}\n")
    return total
