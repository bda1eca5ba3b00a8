"""What an outbound request may carry: the URLs the person chose and the private text read.

A model that has read a mail or a file and then reads a web page that tells it to can put
what it read into a URL. So Co sends a request without asking only to a URL the person
wrote in this conversation, a link that a search or a fetched page gave this turn, or a
domain of the person's own allowlist; everything else asks, and the card shows the URL
decoded with every part that repeats text Co read from a private source marked.

``OutboundLedger`` is the per-conversation record behind that (``deps.extras``, shared
with subagents): the URLs the person typed, the links of this turn, and the recent text
of private tool results. It is bounded: at most ``PRIVATE_CHARS`` characters of private
text (oldest dropped first) and ``MAX_URLS`` URLs of each kind.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections import OrderedDict, deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, unquote, unquote_plus, urlsplit

from ..inert import control_picture
from ..session_state import ExtrasKey
from ._ssrf import domain_in

if TYPE_CHECKING:
    from ..session_state import CoDeps

__all__ = [
    "MIN_REPEAT",
    "OutboundLedger",
    "Repeat",
    "describe_request",
    "normalise_url",
    "outbound_ledger",
    "result_text",
    "urls_in",
]

MIN_REPEAT = 8
"""Shortest run of characters that counts as repeating private text."""
PRIVATE_CHARS = 1_000_000
"""Private text kept for matching; older text is dropped first."""
MAX_URLS = 5_000
"""URLs kept per kind (given, linked this turn)."""
_BLOOM_BITS = 1 << 24
_BLOOM_MASK = _BLOOM_BITS - 1
_STRIDE = 2
_CHECKED_CHARS = 65_536
"""Characters of one outbound text that are matched; a longer one counts as repeating
private text (its card says so), since the rest went unchecked."""
_SHOWN_CHARS = 4_000
"""Longest arguments a card shows whole; past that, the marked parts with some context."""
_BASE64_TOKENS = 200
"""base64 tokens of one outbound text that are decoded and matched."""
_KEY = ExtrasKey["OutboundLedger"]("outbound")
_URL = re.compile(r"""https?://[^\s<>"'`|\\^{}\[\]()]+""", re.IGNORECASE)
_TRAILING = ".,;:!?*_~"
# base64url tokens, and standard ones (whose "/" and "+" a URL also uses as separators).
_BASE64 = re.compile(r"[A-Za-z0-9_-]{12,}={0,2}|[A-Za-z0-9+/]{12,}={0,2}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")
OPEN, CLOSE = "⟦", "⟧"
"""How a card marks a part that repeats private text."""


def _lower(text: str) -> str:
    """``text`` in lower case, one character for one (positions stay those of ``text``)."""
    low = text.lower()
    if len(low) == len(text):
        return low
    return "".join(c if len(c.lower()) != 1 else c.lower() for c in text)


def urls_in(text: str) -> list[str]:
    """The http(s) URLs written in ``text`` (Markdown, plain or a cell), in order."""
    return [m.group(0).rstrip(_TRAILING) for m in _URL.finditer(text)]


def normalise_url(url: str) -> str | None:
    """One spelling per URL: scheme and host lower case, default port and fragment
    dropped, an empty path as ``/``; None when it is not an http(s) URL."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").rstrip(".")
    if scheme not in ("http", "https") or not host:
        return None
    if ":" in host:
        host = f"[{host}]"
    if port is not None and port != (443 if scheme == "https" else 80):
        host = f"{host}:{port}"
    query = f"?{parts.query}" if parts.query else ""
    return f"{scheme}://{host}{parts.path or '/'}{query}"


@dataclass(frozen=True)
class Repeat:
    """A part of an outbound text that repeats private text Co read."""

    start: int
    """Where it starts in the text that was matched."""
    end: int
    """Where it ends (exclusive)."""
    source: str
    """The tool whose result held it (``read_file``, ``list_emails``, ...)."""


@dataclass
class OutboundLedger:
    """One conversation's record of chosen URLs and private text read."""

    given: OrderedDict[str, None] = field(default_factory=OrderedDict[str, None])
    """Normalised URLs the person wrote in a prompt, any turn so far."""
    linked: set[str] = field(default_factory=set[str])
    """Normalised links of search results and fetched pages of turn ``linked_turn``."""
    linked_turn: int = -1
    """The turn ``linked`` belongs to: links of another turn do not count."""
    person_domains: list[str] = field(default_factory=list[str])
    """``web_allowed_domains`` when the person's or the deployer's settings set it."""
    _private: deque[tuple[str, str]] = field(default_factory=deque[tuple[str, str]])
    """(source, lower-cased text) of private tool results, newest last."""
    _chars: int = 0
    _corpus: str | None = None
    """The private texts joined (built when matched, dropped when one is added)."""
    _starts: list[tuple[int, str]] = field(default_factory=list[tuple[int, str]])
    _grams: bytearray = field(default_factory=lambda: bytearray(_BLOOM_BITS // 8))
    """A Bloom filter of the ``MIN_REPEAT``-character windows of the private text: a
    window it has never seen is skipped without searching the text (2 MB, whatever the
    text)."""

    # -- what the person chose ---------------------------------------------------------

    def note_person_text(self, text: str) -> None:
        """Remember the URLs the person wrote (a prompt, as typed)."""
        for url in urls_in(text):
            self.note_chosen(url)

    def note_chosen(self, url: str) -> None:
        """Remember a URL the person chose: wrote, or approved on a card."""
        key = normalise_url(url)
        if key is not None:
            self.given[key] = None
            self.given.move_to_end(key)
        while len(self.given) > MAX_URLS:
            self.given.popitem(last=False)

    def note_links(self, urls: Iterable[str], turn: int) -> None:
        """Remember the links a search result or a fetched page of ``turn`` gave."""
        if turn != self.linked_turn:
            self.linked, self.linked_turn = set(), turn
        for url in urls:
            key = normalise_url(url)
            if key is not None and len(self.linked) < MAX_URLS:
                self.linked.add(key)

    def chosen(self, url: str, turn: int) -> bool:
        """Whether ``url`` is one the person wrote or a link of this turn."""
        key = normalise_url(url)
        if key is None:
            return False
        return key in self.given or (turn == self.linked_turn and key in self.linked)

    def allowlisted(self, url: str) -> bool:
        """Whether ``url``'s host is on the person's own domain allowlist."""
        try:
            host = (urlsplit(url.strip()).hostname or "").rstrip(".")
        except ValueError:
            return False
        return bool(host) and domain_in(host, self.person_domains)

    # -- what Co read --------------------------------------------------------------------

    def note_private(self, source: str, text: str) -> None:
        """Remember the text of a private tool result (a file, a mail, a note, ...)."""
        text = _lower(text[-PRIVATE_CHARS:])
        if len(text) < MIN_REPEAT:
            return
        self._private.append((source, text))
        self._chars += len(text)
        self._corpus = None
        if self._chars <= PRIVATE_CHARS:
            self._add_grams(text)
            return
        # Drop the oldest down to three quarters, so the filter is rebuilt now and then,
        # not on every result once the record is full.
        while self._chars > PRIVATE_CHARS * 3 // 4 and len(self._private) > 1:
            self._chars -= len(self._private.popleft()[1])
        self._grams = bytearray(_BLOOM_BITS // 8)
        for _source, kept in self._private:
            self._add_grams(kept)

    def _add_grams(self, text: str) -> None:
        # Every _STRIDE-th window: a repeat of MIN_REPEAT + _STRIDE - 1 characters or more
        # always holds one of them, at half the cost of indexing every window.
        grams, n = self._grams, MIN_REPEAT
        for i in range(0, len(text) - n + 1, _STRIDE):
            bit = hash(text[i : i + n]) & _BLOOM_MASK
            grams[bit >> 3] |= 1 << (bit & 7)

    def _may_hold(self, gram: str) -> bool:
        bit = hash(gram) & _BLOOM_MASK
        return bool(self._grams[bit >> 3] & (1 << (bit & 7)))

    def _joined(self) -> str:
        if self._corpus is None:
            pieces: list[str] = []
            starts: list[tuple[int, str]] = []
            at = 0
            for source, text in self._private:
                starts.append((at, source))
                pieces.append(text)
                at += len(text) + 1
            self._corpus, self._starts = "\x00".join(pieces), starts
        return self._corpus

    def _source_at(self, position: int) -> str:
        found = ""
        for start, source in self._starts:
            if start > position:
                break
            found = source
        return found

    def repeats(self, text: str) -> list[Repeat]:
        """The parts of ``text`` (at least ``MIN_REPEAT`` characters, any case) that repeat
        private text read in this conversation, longest first from the left."""
        corpus = self._joined()
        if not corpus:
            return []
        low = _lower(text[:_CHECKED_CHARS])
        found: list[Repeat] = []
        i = 0
        while i + MIN_REPEAT <= len(low):
            gram = low[i : i + MIN_REPEAT]
            at = corpus.find(gram) if self._may_hold(gram) else -1
            if at < 0 or not any(c.isalnum() for c in gram):
                i += 1
                continue
            start, end = i, i + MIN_REPEAT
            # The indexed window may sit inside the repeat: take in what precedes it.
            floor = found[-1].end if found else 0
            while start > floor and at > 0 and low[start - 1] == corpus[at - 1]:
                start, at = start - 1, at - 1
            while end < len(low):
                if corpus.startswith(low[start : end + 1], at):
                    end += 1
                    continue
                again = corpus.find(low[start : end + 1])
                if again < 0:
                    break
                at, end = again, end + 1
            found.append(Repeat(start, end, self._source_at(at)))
            i = end
        return found


def outbound_ledger(
    deps: CoDeps, *, fresh: bool = False, use: OutboundLedger | None = None
) -> OutboundLedger:
    """The conversation's ledger (created on first use; subagents share their caller's);
    ``fresh`` starts a new one (a new conversation), ``use`` makes ``use`` the session's
    (a session that carries on another's conversation)."""
    ledger = use if use is not None else deps.extras.get(_KEY)
    if fresh or ledger is None:
        ledger = OutboundLedger()
    deps.extras[_KEY] = ledger
    return ledger


# -- what a card shows ------------------------------------------------------------------


def _visible(text: str) -> str:
    """Control, zero-width and direction characters as marks, so the card shows them."""
    return _CONTROL.sub(lambda m: control_picture(m.group(0)), text)


def _marked(text: str, ledger: OutboundLedger) -> tuple[str, set[str]]:
    """``text`` with each part that repeats private text between ⟦ ⟧, and its sources."""
    repeats = ledger.repeats(text)
    out: list[str] = []
    at = 0
    for r in repeats:
        out += [_visible(text[at : r.start]), OPEN, _visible(text[r.start : r.end]), CLOSE]
        at = r.end
    out.append(_visible(text[at:]))
    return "".join(out), {r.source for r in repeats}


def _decoded_base64(token: str) -> list[str]:
    """What a base64 (or base64url) token decodes to where that is readable text, read
    from each of its first four characters (a prefix glued to it shifts the groups)."""
    found: list[str] = []
    for shift in range(4):
        body = token[shift:].rstrip("=")
        body = body[: len(body) - 1] if len(body) % 4 == 1 else body
        if len(body) < MIN_REPEAT:
            break
        padded = body + "=" * (-len(body) % 4)
        for decode in (base64.b64decode, base64.urlsafe_b64decode):
            try:
                raw = decode(padded)
            except (binascii.Error, ValueError):
                continue
            # A prefix glued on decodes to a few stray bytes before the readable part.
            text = raw.decode("utf-8", errors="replace")
            readable = sum(c.isprintable() and c != "\ufffd" for c in text)
            if readable >= max(MIN_REPEAT, 0.6 * len(text)):
                found.append(text)
                break
    return found


def _decoded_path(url: str) -> str:
    """The URL with its path and fragment percent-decoded (twice, for double encoding) and
    its query decoded as a form (``+`` a space)."""
    parts = urlsplit(url)
    head = f"{parts.scheme}://{parts.netloc}"
    path = unquote(unquote(parts.path))
    query = f"?{unquote_plus(unquote_plus(parts.query))}" if parts.query else ""
    fragment = f"#{unquote(unquote(parts.fragment))}" if parts.fragment else ""
    return head + path + query + fragment


def describe_request(
    ledger: OutboundLedger, text: str, *, url: bool, intro: str
) -> tuple[str, bool]:
    """The card's detail for an outbound request, and whether it repeats private text.

    ``text`` is the URL (``url``) or the JSON of a tool's arguments; a URL is shown decoded,
    with its query one parameter a line; every part that repeats text Co read from a
    private source is marked ⟦ ⟧, also inside base64 tokens.
    """
    lines = [intro, ""]
    sources: set[str] = set()
    shown = _decoded_path(text) if url else text
    marked, found = _marked(shown, ledger)
    sources |= found
    lines.append(marked if url or len(marked) <= _SHOWN_CHARS else _excerpts(marked))
    if url:
        try:
            query = parse_qsl(urlsplit(text).query, keep_blank_values=True)
        except ValueError:
            query = []
        # A server reads its path as it likes: "+" for a space, as a form's query does.
        parts = urlsplit(text)
        plus = f"{parts.path}#{parts.fragment}" if "+" in parts.path + parts.fragment else ""
        as_form, in_form = _marked(unquote_plus(unquote_plus(plus)), ledger)
        if in_form - sources:
            sources |= in_form
            lines += ["", f"Path and fragment with + read as a space: {as_form}"]
        if query:
            lines += ["", "Query, decoded:"]
            for name, value in query[:50]:
                name_shown, in_name = _marked(unquote_plus(name), ledger)
                value_shown, in_value = _marked(unquote_plus(value), ledger)
                sources |= in_name | in_value
                lines.append(f"  {name_shown} = {value_shown}")
    window = shown[:_CHECKED_CHARS]
    tokens = [m.group(0) for m in _BASE64.finditer(window)]
    tokens += [t for piece in re.split(r"[/+]", window) for t in _BASE64.findall(piece)]
    for token in list(dict.fromkeys(tokens))[:_BASE64_TOKENS]:
        for decoded in _decoded_base64(token):
            decoded_shown, in_decoded = _marked(decoded[:500], ledger)
            if in_decoded:
                sources |= in_decoded
                lines += ["", f"base64 {_visible(token[:60])} decodes to: {decoded_shown}"]
                break
    unchecked = len(shown) > _CHECKED_CHARS
    if unchecked:
        lines += [
            "",
            f"Only its first {_CHECKED_CHARS:,} characters were checked for private text.",
        ]
    if sources:
        lines += [
            "",
            f"{OPEN}…{CLOSE} repeats text Co read in this conversation from: "
            + ", ".join(sorted(sources))
            + ". Approve only if you mean to send it there.",
        ]
    return "\n".join(lines), bool(sources) or unchecked


def _excerpts(marked: str, context: int = 80) -> str:
    """The marked parts of a long text with some context each (the card lists the whole
    arguments already), or its start when nothing is marked."""
    spans = [(m.start(), m.end()) for m in re.finditer(f"{OPEN}[^{CLOSE}]*{CLOSE}", marked)]
    if not spans:
        return marked[:_SHOWN_CHARS] + " …"
    pieces: list[str] = []
    last = 0
    for start, end in spans[:20]:
        begin = max(start - context, last)
        pieces.append(("… " if begin > 0 else "") + marked[begin : end + context])
        last = end + context
    return "\n".join(pieces) + (" …" if last < len(marked) else "")


def result_text(value: Any) -> str:
    """Every string inside a tool result (a dict, a list, text), joined by new lines."""
    found: list[str] = []
    stack: list[Any] = [value]
    while stack and len(found) < 10_000:
        item = stack.pop()
        if isinstance(item, str):
            found.append(item)
        elif isinstance(item, dict):
            stack.extend(reversed(list(item.values())))  # pyright: ignore[reportUnknownArgumentType]
        elif isinstance(item, list | tuple):
            stack.extend(reversed(list(item)))  # pyright: ignore[reportUnknownArgumentType]
        elif item is not None and not isinstance(item, bool | int | float):
            content = getattr(item, "content", None)
            if content is not None and content is not item:
                stack.append(content)
    return "\n".join(found)
