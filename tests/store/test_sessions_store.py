"""The session store on real SQLite files: round trips, incremental writes, lookups, and
two processes writing at once."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from pydantic_ai.messages import ModelMessagesTypeAdapter

from co_kernel.store import SessionConflict, SessionLookupError, SessionStore, TurnRow

from ..support.histories import synthetic_history, synthetic_turn

ROOT = Path(__file__).resolve().parents[2]


def _json(messages: list) -> object:  # type: ignore[type-arg]
    return json.loads(ModelMessagesTypeAdapter.dump_json(messages))


def _rows(n: int) -> list[TurnRow]:
    return [TurnRow(prompt=f"prompt {i}: what next?", start=i * 2, requests=1) for i in range(n)]


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    s = SessionStore(tmp_path / "sessions.db")
    yield s  # type: ignore[misc]
    s.close()


def test_a_conversation_with_tool_calls_round_trips(store: SessionStore) -> None:
    history = synthetic_history(6, tool_every=2, tool_calls=2, output_chars=500)
    turns = [TurnRow(prompt=f"prompt {i}", start=None, input_tokens=10 * i) for i in range(6)]
    store.save("abc", history, turns, notebook="nb.ipynb", workspace="/w", model="compat:m")
    loaded = store.load("abc")
    assert _json(loaded.messages) == _json(history)
    assert [t.prompt for t in loaded.turns] == [t.prompt for t in turns]
    assert loaded.turns[3].input_tokens == 30
    assert loaded.info.notebook == "nb.ipynb"
    assert loaded.info.turns == 6 and loaded.info.messages == len(history)
    assert loaded.info.first_prompt == "prompt 0"


def test_writes_replace_only_from_the_given_points(store: SessionStore) -> None:
    first = synthetic_turn(0)
    store.save("s", first, _rows(1), workspace="/w")
    second = synthetic_turn(1)
    store.save("s", first + second, _rows(2), from_message=len(first), from_turn=1, workspace="/w")
    assert _json(store.load("s").messages) == _json(first + second)
    # Regenerating the second turn: its rows are replaced, the first stays.
    again = synthetic_turn(7)
    store.save("s", first + again, _rows(2), from_message=len(first), from_turn=1, workspace="/w")
    loaded = store.load("s")
    assert _json(loaded.messages) == _json(first + again)
    assert len(loaded.turns) == 2
    # A compaction rewrites everything from zero.
    store.save("s", again, _rows(1), workspace="/w")
    assert _json(store.load("s").messages) == _json(again)
    assert len(store.load("s").turns) == 1


def test_a_write_from_a_stale_revision_is_refused_and_changes_nothing(
    tmp_path: Path,
) -> None:
    path = tmp_path / "sessions.db"
    first, kept, lost = synthetic_turn(0), synthetic_turn(1), synthetic_turn(2)
    SessionStore(path).save("s", first, _rows(1), workspace="/w", kernel_id="k0")
    # Two kernels (two connections) resume the same session.
    left, right = SessionStore(path), SessionStore(path)
    seen = left.load("s").info.revision
    assert right.load("s").info.revision == seen
    after_left = left.save(
        "s",
        first + kept,
        _rows(2),
        from_message=len(first),
        from_turn=1,
        workspace="/w",
        kernel_id="left",
        expect=seen,
    )
    with pytest.raises(SessionConflict) as refused:
        right.save(
            "s",
            first + lost,
            _rows(2),
            from_message=len(first),
            from_turn=1,
            workspace="/w",
            kernel_id="right",
            expect=seen,
        )
    assert refused.value.kernel_id == "left"
    loaded = right.load("s")
    assert _json(loaded.messages) == _json(first + kept)
    assert loaded.info.revision == after_left
    # The kernel that wrote last goes on from its own revision.
    left.save("s", first, _rows(1), workspace="/w", kernel_id="left", expect=after_left)
    left.close()
    right.close()


def test_lookups_by_notebook_workspace_and_prefix(store: SessionStore) -> None:
    for sid, notebook in [("aaaa1111", "a.ipynb"), ("aaaa2222", "b.ipynb"), ("bbbb3333", None)]:
        store.save(sid, synthetic_turn(0), _rows(1), notebook=notebook, workspace="/w")
    assert [s.id for s in store.recent()] == ["bbbb3333", "aaaa2222", "aaaa1111"]
    assert store.count() == 3
    latest_a = store.latest(notebook="a.ipynb")
    assert latest_a is not None and latest_a.id == "aaaa1111"
    latest_w = store.latest(workspace="/w", exclude="bbbb3333")
    assert latest_w is not None and latest_w.id == "aaaa2222"
    assert store.latest(notebook="missing.ipynb") is None
    assert store.resolve("bbbb").id == "bbbb3333"
    with pytest.raises(SessionLookupError, match="more than one session"):
        store.resolve("aaaa")
    with pytest.raises(SessionLookupError, match="No saved session has the id 'cccc'"):
        store.resolve("cccc")
    assert store.ids() == ["bbbb3333", "aaaa2222", "aaaa1111"]


def test_the_database_is_in_wal_mode_and_holds_no_settings(
    store: SessionStore, tmp_path: Path
) -> None:
    store.save("s", synthetic_turn(0), _rows(1), workspace="/w")
    conn = sqlite3.connect(tmp_path / "sessions.db")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert tables == {"sessions", "messages", "turns"}
    columns = {r[1] for r in conn.execute("PRAGMA table_info(sessions)")}
    assert not any("key" in c or "secret" in c for c in columns)
    conn.close()


_WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from co_kernel.store import SessionStore, TurnRow
    from tests.support.histories import synthetic_turn

    path, sid, turns = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    store = SessionStore(path)
    history, rows = [], []
    for n in range(turns):
        start = len(history)
        history += synthetic_turn(n, tool_calls=n % 2, output_chars=2000, prefix=sid)
        rows.append(TurnRow(prompt=f"{sid} prompt {n}", start=start))
        store.save(sid, history, rows, from_message=start, from_turn=n, workspace="/w")
    print(len(history))
    """
)


def test_two_processes_write_at_once(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(path), sid, "150"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for sid in ("left", "right")
    ]
    outputs = [p.communicate(timeout=120) for p in procs]
    for proc, (_, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
    store = SessionStore(path)
    try:
        for sid, (out, _) in zip(("left", "right"), outputs, strict=True):
            loaded = store.load(sid)
            assert len(loaded.messages) == int(out.strip())
            assert len(loaded.turns) == 150
            assert loaded.turns[-1].prompt == f"{sid} prompt 149"
    finally:
        store.close()
