"""The session's extras: typed keys owned by their modules, shared safely between threads."""

from __future__ import annotations

import threading

from co_kernel.session_state import Extras, ExtrasKey


def test_keys_with_the_same_name_do_not_share_an_entry() -> None:
    extras = Extras()
    mine, theirs = ExtrasKey[list[str]]("cache"), ExtrasKey[dict[str, int]]("cache")
    extras[mine] = ["a"]
    assert extras.get(theirs) is None and theirs not in extras
    extras[theirs] = {"b": 1}
    assert extras[mine] == ["a"] and extras[theirs] == {"b": 1}
    assert extras.pop(mine) == ["a"] and extras.get(mine) is None
    assert extras.pop(mine) is None


def _race(extras: Extras, key: ExtrasKey[threading.Lock], threads: int) -> list[threading.Lock]:
    """What ``threads`` threads got asking for ``key`` at the same moment."""
    start = threading.Barrier(threads)
    got: list[threading.Lock] = []

    def ask() -> None:
        start.wait()
        got.append(extras.get_or_create(key, threading.Lock))

    running = [threading.Thread(target=ask) for _ in range(threads)]
    for thread in running:
        thread.start()
    for thread in running:
        thread.join()
    return got


def test_threads_asking_at_once_get_the_same_lock() -> None:
    # Tools run in worker threads; two first calls must share one client lock.
    for _ in range(50):
        extras, key = Extras(), ExtrasKey[threading.Lock]("lock")
        got = _race(extras, key, 8)
        assert len(got) == 8 and len({id(lock) for lock in got}) == 1
        assert list(extras.values()) == [got[0]]
