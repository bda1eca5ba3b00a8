"""Faults a kernel reports in words, never as internal errors, through a real kernel."""

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
    slept = kernel.execute("!sleep 5")
    assert "timed out after 1 s" in slept.stderr + str(slept.reply["content"])

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


def test_a_corrupt_session_store_is_set_aside_and_said_once(
    start_kernel, model_server, co_home: Path
) -> None:
    store = co_home / "data" / "sessions.db"
    store.parent.mkdir(parents=True)
    store.write_bytes(b"SQLite format 3\x00" + b"\xde\xad" * 2000)  # a header, then garbage
    kernel = start_kernel()
    model_server.extend([{"text": "First."}, {"text": "Second."}])

    first = kernel.execute("hello")
    second = kernel.execute("again")

    assert first.status == "ok" and "First." in first.markdown(), first.text()
    [aside] = list(store.parent.glob("sessions.db.corrupt-*"))
    assert str(aside) in first.text() and "fresh" in first.text()
    assert second.status == "ok" and "Second." in second.markdown()
    assert str(aside) not in second.text()
    for cell in (first, second):
        assert "Traceback" not in cell.text() + cell.stderr + cell.stdout
    listed = kernel.execute("%sessions")
    assert listed.status == "ok" and "hello" in listed.text()


def test_a_data_directory_that_is_a_file_gives_one_clear_line(start_kernel, co_home: Path) -> None:
    (co_home / "data").write_text("not a directory\n")
    kernel = start_kernel()

    result = kernel.execute("%sessions")

    assert result.status == "error"
    text = result.text().strip()  # displays, stdout, stderr and the error output
    assert "internal error" not in text.lower() and "Traceback" not in text
    assert str(co_home / "data") in text and "not a directory" in text.lower()
    assert len(text.splitlines()) == 1, text
