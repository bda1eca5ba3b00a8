"""`Redactor.redact_literals`: what tool results pass before the model sees them. Known
secret values go; shapes that merely look like secrets (code, config templates) stay."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from co_kernel.telemetry import REDACTED, Redactor

_SECRET = st.from_regex(r"[A-Za-z0-9_\-.]{6,40}", fullmatch=True).filter(lambda s: s.strip())


@given(secret=_SECRET, before=st.text(max_size=60), after=st.text(max_size=60))
def test_a_known_value_never_survives(secret, before, after):
    out = Redactor([secret]).redact_literals(before + secret + after)
    assert secret not in out
    assert REDACTED in out


@given(secret=_SECRET, text=st.text(max_size=200))
def test_text_without_the_value_is_left_as_written(secret, text):
    if secret in text:
        return
    assert Redactor([secret]).redact_literals(text) == text


def test_code_that_looks_like_a_secret_stays_readable():
    code = 'api_key = os.environ["OPENAI_API_KEY"]\nheaders = {"Authorization": f"Bearer {tok}"}'
    redactor = Redactor(["sk-configured-0123456789"])
    assert redactor.redact_literals(code) == code
    assert redactor.redact(code) != code, "the full redactor (for stores and spans) is stricter"
