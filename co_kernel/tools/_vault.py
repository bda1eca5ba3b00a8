"""An Obsidian vault as the notes tools see it: titles, tags and text of every note.

The index keeps each note's lower-cased text in memory and refreshes only the notes whose
size or modification time changed since the last call, so a search over a large vault
costs a directory walk plus string scans, not 10,000 file reads.
"""

from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..exceptions import PathChanged, TextFileError
from ._json import as_object, is_list
from ._scope import SKIP_DIRS, Protection, Root, Scope, admit, read_bytes, walk
from ._textfile import open_root
from ._watch import DirWatcher, watch

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
_INLINE_CODE = re.compile(r"`[^`\n]*`")
# Obsidian tags: '#' then letters, digits, '_', '-', '/' (not all digits), at a line start or
# after whitespace. The pattern starts with the literal '#' so that `re` can skip to each
# '#' instead of testing a look-behind at every character of a 50 MB vault.
_TAG = re.compile(r"#([\w/-]+)")


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
    title_lower: str = ""
    """The title, lower-cased."""


BROAD_QUERY = 2000
"""Matches beyond which results are ranked by title hits only."""

_KEY = re.compile(r"([A-Za-z_][\w-]*):(?:[ \t]+(.*))?$")
_PLAIN = re.compile(r"[^\"'{}\[\]|>&*!%@`#]*")


def _scalar(value: str) -> str | None:
    """A plain or simply quoted YAML scalar, or None when YAML must decide."""
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        inner = value[1:-1]
        return inner if value[0] not in inner and "\\" not in inner else None
    return value if _PLAIN.fullmatch(value) and ": " not in value else None


def _simple_yaml(block: str) -> dict[str, Any] | None:
    """The flat ``key: value`` / ``key: [a, b]`` / ``key:`` + ``- item`` front matter that
    nearly every note has, parsed without YAML (a tenth of the cost on a cold index);
    None for anything else, which then goes to the YAML parser."""
    out: dict[str, Any] = {}
    items: list[str] | None = None
    for line in block.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("- ") and items is not None and line[0] in " \t-":
            item = _scalar(stripped[2:])
            if item is None:
                return None
            items.append(item)
            continue
        match = _KEY.match(line)
        if match is None:
            return None
        key, value = match.group(1), (match.group(2) or "").strip()
        if not value:
            items = out[key] = []
        elif value[0] == "[" and value[-1] == "]":
            parts = [_scalar(v) for v in value[1:-1].split(",") if v.strip()]
            if any(p is None for p in parts):
                return None
            out[key], items = parts, None
        else:
            scalar = _scalar(value)
            if scalar is None:
                return None
            out[key], items = scalar, None
    return out


def _front_matter(text: str) -> tuple[dict[str, Any], int]:
    match = _FRONT.match(text)
    if not match:
        return {}, 0
    simple = _simple_yaml(match.group(1))
    if simple is not None:
        return simple, match.end()
    import yaml

    try:
        data = yaml.load(match.group(1), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError:
        return {}, match.end()
    return (as_object(data) or {}), match.end()


def _as_tags(value: Any) -> list[str]:
    if isinstance(value, str):
        return [t for t in re.split(r"[,\s]+", value) if t]
    if is_list(value):
        return [str(t) for t in value if isinstance(t, str | int) and str(t).strip()]
    return []


def _clean_tag(tag: str) -> str | None:
    tag = tag.strip().lstrip("#").strip("/").casefold()
    if not tag or tag.replace("/", "").isdigit():
        return None
    return tag


def _strip_fences(text: str) -> str:
    """The text without fenced code blocks (their '#include' and '#!' are not tags).

    ``str.find`` loops: an anchored multi-line regex would test every line start.
    """
    out: list[str] = []
    pos = 0
    while True:
        starts = [
            i for i in (_line_start(text, "```", pos), _line_start(text, "~~~", pos)) if i >= 0
        ]
        if not starts:
            break
        start = min(starts)
        fence = text[start : start + 3]
        end = _line_start(text, fence, text.find("\n", start) + 1 or len(text))
        out.append(text[pos:start])
        if end < 0:  # unclosed: the rest is code
            return "".join(out)
        pos = text.find("\n", end)
        pos = len(text) if pos < 0 else pos
    out.append(text[pos:])
    return "".join(out)


def _line_start(text: str, token: str, pos: int) -> int:
    """Index of the next ``token`` at the start of a line, at or after ``pos``; -1 if none."""
    i = text.find(token, pos)
    while i > 0 and text[i - 1] != "\n":
        i = text.find(token, i + 1)
    return i


def parse_note(rel: str, text: str, stamp: tuple[int, int] = (0, 0)) -> Note:
    """Title, tags and search text of one note."""
    meta, body_start = _front_matter(text)
    tags: dict[str, None] = {}
    for key in ("tags", "tag"):
        for raw in _as_tags(meta.get(key)):
            if (tag := _clean_tag(raw)) is not None:
                tags[tag] = None
    body = text[body_start:]
    if "#" in body:
        if "```" in body or "~~~" in body:
            body = _strip_fences(body)
        if "`" in body:
            body = _INLINE_CODE.sub("", body)
        for match in _TAG.finditer(body):
            at = match.start()
            if at and not body[at - 1].isspace():
                continue  # a#b, URL fragments
            if (tag := _clean_tag(match.group(1))) is not None:
                tags[tag] = None
    title = meta.get("title")
    if not isinstance(title, str) or not title.strip():
        title = rel.rsplit("/", 1)[-1].removesuffix(".md")
    title = title.strip()
    return Note(rel, title, tuple(tags), text.lower(), stamp, title.lower())


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
    out: list[re.Pattern[str]] = []
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
    notes: dict[str, Note] = field(default_factory=dict[str, Note])
    """rel path -> note."""
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    """Sync tools run in worker threads; parallel calls must not refresh at once."""
    use_watcher: bool = True
    """Follow changes with inotify where available instead of stat'ing every file."""
    protection: Protection = field(default_factory=Protection)
    """Co's secret files and the hard-link rule: such notes are listed, never searched."""
    _ordered: list[Note] | None = field(default=None, repr=False)
    """The notes sorted by path, until the next change."""
    _watcher: DirWatcher | None = field(default=None, repr=False)
    """The vault's watcher, once the first walk started it."""

    def scope(self) -> Scope:
        return Scope(
            roots=(Root(self.root, "vault", frozenset({"read"})),),
            file_types=("*.md",),
            protection=self.protection,
        )

    def read(self, rel: str) -> bytes:
        """A note's bytes, opened by descriptor under the vault (see ``_scope.read_bytes``)."""
        scope = self.scope()
        return read_bytes(scope, scope.roots[0], rel, self.max_bytes, shown=rel)

    def refresh(self) -> list[Note]:
        """Bring the index up to date; returns all notes sorted by path.

        With a watcher, only the files it reports are read again; without one (or when
        it cannot tell), every file is stat'ed and the changed ones read again.
        """
        with self.lock:
            changed: set[str] | None = None
            if self._watcher is not None:
                changed = self._watcher.changes()
                if changed is None:  # folders changed: watch them afresh, then walk
                    self._watcher.close()
                    self._watcher = None
            if changed is None:
                if not self._in_place():
                    # Moved, or swapped for a link: keep what was indexed, look again next
                    # time (a watch set now could follow the link elsewhere).
                    return self._ordered or sorted(self.notes.values(), key=lambda n: n.rel)
                if self.use_watcher and self._watcher is None:
                    # Before the walk, so a change made during it is reported next time.
                    self._watcher = watch(str(self.root), SKIP_DIRS)
                    self.use_watcher = self._watcher is not None  # do not retry what failed
                    if self._watcher is not None and not self._in_place():
                        self._watcher.close()  # set up through a link swapped in meanwhile
                        self._watcher = None
                self._walk_all()
            else:
                for rel in changed:
                    self._reload(rel)
            if self._ordered is None:
                self._ordered = sorted(self.notes.values(), key=lambda n: n.rel)
            return self._ordered

    def _in_place(self) -> bool:
        """Whether the vault folder is where it was resolved, reached without links, and
        is what its path names now."""
        try:
            fd = open_root(self.root)
        except (OSError, TextFileError):
            return False
        try:
            return os.path.samestat(os.fstat(fd), os.stat(self.root))
        except OSError:
            return False
        finally:
            os.close(fd)

    def close(self) -> None:
        """Stop watching the vault."""
        with self.lock:
            if self._watcher is not None:
                self._watcher.close()
                self._watcher = None

    def _read(self, rel: str, stamp: tuple[int, int]) -> None:
        text = ""
        if stamp[0] <= self.max_bytes:
            try:
                text = self.read(rel).decode("utf-8", errors="replace")
            except (OSError, PathChanged):
                self.notes.pop(rel, None)
                self._ordered = None
                return
            except TextFileError:
                pass  # several hard links: listed, its text never searched
        self.notes[rel] = parse_note(rel, text, stamp)
        self._ordered = None

    def _reload(self, rel: str) -> None:
        """Re-read one file the watcher reported (changed, created, moved or deleted)."""
        scope = self.scope()
        found = admit(scope, scope.roots[0], rel)
        if found is None:
            if self.notes.pop(rel, None) is not None:
                self._ordered = None
            return
        rel, st = found
        self._read(rel, (st.st_size, st.st_mtime_ns))

    def _walk_all(self) -> None:
        seen: set[str] = set()
        scope = self.scope()
        for rel, st in walk(scope, scope.roots[0]):
            stamp = (st.st_size, st.st_mtime_ns)
            seen.add(rel)
            known = self.notes.get(rel)
            if known is None or known.stamp != stamp:
                self._read(rel, stamp)
        if len(seen) != len(self.notes):
            for gone in set(self.notes) - seen:
                del self.notes[gone]
            self._ordered = None

    def search(self, query: str, tag: str | None = None) -> list[tuple[Note, int]]:
        """Notes containing every keyword as a whole word (in text or title), best first.

        Returns (note, score) pairs: a keyword in the title weighs most, then how often
        the keywords occur (counted as substrings: a ranking signal, not a filter). Past
        BROAD_QUERY matches only titles rank: counting would rescan most of the vault to
        order results of a query too broad to be read anyway.
        """
        notes = self.refresh()
        if tag is not None:
            notes = [n for n in notes if tag_matches(n, tag)]
        words = [(w, word_tail(w)) for w in keywords(query)]
        # Substring tests first, one keyword at a time over what is left: most notes
        # fail the first, and the loop is a comprehension over C-speed `in`.
        for w, _ in words:
            notes = [n for n in notes if w in n.lower or w in n.title_lower]
        found: list[tuple[Note, int]] = []
        for note in notes:
            score = 0
            for w, tail in words:
                if w in note.title_lower and has_word(note.title_lower, w, tail):
                    score += 100
                elif not has_word(note.lower, w, tail):
                    break
            else:
                found.append((note, score))
        if len(found) <= BROAD_QUERY:
            found = [
                (note, score + sum(note.lower.count(w) for w, _ in words)) for note, score in found
            ]
        found.sort(key=lambda pair: (-pair[1], pair[0].rel))
        return found
