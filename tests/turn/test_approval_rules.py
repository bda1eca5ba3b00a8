"""Which shell commands run without asking, and how answers and decisions read."""

from __future__ import annotations

import pytest

from co_kernel.config import Settings
from co_kernel.frontend import parse_answer
from co_kernel.permissions import is_safe_command
from co_kernel.permissions._approval import (
    DENIED,
    TIMED_OUT,
    decision_label,
    denial_message,
    is_refusal,
    normalise_args,
)

SAFE = Settings().shell_safe_commands

SAFE_PREFIX_TABLE = [
    # plain read-only commands and their arguments
    ("ls", True),
    ("ls -la", True),
    ("  ls -la  ", True),
    ("pwd", True),
    ("cat notes.txt", True),
    ("head -n 5 data.csv", True),
    ("tail -n 20 log.txt", True),
    ("wc -l data.csv", True),
    ("echo hello world", True),
    ("grep -rn TODO .", True),
    ("find . -name '*.py'", True),
    ("git status", True),
    ("git log --oneline -5", True),
    ("git diff HEAD~1", True),
    ("git branch", True),
    ("git branch -a", True),
    ("python3 --version", True),
    ("du -sh .", True),
    ("echo $HOME", True),
    # chaining, pipes, redirection, substitution, several lines
    ("ls; rm -rf /", False),
    ("ls && rm x", False),
    ("ls || rm x", False),
    ("ls | sh", False),
    ("cat a | grep b", False),
    ("echo hi > file.txt", False),
    ("echo hi >> file.txt", False),
    ("cat < /etc/passwd", False),
    ("echo `rm x`", False),
    ("echo $(rm x)", False),
    ("echo ${PATH}", False),
    ("ls\nrm x", False),
    ("ls\rrm x", False),
    ("sleep 100 &", False),
    # not a safe prefix at all, or only a look-alike of one
    ("rm -rf build", False),
    ("touch marker", False),
    ("python3 script.py", False),
    ("lsblk", False),
    ("catalog", False),
    ("env rm -rf x", False),
    ("git push", False),
    ("git statusx", False),
    ("FOO=1 ls", False),
    ("", False),
    ("   ", False),
    # read-only commands turned into writers by an option
    ("find . -delete", False),
    ("find . -exec rm {} ;", False),
    ("find . -execdir rm {} +", False),
    ("find . -fprint out.txt", False),
    ("git diff --output=patch.txt", False),
    ("git log --output patch.txt", False),
    ("git branch -D main", False),
    ("git branch newbranch", False),
    ("date -s 2020-01-01", False),
    ("echo 'unbalanced", False),
]


@pytest.mark.parametrize(("command", "safe"), SAFE_PREFIX_TABLE)
def test_safe_prefix_table(command: str, safe: bool) -> None:
    assert is_safe_command(command, SAFE) is safe


def test_the_table_is_big_and_balanced() -> None:
    safe = sum(1 for _, ok in SAFE_PREFIX_TABLE if ok)
    assert len(SAFE_PREFIX_TABLE) >= 30
    assert safe >= 10 and len(SAFE_PREFIX_TABLE) - safe >= 20


def test_custom_prefixes_replace_the_defaults() -> None:
    assert is_safe_command("make test", ["make test"])
    assert not is_safe_command("make install", ["make test"])
    assert not is_safe_command("ls", ["make test"])
    assert not is_safe_command("ls", [])


@pytest.mark.parametrize(
    ("text", "decision"),
    [
        ("y", "approve"),
        ("Yes", "approve"),
        (" n ", "deny"),
        ("NO", "deny"),
        ("a", "approve_all"),
        ("all", "approve_all"),
        ("", None),
        ("maybe", None),
    ],
)
def test_typed_answers(text: str, decision: str | None) -> None:
    assert parse_answer(text) == decision


def test_decision_labels_and_refusals() -> None:
    assert decision_label("approve") == "approved"
    assert decision_label("approve_all") == "approved all"
    assert decision_label("deny") == DENIED
    assert decision_label("timed_out") == TIMED_OUT
    assert is_refusal(DENIED) and is_refusal(TIMED_OUT) and is_refusal("interrupted")
    assert not is_refusal("approved") and not is_refusal("yolo") and not is_refusal(None)
    assert "denied" in denial_message(DENIED)
    assert "within 30 s" in denial_message(TIMED_OUT, 30)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (None, {}),
        ("", {}),
        ('{"cmd": "ls"}', {"cmd": "ls"}),
        ({"cmd": "ls"}, {"cmd": "ls"}),
        ("not json", {"_raw": "not json"}),
        ("[1, 2]", {"_value": [1, 2]}),
    ],
)
def test_args_in_every_form(args: object, expected: dict) -> None:
    assert normalise_args(args) == expected  # type: ignore[arg-type]
