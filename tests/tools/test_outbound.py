"""The outbound ledger against hostile URLs (hypothesis): a secret Co read is marked however
the URL spells it, and only the exact URL the person gave counts as given."""

from __future__ import annotations

import base64
from urllib.parse import quote, quote_plus

from hypothesis import example, given
from hypothesis import strategies as st

from co_kernel.tools import OutboundLedger, describe_request

_SECRET_CHARS = st.characters(
    whitelist_categories=("Lu", "Ll", "Nd"), whitelist_characters="-_ .@:/", max_codepoint=0x7E
)
secrets = st.text(_SECRET_CHARS, min_size=9, max_size=40).filter(
    lambda s: sum(c.isalnum() for c in s) >= 6 and s.strip() == s
)
spellings = st.sampled_from(["plain", "quote", "quote_plus", "twice", "upper", "base64"])


def _spell(secret: str, how: str) -> str:
    if how == "quote":
        return quote(secret, safe="")
    if how == "quote_plus":
        return quote_plus(secret)
    if how == "twice":
        return quote(quote(secret, safe=""), safe="")
    if how == "upper":
        return quote(secret.upper(), safe="")
    if how == "base64":
        return base64.urlsafe_b64encode(secret.encode()).decode().rstrip("=")
    return secret


@given(
    secret=secrets,
    how=spellings,
    where=st.sampled_from(["query", "path", "fragment"]),
    noise=st.text(st.sampled_from("xyz0"), max_size=5),
)
# A secret with a space, form-encoded into a path: "+" there is a space to the server.
@example(secret="0000000 0", how="quote_plus", where="path", noise="")
@example(secret="tok en-1234", how="quote_plus", where="fragment", noise="x")
def test_a_secret_read_is_marked_however_the_url_spells_it(secret, how, where, noise):
    ledger = OutboundLedger()
    ledger.note_private("read_file", f"# Account\nThe key is {secret} (keep it safe).\n")
    spelled = _spell(secret, how)
    url = {
        "query": f"https://collector.example/c?{noise}d={spelled}&n=1",
        "path": f"https://collector.example/{noise}/{spelled}/x",
        "fragment": f"https://collector.example/c#{noise}{spelled}",
    }[where]
    detail, repeats = describe_request(ledger, url, url=True, intro="Asking:")
    assert repeats, detail
    assert "read_file" in detail


@given(path=st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), max_size=30))
def test_only_the_url_the_person_wrote_is_given(path):
    ledger = OutboundLedger()
    ledger.note_person_text("Summarise https://docs.example.org/guide?page=2 for me.")
    assert ledger.chosen("https://DOCS.example.org:443/guide?page=2#intro", turn=1)
    extended = f"https://docs.example.org/guide?page=2{quote(path)}"
    assert ledger.chosen(extended, turn=1) == (quote(path) == "")
    assert not ledger.chosen(f"https://docs.example.org.evil.example/guide?page=2{path}", turn=1)


def test_links_count_only_in_their_own_turn():
    ledger = OutboundLedger()
    ledger.note_links(["https://example.org/next"], turn=3)
    assert ledger.chosen("https://example.org/next", turn=3)
    assert not ledger.chosen("https://example.org/next", turn=4)


def test_text_with_nothing_private_has_no_marks():
    ledger = OutboundLedger()
    ledger.note_private("read_note", "Meeting on Monday about the kernel review.")
    detail, repeats = describe_request(
        ledger, "https://example.org/search?q=jupyter+widgets", url=True, intro="Asking:"
    )
    assert not repeats and "⟦" not in detail
    assert "q = jupyter widgets" in detail
