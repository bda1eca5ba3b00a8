"""The cell history on real SQLite files: sessions, scopes and IPython's request semantics."""

from __future__ import annotations

import fnmatch
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from co_kernel.store import CellHistory

CELLS = ["What is 6*7?", "%status", "!ls -la", "%%python\n6*7", "%python 6*7", "Summarise {topic}."]


def _kernel(path: Path, scope: str = "/work/a.ipynb") -> CellHistory:
    return CellHistory(path, scope, kernel_id="k")


def test_cells_come_back_as_typed_with_their_session_and_line(tmp_path: Path) -> None:
    db = tmp_path / "history.db"
    first = _kernel(db)
    for line, cell in enumerate(CELLS[:3], start=1):
        first.record(line, cell)
    first.close()
    second = _kernel(db)  # the kernel restarted: a new session of the same notebook
    for line, cell in enumerate(CELLS[3:], start=1):
        second.record(line, cell)
    assert first.session is not None and second.session is not None
    assert second.session > first.session

    everything = second.request("tail", n=100)
    assert [e[2] for e in everything] == CELLS
    assert [e[:2] for e in everything[:3]] == [(first.session, n) for n in (1, 2, 3)]
    assert [e[:2] for e in everything[3:]] == [(second.session, n) for n in (1, 2, 3)]
    assert second.request("tail", n=2) == [
        (second.session, 2, "%python 6*7"),
        (second.session, 3, "Summarise {topic}."),
    ]
    assert len(second.request("tail")) == len(CELLS), "10 by default, like IPython"

    assert second.request("range", session=0, start=2, stop=3) == [
        (second.session, 2, "%python 6*7")
    ]
    assert [e[2] for e in second.request("range", session=-1, start=1)] == CELLS[:3]
    assert second.request("range", session=first.session, start=3) == [
        (first.session, 3, "!ls -la")
    ]
    assert second.request("range", session=-2, start=1) == []

    assert second.request("tail", n=1, output=True) == [
        (second.session, 3, ("Summarise {topic}.", None))
    ]
    assert second.request("nonsense") == []


def test_search_follows_ipython_glob_unique_and_n(tmp_path: Path) -> None:
    history = _kernel(tmp_path / "history.db")
    for line, cell in enumerate(["%%python\n6*7", "hello", "%%python\n6*7", "%%python\n1+1"], 1):
        history.record(line, cell)
    # A glob over the whole cell, as IPython's GLOB: "6*7" alone matches no cell here.
    assert history.request("search", pattern="6*7") == []
    assert [e[1] for e in history.request("search", pattern="%%python*")] == [1, 3, 4]
    # unique keeps each text's latest occurrence.
    assert [e[1:] for e in history.request("search", pattern="%%python*", unique=True)] == [
        (3, "%%python\n6*7"),
        (4, "%%python\n1+1"),
    ]
    assert [e[1] for e in history.request("search", pattern="%%python*", n=2)] == [3, 4]
    assert [e[1] for e in history.request("search", pattern="h?llo")] == [2]


def test_other_notebooks_and_folders_never_see_these_cells(tmp_path: Path) -> None:
    db = tmp_path / "history.db"
    mine = _kernel(db, "/work/a.ipynb")
    mine.record(1, "my secret plan")
    other = _kernel(db, "/work/b.ipynb")
    other.record(1, "theirs")
    assert [e[2] for e in other.request("tail", n=10)] == ["theirs"]
    assert other.request("search", pattern="*secret*") == []
    assert other.request("range", session=mine.session or 0, start=1) == []
    assert other.request("range", session=-1, start=1) == []


def test_an_unreadable_history_never_fails_a_cell(tmp_path: Path) -> None:
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("x")
    history = _kernel(not_a_folder / "history.db")
    history.record(1, "hello")  # logged, not raised
    assert history.request("tail", n=5) == []

    damaged = tmp_path / "damaged.db"
    damaged.write_bytes(b"this is not a database" * 100)
    fresh = _kernel(damaged)
    fresh.record(1, "hello")
    assert fresh.request("tail", n=5) == [(fresh.session, 1, "hello")]
    assert [p.name.split("-")[0] for p in tmp_path.glob("damaged.db.corrupt-*")] == [
        "damaged.db.corrupt"
    ]


_cell = st.text(st.sampled_from("ab*?%! \n6"), min_size=1, max_size=6)


@settings(max_examples=60, deadline=None)
@given(
    sessions=st.lists(st.lists(_cell, max_size=5), min_size=1, max_size=4),
    n=st.integers(0, 12),
    pattern=st.text(st.sampled_from("ab*?6"), min_size=1, max_size=4),
)
def test_tail_range_and_search_agree_with_a_plain_model(
    sessions: list[list[str]], n: int, pattern: str
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "history.db"
        kernels, typed = [], []
        for cells in sessions:
            kernel = _kernel(db)
            for line, cell in enumerate(cells, start=1):
                kernel.record(line, cell)
                typed.append((line, cell))
            kernels.append(kernel)
        current = kernels[-1]
        assert [e[1:] for e in current.request("tail", n=n)] == (typed[-n:] if n else [])
        assert [e[2] for e in current.request("range", session=0, start=1)] == sessions[-1]
        # fnmatch without its [...] classes is SQLite's GLOB for these characters.
        found = [e[2] for e in current.request("search", pattern=pattern)]
        assert found == [c for _, c in typed if fnmatch.fnmatchcase(c, pattern)]
        unique = current.request("search", pattern=pattern, unique=True)
        assert sorted(e[2] for e in unique) == sorted(set(found))
        for kernel in kernels:
            kernel.close()
