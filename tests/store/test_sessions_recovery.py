"""A corrupt or truncated sessions.db is set aside, not a traceback on every turn:
the store moves it to a new name, starts a fresh one, and says so once."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from co_kernel.store import SessionStore, TurnRow

from ..support.histories import synthetic_history


def _save(store: SessionStore, session_id: str, turns: int = 2) -> None:
    history = synthetic_history(turns, output_chars=3000)
    rows = [TurnRow(prompt=f"prompt {i}", start=i * 2) for i in range(turns)]
    store.save(session_id, history, rows, workspace="/w")


def _full_store(path: Path) -> bytes:
    store = SessionStore(path)
    for i in range(20):
        _save(store, f"session-{i:02d}")
    store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    store.close()
    return path.read_bytes()


def test_a_file_that_is_not_a_database_is_set_aside_once(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    path.write_bytes(b"this is not SQLite at all\n" * 100)
    store = SessionStore(path)

    _save(store, "fresh")

    [aside] = list(tmp_path.glob("sessions.db.corrupt-*"))
    assert aside.read_bytes() == b"this is not SQLite at all\n" * 100
    notice = store.take_notice()
    assert notice is not None and str(aside) in notice and "fresh" in notice
    assert store.take_notice() is None
    assert [s.id for s in store.recent()] == ["fresh"]
    store.close()


def test_a_healthy_store_says_nothing(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions.db")
    _save(store, "a")
    assert store.take_notice() is None
    assert list(tmp_path.glob("*.corrupt-*")) == []
    store.close()


@settings(max_examples=30, deadline=None)
@given(cut=st.floats(0.05, 0.95), garbage=st.binary(min_size=0, max_size=64), where=st.floats(0, 1))
def test_any_truncation_or_scribble_never_escapes(cut: float, garbage: bytes, where: float) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "sessions.db"
        whole = _full_store(path)
        broken = whole[: int(len(whole) * cut)]
        at = int(len(broken) * where)
        path.write_bytes(broken[:at] + garbage + broken[at + len(garbage) :])
        store = SessionStore(path)

        # Every operation a turn or a magic makes works, on the old data or a fresh store.
        store.recent()
        store.count()
        store.ids()
        store.latest(workspace="/w")
        for info in store.recent():
            store.load(info.id)
        _save(store, "after")
        assert "after" in [s.id for s in store.recent()]
        notice = store.take_notice()
        aside = list(Path(tmp).glob("sessions.db.corrupt-*"))
        assert (notice is None) == (aside == []), (notice, aside)
        store.close()
