"""Faults that used to escape as internal errors (issue 22, class 9), through a real kernel."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from co_kernel.config import load_settings

BAD_BYTES = [b"\xff", b"\xc3(", b"\x80", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80"]


def test_a_settings_file_with_a_bad_byte_is_reported_and_the_rest_applies(
    start_kernel, model_server, co_home: Path, workspace: Path
) -> None:
    user_file = co_home / "config" / "settings.json"
    user_file.parent.mkdir(parents=True, exist_ok=True)
    user_file.write_bytes(b'{"personality": "caf\xe9"}')  # Latin-1, not UTF-8
    (workspace / ".co").mkdir()
    (workspace / ".co" / "settings.json").write_text(json.dumps({"sandbox_timeout": 1}))
    kernel = start_kernel()

    first = kernel.execute("!echo shell-ok")
    assert first.status == "ok", first.text()
    assert "shell-ok" in first.stdout
    assert str(user_file) in first.text() and "UTF-8" in first.text()
    assert "UnicodeDecodeError" not in first.text() + first.stderr

    status = kernel.execute("%status")
    assert status.status == "ok", status.text()
    assert str(user_file) in status.text()
    # The project file still applies.
    assert "Killed after 1 s" in kernel.execute("!sleep 5").stderr

    model_server.extend([{"text": "Fine."}])
    turn = kernel.execute("hi")
    assert turn.status == "ok" and turn.markdown().endswith("Fine.")


@settings(max_examples=25, deadline=None)
@given(
    good=st.text(st.characters(codec="utf-8", exclude_characters='"\\'), max_size=20),
    bad=st.sampled_from(BAD_BYTES),
    at=st.integers(0, 40),
)
def test_any_bad_byte_is_one_problem_naming_the_file(good: str, bad: bytes, at: int) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        (project / ".co").mkdir()
        body = json.dumps({"personality": good}).encode()
        at = min(at, len(body))
        path = project / ".co" / "settings.json"
        path.write_bytes(body[:at] + bad + body[at:])

        loaded = load_settings(project)

        mine = [p for p in loaded.problems if str(path) in p]
        assert len(mine) == 1 and "UTF-8" in mine[0], loaded.problems
