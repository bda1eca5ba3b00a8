"""An Obsidian vault as the notes tools see it: titles, tags and text of every note.

The index keeps each note's lower-cased text in memory and refreshes only the notes whose
size or modification time changed since the last call, so a search over a large vault
costs a directory walk plus string scans, not 10,000 file reads.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._scope import Root, Scope, walk

__all__ = [
    "Note",
    "VaultIndex",
    "has_word",
    "keyword_patterns",
    "keywords",
    "parse_note",
    "tag_matches",
    "word_tail",
]

_FRONT = re.compile(r"\A---[ \t]*\r?\n(.*?)^(?:---|\.\.\.)[ \t]*$\r?\n?", re.S | re.M)
_FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.S | re.M)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
# Obsidian tags: '#' after whitespace or at a line start, letters/digits/_/-/ '/', not all digits.
_TAG = re.compile(r"(?<!\S)#([\w/-]+)")
_H1 = re.compile(r"^#[ \t]+(.+?)[ \t#]*$", re.M)


@dataclass
class Note:
    """One note of the vault."""

    rel: str
    """Path relative to the vault, with forward slashes."""
    title: str
    """Front-matter ``title``, else the file name without ``.md`` (as Obsidian shows it)."""
    tags: tuple[str, ...]
    """Front-matter and inline tags, lower-cased, without '#'."""
    lower: str
    """The whole text, lower-cased, for searching (line numbers match the file's)."""
    stamp: tuple[int, int]
    """(size, mtime_ns) when read."""


def _front_matter(text: str) -> tuple[dict[str, Any], int]:
    match = _FRONT.match(text)
    if not match:
        return {}, 0
    import yaml

    try:
        data = yaml.load(match.group(1), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError:
        return {}, match.end()
    return (data if isinstance(data, dict) else {}), match.end()


def _as_tags(value: Any) -> list[str]:
    if isinstance(value, str):
        return [t for t in re.split(r"[,\s]+", value) if t]
    if isinstance(value, list):
        return [str(t) for t in value if isinstance(t, str | int) and str(t).strip()]
    return []


def _clean_tag(tag: str) -> str | None:
    tag = tag.strip().lstrip("#").strip("/").casefold()
    if not tag or tag.replace("/", "").isdigit():
        return None
    return tag


def parse_note(rel: str, text: str, stamp: tuple[int, int] = (0, 0)) -> Note:
    """Title, tags and search text of one note."""
    meta, body_start = _front_matter(text)
    tags: dict[str, None] = {}
    for key in ("tags", "tag"):
        for raw in _as_tags(meta.get(key)):
            if (tag := _clean_tag(raw)) is not None:
                tags[tag] = None
    body = _INLINE_CODE.sub("", _FENCE.sub("", text[body_start:]))
    for raw in _TAG.findall(body):
        if (tag := _clean_tag(raw)) is not None:
            tags[tag] = None
    title = meta.get("title")
    if not isinstance(title, str) or not title.strip():
        title = rel.rsplit("/", 1)[-1].removesuffix(".md")
    return Note(rel, title.strip(), tuple(tags), text.lower(), stamp)


def tag_matches(note: Note, tag: str) -> bool:
    """Whether the note has ``tag`` or a nested tag under it (``project`` ~ ``project/alpha``)."""
    wanted = _clean_tag(tag)
    if wanted is None:
        return False
    return any(t == wanted or t.startswith(wanted + "/") for t in note.tags)


def keywords(query: str) -> list[str]:
    """The query's distinct keywords, lower-cased."""
    return list(dict.fromkeys(w for w in query.lower().split() if w))


def _is_word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def has_word(text: str, word: str, tail: re.Pattern[str] | None = None) -> bool:
    """Whether ``word`` occurs in ``text`` not flanked by letters, digits or '_'.

    Flanks are only tested beside a word character, so "c++" or ".env" match as written.
    ``tail`` (from :func:`word_tail`) finds candidates with the right flank already tested;
    the left one is tested here. Not a ``\\b...\\b`` regex: ``re`` gives a pattern that
    starts with an assertion no literal-prefix search, and crawls through 50 MB.
    """
    pattern = tail or word_tail(word)
    if not _is_word(word[0]):
        return pattern.search(text) is not None
    for match in pattern.finditer(text):
        i = match.start()
        if i == 0 or not _is_word(text[i - 1]):
            return True
    return False


def word_tail(word: str) -> re.Pattern[str]:
    """``word`` followed by no word character (when it ends in one): a literal-prefix regex."""
    return re.compile(re.escape(word) + (r"(?!\w)" if _is_word(word[-1]) else ""))


def keyword_patterns(query: str) -> list[re.Pattern[str]]:
    """Whole-word patterns of the query's keywords, for finding matching lines."""
    # The same rule as has_word: flanks are tested only beside word characters.
    out = []
    for w in keywords(query):
        left = r"(?<!\w)" if _is_word(w[0]) else ""
        right = r"(?!\w)" if _is_word(w[-1]) else ""
        out.append(re.compile(f"{left}{re.escape(w)}{right}"))
    return out


@dataclass
class VaultIndex:
    """Notes of one vault, refreshed incrementally on every :meth:`refresh`."""

    root: Path
    """The vault folder (symlinks resolved)."""
    max_bytes: int
    """Notes larger than this are listed but not searched."""
    notes: dict[str, Note] = field(default_factory=dict)
    """rel path -> note."""

    def scope(self) -> Scope:
        return Scope(roots=(Root(self.root, "vault", frozenset({"read"})),), file_types=("*.md",))

    def refresh(self) -> list[Note]:
        """Re-read changed notes, forget deleted ones; returns all notes sorted by path."""
        seen: set[str] = set()
        scope = self.scope()
        for real, rel in walk(scope, scope.roots[0]):
            try:
                st = os.stat(real)
            except OSError:
                continue
            stamp = (st.st_size, st.st_mtime_ns)
            seen.add(rel)
            known = self.notes.get(rel)
            if known is not None and known.stamp == stamp:
                continue
            text = ""
            if st.st_size <= self.max_bytes:
                try:
                    with open(real, encoding="utf-8", errors="replace") as handle:
                        text = handle.read()
                except OSError:
                    continue
            self.notes[rel] = parse_note(rel, text, stamp)
        for gone in set(self.notes) - seen:
            del self.notes[gone]
        return sorted(self.notes.values(), key=lambda n: n.rel)

    def search(self, query: str, tag: str | None = None) -> list[tuple[Note, int]]:
        """Notes containing every keyword as a whole word (in text or title), best first.

        Returns (note, score) pairs: keywords in the title weigh most, then how often the
        keywords occur (counted as substrings: a cheap ranking signal, not a filter).
        """
        notes = self.refresh()
        words = [(w, word_tail(w)) for w in keywords(query)]
        found: list[tuple[Note, int]] = []
        for note in notes:
            if tag is not None and not tag_matches(note, tag):
                continue
            text = note.lower
            title = note.title.lower()
            # Cheap substring tests first: most notes fail them.
            if not all(w in text or w in title for w, _ in words):
                continue
            in_title = [has_word(title, w, t) for w, t in words]
            if all(it or has_word(text, w, t) for it, (w, t) in zip(in_title, words, strict=True)):
                score = sum(
                    100 * it + text.count(w) for it, (w, _) in zip(in_title, words, strict=True)
                )
                found.append((note, score))
        found.sort(key=lambda pair: (-pair[1], pair[0].rel))
        return found
