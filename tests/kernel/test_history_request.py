"""history_request against real kernels: cells as typed, sessions across restarts, scopes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..support.kernel_harness import CoKernel

TYPED = ["What is 6*7?", "%help", "!echo hi", "%%python\nanswer = 6*7", "%python answer"]


def _history(kernel: CoKernel, **request: Any) -> list[list[Any]]:
    msg_id = kernel.kc.history(raw=True, output=False, **request)
    while True:
        reply = kernel.kc.get_shell_msg(timeout=60)
        if reply["parent_header"].get("msg_id") == msg_id:
            assert reply["msg_type"] == "history_reply" and reply["content"]["status"] == "ok"
            return reply["content"]["history"]


def _run_typed(kernel: CoKernel) -> None:
    for code in TYPED:
        result = kernel.execute(code, timeout=120)
        assert result.status == "ok", (code, result.text())


def test_cells_come_back_as_typed_across_a_restart(
    start_kernel, model_server, co_home: Path, tmp_path: Path
) -> None:
    model_server.extend([{"text": "42."}])
    ipython_dir = tmp_path / "ipython"
    kernel = start_kernel({"IPYTHONDIR": str(ipython_dir)})
    _run_typed(kernel)

    tail = _history(kernel, hist_access_type="tail", n=10)
    assert [h[2] for h in tail] == TYPED
    session = tail[0][0]
    assert [tuple(h[:2]) for h in tail] == [(session, n) for n in range(1, 6)]
    assert _history(kernel, hist_access_type="range", session=0, start=2, stop=4) == [
        [session, 2, "%help"],
        [session, 3, "!echo hi"],
    ]
    found = _history(kernel, hist_access_type="search", pattern="%*python*", unique=True)
    assert [h[2] for h in found] == ["%%python\nanswer = 6*7", "%python answer"]

    kernel.restart()
    assert kernel.execute("%python 1 + 1").status == "ok"
    tail = _history(kernel, hist_access_type="tail", n=3)
    assert [h[2] for h in tail] == ["%%python\nanswer = 6*7", "%python answer", "%python 1 + 1"]
    new_session = tail[-1][0]
    assert new_session > session and tail[-1][1] == 1, "a restart is a new session"
    assert _history(kernel, hist_access_type="range", session=0, start=1) == [
        [new_session, 1, "%python 1 + 1"]
    ]
    assert [h[2] for h in _history(kernel, hist_access_type="range", session=-1, start=1)] == TYPED

    # Co's own database, never IPython's.
    assert (co_home / "data" / "history.db").is_file()
    assert not list(ipython_dir.rglob("history.sqlite"))


def test_another_folder_or_notebook_sees_none_of_these_cells(
    start_kernel, model_server, tmp_path: Path
) -> None:
    first = start_kernel()
    assert first.execute("%python 'only here'").status == "ok"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    other_folder = start_kernel(cwd=elsewhere)
    assert _history(other_folder, hist_access_type="tail", n=10) == []
    assert _history(other_folder, hist_access_type="search", pattern="*only here*") == []
    # Same folder, another notebook (jupyter_server names it in JPY_SESSION_NAME).
    notebook = start_kernel({"JPY_SESSION_NAME": str(tmp_path / "other.ipynb")})
    assert _history(notebook, hist_access_type="tail", n=10) == []
    assert [h[2] for h in _history(first, hist_access_type="tail", n=10)] == ["%python 'only here'"]


def test_silent_cells_are_not_kept(kernel: CoKernel) -> None:
    kernel.kc.execute("%python 'silent'", silent=True)
    assert kernel.execute("%python 'kept'").status == "ok"
    assert [h[2] for h in _history(kernel, hist_access_type="tail", n=10)] == ["%python 'kept'"]
